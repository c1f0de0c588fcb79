//! Holes found by attacking the running system (issue 13): an idempotency key scoped to the
//! concrete resource, cancel and fulfil that store their key, authorization before the
//! precondition.

use serde_json::json;

use bouquet_app::domain::Clock;
use system_tests::{by_vendor, fixture, ApiRequest, Outcome, PathParams, TestCloud};

#[tokio::test]
async fn the_same_key_on_two_orders_payments_pays_both() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [first, second] = cloud.bouquets(&vendor, ["10.00", "12.00"]).await;
    let a = cloud.reserved_order_id("alice", &[&first]).await;
    let b = cloud.reserved_order_id("alice", &[&second]).await;
    let paid_a = cloud.pay("alice", &a, "tok_visa", Some("K")).await;
    let paid_b = cloud.pay("alice", &b, "tok_visa", Some("K")).await;
    assert_eq!((paid_a.status, paid_b.status), (200, 200));
    assert_eq!(
        paid_b.body["orderId"],
        b.as_str(),
        "B's own answer, not A's"
    );
    assert_eq!(paid_b.header("idempotent-replayed"), None);
    assert_eq!(cloud.order_status(&b).await.as_deref(), Some("paid"));
    // The same key on the same order is still a replay.
    let again = cloud.pay("alice", &b, "tok_visa", Some("K")).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, paid_b.body);
}

#[tokio::test]
async fn a_retried_cancel_or_fulfil_gets_its_first_answer() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [first, second] = cloud.bouquets(&vendor, ["10.00", "12.00"]).await;
    let order = cloud.reserved_order_id("alice", &[&first]).await;
    let cancel = || {
        ApiRequest::fixture("cancel-order")
            .customer("alice")
            .order_id(&order)
            .idempotency_key("cancel-1")
    };
    let cancelled = cloud.call("cancel-order", cancel()).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.body["status"], "cancelled");
    let retried = cloud.call("cancel-order", cancel()).await;
    assert_eq!(
        retried.status, 200,
        "not 409 order.invalid_state: {}",
        retried.body
    );
    assert_eq!(retried.header("idempotent-replayed"), Some("true"));
    assert_eq!(retried.body, cancelled.body);

    let paid = cloud.reserved_order_id("bob", &[&second]).await;
    assert_eq!(cloud.pay_by_card("bob", &paid).await.status, 200);
    let fulfil = || {
        ApiRequest::fixture("fulfil-order")
            .vendor(&vendor)
            .order_id(&paid)
            .idempotency_key("fulfil-1")
    };
    let fulfilled = cloud.call("fulfil-order", fulfil()).await;
    assert_eq!(fulfilled.body["status"], "fulfilled", "{}", fulfilled.body);
    let retried = cloud.call("fulfil-order", fulfil()).await;
    assert_eq!(retried.status, 200, "{}", retried.body);
    assert_eq!(retried.header("idempotent-replayed"), Some("true"));
    // Without a key a second fulfil is the state machine's answer.
    let again = cloud
        .send(
            by_vendor("fulfil-order", &vendor)
                .order_id(&paid)
                .no_idempotency_key(),
        )
        .await;
    assert_eq!(again.status_and_code(), (409, Some("order.invalid_state")));
}

#[tokio::test]
async fn another_vendors_patch_is_forbidden_with_or_without_if_match() {
    let cloud = TestCloud::new().await;
    let owner = cloud.vendor("Bloom").await;
    let other = cloud.vendor("Petal").await;
    let bouquet = cloud.bouquet(&owner, "10.00").await;
    let patch = |vendor: &str| {
        ApiRequest::fixture("update-bouquet")
            .vendor(vendor)
            .bouquet_id(&bouquet)
            .json(json!({ "name": "Mine now" }))
    };
    let without = cloud
        .call("update-bouquet", patch(&other).without_header("if-match"))
        .await;
    assert_eq!(without.status_and_code(), (403, Some("auth.forbidden")));
    let with = cloud.call("update-bouquet", patch(&other)).await;
    assert_eq!(with.status_and_code(), (403, Some("auth.forbidden")));
    // Its own vendor without If-Match: the precondition is required.
    let own = cloud
        .call("update-bouquet", patch(&owner).without_header("if-match"))
        .await;
    assert_eq!(own.status_and_code(), (428, Some("precondition.failed")));
}

#[test]
fn the_topic_rules_take_the_vase_and_the_receipt_time_from_iot_not_the_payload() {
    let template = bouquet_template::Template::repository().unwrap();
    let rules: Vec<devstack::iot_rules::RuleSql> = template
        .resources_of_type("AWS::IoT::TopicRule")
        .map(|(_, rule)| {
            let sql = rule["Properties"]["TopicRulePayload"]["Sql"]
                .as_str()
                .unwrap();
            devstack::iot_rules::RuleSql::parse(sql).unwrap()
        })
        .collect();
    assert_eq!(rules.len(), 2);
    for (topic, payload) in [
        (
            "vases/01JF0000000000000000000001/heartbeat",
            json!({ "sentAt": "2026-12-03T08:00:00Z", "vaseId": "01JF0000000000000000000002", "receivedAt": 0, "messageType": "telemetry" }),
        ),
        (
            "vases/01JF0000000000000000000001/telemetry",
            json!({ "sentAt": "2026-12-03T08:00:00Z", "waterLevelPct": 80, "temperatureC": 18,
                    "humidityPct": 60, "lightLux": 800, "vaseId": "01JF0000000000000000000002",
                    "receivedAt": 0, "extra": "dropped" }),
        ),
    ] {
        let rule = rules
            .iter()
            .find(|r| devstack::iot_rules::topic_matches(r.topic_filter(), topic))
            .unwrap();
        let out = rule
            .apply(topic, payload.to_string().as_bytes(), 1_796_300_000_000)
            .unwrap();
        assert_eq!(
            out["vaseId"], "01JF0000000000000000000001",
            "{topic}: the topic decides"
        );
        assert_eq!(
            out["receivedAt"], 1_796_300_000_000i64,
            "{topic}: IoT's clock"
        );
        assert_eq!(out["sentAt"], "2026-12-03T08:00:00Z");
        assert!(
            out.get("extra").is_none(),
            "{topic}: only the listed fields pass"
        );
        assert_eq!(
            out["messageType"],
            topic.rsplit('/').next().unwrap(),
            "{topic}: the rule names the kind"
        );
    }
}

#[tokio::test]
async fn a_backdated_reading_cannot_make_a_week_old_bouquet_look_fresh() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
    let listed = cloud.clock.now();
    // Ideal conditions, stamped as if sent at listing, received a week later.
    let a_week_later = listed.plus(std::time::Duration::from_secs(7 * 24 * 3600));
    let backdated = system_tests::vases::rule_output(
        &vase,
        "telemetry",
        json!({ "sentAt": listed.to_rfc3339(), "waterLevelPct": 80, "temperatureC": 18, "humidityPct": 60, "lightLux": 800 }),
        a_week_later,
    );
    cloud.send_vase_messages(&[backdated]).await;
    let shown = cloud
        .send(fixture("get-bouquet").bouquet_id(&bouquet))
        .await;
    assert_eq!(shown.body["freshness"], 50, "aged a week: {}", shown.body);
}

#[tokio::test]
async fn twenty_concurrent_reservations_by_one_customer_stop_at_the_cap() {
    let config = bouquet_app::Config {
        max_holds_per_customer: 3,
        ..bouquet_app::Config::default()
    };
    let cloud = TestCloud::with_config(config).await;
    let vendor = cloud.vendor("Bloom").await;
    let mut bouquets = Vec::new();
    for _ in 0..21 {
        bouquets.push(cloud.bouquet(&vendor, "10.00").await);
    }
    let answers = futures::future::join_all(bouquets[..20].iter().map(|b| {
        let cloud = &cloud;
        async move { cloud.reserve("greedy", &[b.as_str()]).await }
    }))
    .await;
    let created: Vec<String> = answers
        .iter()
        .filter(|a| a.status == 201)
        .map(|a| a.body["orderId"].as_str().unwrap().to_owned())
        .collect();
    let limited = answers
        .iter()
        .filter(|a| a.status_and_code() == (409, Some("reservation.limit")))
        .count();
    assert_eq!(
        (created.len(), limited),
        (3, 17),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    // Another customer is not affected; a cancelled order frees a place.
    assert_eq!(
        cloud
            .reserve("other", &[bouquets[20].as_str()])
            .await
            .status,
        201
    );
    let cancel = ApiRequest::fixture("cancel-order")
        .customer("greedy")
        .order_id(&created[0])
        .no_idempotency_key();
    assert_eq!(cloud.call("cancel-order", cancel).await.status, 200);
    let freed = bouquets
        .iter()
        .find(|b| {
            !answers
                .iter()
                .any(|a| a.status == 201 && a.body["lines"].to_string().contains(b.as_str()))
        })
        .unwrap();
    let again = cloud.reserve("greedy", &[freed.as_str()]).await;
    assert_eq!(again.status, 201, "{}", again.body);
    // A paid order no longer counts either.
    let order = again.body["orderId"].as_str().unwrap();
    assert_eq!(cloud.pay_by_card("greedy", order).await.status, 200);
    let next = bouquets
        .iter()
        .find(|b| {
            *b != freed
                && !answers
                    .iter()
                    .any(|a| a.status == 201 && a.body["lines"].to_string().contains(b.as_str()))
        })
        .unwrap();
    assert_eq!(cloud.reserve("greedy", &[next.as_str()]).await.status, 201);
}

#[tokio::test]
async fn a_stuck_sweeper_shard_still_expires_the_order_behind_300_failing_items() {
    use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let order = cloud.reserved_order_id("alice", &[&bouquet]).await;
    let item = cloud
        .items_of("order")
        .await
        .into_iter()
        .next()
        .expect("the order item");
    let shard = item["expiryShard"].clone();
    // 300 index entries in the same shard, due before it, that can never be swept (not
    // readable as orders).
    let stuck: Vec<WriteRequest> = (0..300)
        .map(|i| {
            let put = PutRequest::builder()
                .item(
                    "pk",
                    AttributeValue::S(format!("ORDER#{}", ulid::Ulid::new())),
                )
                .item("sk", AttributeValue::S("ORDER".into()))
                .item("entity", AttributeValue::S("order".into()))
                .item("expiryShard", shard.clone())
                .item("dueAt", AttributeValue::N((1_000 + i).to_string()))
                .build()
                .unwrap();
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    for chunk in stuck.chunks(25) {
        cloud
            .client
            .batch_write_item()
            .request_items(&cloud.table, chunk.to_vec())
            .send()
            .await
            .unwrap();
    }
    cloud.clock.advance(std::time::Duration::from_secs(16 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["failed"], 300, "{report}");
    assert_eq!(report["expired"], 1, "{report}");
    assert_eq!(cloud.order_status(&order).await.as_deref(), Some("expired"));
}

#[tokio::test]
async fn a_bouquets_events_have_strictly_increasing_versions_freshness_included() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
    let at = |minutes: u64| {
        cloud
            .clock
            .now()
            .plus(std::time::Duration::from_secs(minutes * 60))
    };
    let reading =
        |minutes: u64, water: f64| system_tests::vases::reading(&vase, at(minutes), water, 18.0);
    // A first score (news), a small move (not news), a big drop (news).
    cloud.send_vase_messages(&[reading(1, 80.0)]).await;
    cloud.send_vase_messages(&[reading(2, 75.0)]).await;
    cloud.send_vase_messages(&[reading(3, 10.0)]).await;
    // A vendor edit at the current version, then another score that is news.
    let current = cloud
        .send(fixture("get-bouquet").bouquet_id(&bouquet))
        .await;
    let version = current.body["version"].as_u64().unwrap();
    let patch = ApiRequest::fixture("update-bouquet")
        .vendor(&vendor)
        .bouquet_id(&bouquet)
        .header("if-match", &format!("\"{version}\""))
        .json(json!({ "name": "Renamed" }));
    assert_eq!(cloud.call("update-bouquet", patch).await.status, 200);
    cloud.send_vase_messages(&[reading(4, 80.0)]).await;

    let mut versions: Vec<(u64, String)> = cloud
        .items_of("event")
        .await
        .iter()
        .filter(|e| e["aggregateId"].as_s().ok() == Some(&bouquet))
        .map(|e| {
            (
                e["aggregateVersion"].as_n().unwrap().parse().unwrap(),
                e["eventName"].as_s().unwrap().clone(),
            )
        })
        .collect();
    versions.sort();
    let names: Vec<&str> = versions.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "BouquetListed",
            "BouquetFreshnessChanged",
            "BouquetFreshnessChanged",
            "BouquetChanged",
            "BouquetFreshnessChanged"
        ]
    );
    let numbers: Vec<u64> = versions.iter().map(|(v, _)| *v).collect();
    assert_eq!(
        numbers,
        [1, 2, 3, 4, 5],
        "one sequence per bouquet, no collision"
    );
}
