//! The local DynamoDB engine (`localstack/dynamodb-engine`) keeps the DynamoDB semantics the
//! marketplace relies on (docs/local-cloud.md, "What differs from AWS"): each test here is a
//! row of that table. On a table of their own, not the template's, so each shows one rule.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    Projection, ProjectionType, Put, ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
    StreamSpecification, StreamViewType, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use system_tests::emulator_sdk_config;

struct EngineTable {
    dynamodb: Client,
    streams: aws_sdk_dynamodbstreams::Client,
    name: String,
    stream_arn: String,
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

impl EngineTable {
    /// `pk` (hash) and a `by-owner` index on `owner` and `at`, its stream with both images.
    async fn new() -> Self {
        let sdk = emulator_sdk_config().await;
        let dynamodb = Client::new(&sdk);
        let streams = aws_sdk_dynamodbstreams::Client::new(&sdk);
        let name = format!("engine-{}", ulid::Ulid::new().to_string().to_lowercase());
        let attribute = |name: &str, kind| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(kind)
                .build()
                .unwrap()
        };
        let key = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .unwrap()
        };
        let created = dynamodb
            .create_table()
            .table_name(&name)
            .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
            .attribute_definitions(attribute("pk", ScalarAttributeType::S))
            .attribute_definitions(attribute("owner", ScalarAttributeType::S))
            .attribute_definitions(attribute("at", ScalarAttributeType::N))
            .key_schema(key("pk", KeyType::Hash))
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name("by-owner")
                    .key_schema(key("owner", KeyType::Hash))
                    .key_schema(key("at", KeyType::Range))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::KeysOnly)
                            .build(),
                    )
                    .build()
                    .unwrap(),
            )
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .expect("the DynamoDB engine answers (./localstack/test.sh starts it)");
        let stream_arn = created
            .table_description()
            .and_then(|t| t.latest_stream_arn())
            .expect("a stream")
            .to_owned();
        Self {
            dynamodb,
            streams,
            name,
            stream_arn,
        }
    }

    fn claim(&self, pk: &str, n: &str) -> TransactWriteItem {
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(&self.name)
                    .item("pk", s(pk))
                    .item("n", AttributeValue::N(n.to_owned()))
                    .condition_expression("attribute_not_exists(pk)")
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .unwrap(),
            )
            .build()
    }

    async fn n(&self, pk: &str) -> Option<String> {
        let item = self
            .dynamodb
            .get_item()
            .table_name(&self.name)
            .key("pk", s(pk))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item;
        item.and_then(|i| i.get("n").and_then(|n| n.as_n().ok().cloned()))
    }

    /// Every stream record so far, in shard order: (event name, keys, sequence number).
    async fn records(&self) -> Vec<aws_sdk_dynamodbstreams::types::Record> {
        let description = self
            .streams
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .unwrap();
        let mut records = Vec::new();
        for shard in description.stream_description().unwrap().shards() {
            let mut iterator = self
                .streams
                .get_shard_iterator()
                .stream_arn(&self.stream_arn)
                .shard_id(shard.shard_id().unwrap())
                .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::TrimHorizon)
                .send()
                .await
                .unwrap()
                .shard_iterator;
            while let Some(current) = iterator {
                let page = self
                    .streams
                    .get_records()
                    .shard_iterator(current)
                    .send()
                    .await
                    .unwrap();
                if page.records().is_empty() {
                    break;
                }
                records.extend(page.records().iter().cloned());
                iterator = page.next_shard_iterator;
            }
        }
        records
    }
}

#[tokio::test]
async fn a_cancelled_transaction_writes_nothing_and_says_which_condition_failed_with_the_item() {
    let table = EngineTable::new().await;
    table
        .dynamodb
        .transact_write_items()
        .transact_items(table.claim("taken", "1"))
        .send()
        .await
        .unwrap();
    let cancelled = table
        .dynamodb
        .transact_write_items()
        .transact_items(table.claim("free", "2"))
        .transact_items(table.claim("taken", "2"))
        .send()
        .await
        .expect_err("the second condition fails");
    let cancelled = cancelled.into_service_error();
    let aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(
        cancelled,
    ) = cancelled
    else {
        panic!("not TransactionCanceledException: {cancelled:?}");
    };
    let reasons: Vec<(Option<&str>, Option<String>)> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|r| {
            (
                r.code(),
                r.item()
                    .and_then(|i| i.get("n"))
                    .and_then(|n| n.as_n().ok().cloned()),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            (Some("None"), None),
            (Some("ConditionalCheckFailed"), Some("1".to_owned()))
        ]
    );
    assert_eq!(table.n("free").await, None, "all or nothing");
    assert_eq!(table.n("taken").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_retried_client_request_token_succeeds_without_writing_again_and_a_changed_request_is_refused(
) {
    let table = EngineTable::new().await;
    // A token is the account's for 10 minutes, whatever the table: one of this run's own
    // (at most 36 characters, as DynamoDB and the engine check).
    let token = ulid::Ulid::new().to_string();
    let claim = |n: &str| {
        table
            .dynamodb
            .transact_write_items()
            .client_request_token(&token)
            .transact_items(table.claim("a", n))
            .send()
    };
    claim("1").await.unwrap();
    // The SDK's retry of a committed transaction whose answer was lost: not cancelled by its
    // own first attempt.
    claim("1")
        .await
        .expect("the same token and request succeed again");
    let changed = claim("2")
        .await
        .expect_err("the same token, another request");
    assert_eq!(
        changed.into_service_error().code(),
        Some("IdempotentParameterMismatchException")
    );
    assert_eq!(table.n("a").await.as_deref(), Some("1"));
    let inserts = table
        .records()
        .await
        .iter()
        .filter(|r| r.event_name().map(|e| e.as_str()) == Some("INSERT"))
        .count();
    assert_eq!(inserts, 1, "one write, one stream record");
}

#[tokio::test]
async fn many_conditional_writes_on_one_key_at_once_have_exactly_one_winner() {
    let table = EngineTable::new().await;
    let attempts = (0..40).map(|i| {
        let (dynamodb, name) = (table.dynamodb.clone(), table.name.clone());
        tokio::spawn(async move {
            dynamodb
                .put_item()
                .table_name(name)
                .item("pk", s("bouquet-1"))
                .item("n", AttributeValue::N(i.to_string()))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await
        })
    });
    let mut won = 0;
    let mut refused = 0;
    for attempt in futures::future::join_all(attempts).await {
        match attempt.unwrap() {
            Ok(_) => won += 1,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                refused += 1
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!((won, refused), (1, 39));
}

#[tokio::test]
async fn the_stream_has_one_record_per_item_written_with_both_images_in_numeric_sequence() {
    let table = EngineTable::new().await;
    table
        .dynamodb
        .put_item()
        .table_name(&table.name)
        .item("pk", s("a"))
        .item("n", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    // An update inside a transaction beside a new item: one MODIFY and one INSERT.
    table
        .dynamodb
        .transact_write_items()
        .transact_items(
            TransactWriteItem::builder()
                .update(
                    Update::builder()
                        .table_name(&table.name)
                        .key("pk", s("a"))
                        .update_expression("SET n = :n")
                        .expression_attribute_values(":n", AttributeValue::N("2".into()))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .transact_items(table.claim("b", "1"))
        .send()
        .await
        .unwrap();
    let records = table.records().await;
    let events: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            let keys = r.dynamodb().and_then(|d| d.keys()).unwrap();
            let pk = keys["pk"].as_s().unwrap().clone();
            (r.event_name().unwrap().as_str().to_owned(), pk)
        })
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], ("INSERT".to_owned(), "a".to_owned()));
    assert!(events[1..].contains(&("MODIFY".to_owned(), "a".to_owned())));
    assert!(events[1..].contains(&("INSERT".to_owned(), "b".to_owned())));
    let modify = records
        .iter()
        .find(|r| r.event_name().map(|e| e.as_str()) == Some("MODIFY"))
        .and_then(|r| r.dynamodb())
        .unwrap();
    let n = |image: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>| {
        image
            .and_then(|i| i.get("n"))
            .and_then(|n| n.as_n().ok().cloned())
    };
    assert_eq!(
        (n(modify.old_image()), n(modify.new_image())),
        (Some("1".to_owned()), Some("2".to_owned()))
    );
    let sequence: Vec<u128> = records
        .iter()
        .map(|r| {
            r.dynamodb()
                .and_then(|d| d.sequence_number())
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(sequence.windows(2).all(|w| w[0] < w[1]), "{sequence:?}");
}

#[tokio::test]
async fn an_index_query_reads_only_its_partition_page_by_page_in_key_order() {
    let table = EngineTable::new().await;
    for (owner, count) in [("shop-1", 23), ("shop-2", 5)] {
        for at in 0..count {
            table
                .dynamodb
                .put_item()
                .table_name(&table.name)
                .item("pk", s(&format!("{owner}#{at}")))
                .item("owner", s(owner))
                .item("at", AttributeValue::N((1000 - at).to_string()))
                .send()
                .await
                .unwrap();
        }
    }
    let mut seen = Vec::new();
    let mut start = None;
    let mut pages = 0;
    loop {
        let page = table
            .dynamodb
            .query()
            .table_name(&table.name)
            .index_name("by-owner")
            .key_condition_expression("#o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s("shop-1"))
            .limit(7)
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        pages += 1;
        assert!(page.count() <= 7);
        assert_eq!(
            page.scanned_count(),
            page.count(),
            "reads only the partition"
        );
        seen.extend(
            page.items()
                .iter()
                .map(|i| i["at"].as_n().unwrap().parse::<i64>().unwrap()),
        );
        start = page.last_evaluated_key;
        if start.is_none() {
            break;
        }
    }
    let expected: Vec<i64> = (978..=1000).collect();
    assert_eq!(
        seen, expected,
        "every item once, ascending by the index's sort key"
    );
    assert!((4..=5).contains(&pages), "{pages} pages");
}
