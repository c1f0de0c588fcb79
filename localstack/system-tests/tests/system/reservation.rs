//! docs/architecture.md, invariants 1-3: one transaction per reservation, a bouquet is held by
//! at most one order, expired holds can be taken, idempotency keys run a request once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use system_tests::{by_customer, ApiRequest, Outcome, PathParams, TestCloud};

fn order_request(customer: &str, bouquets: &[&str]) -> ApiRequest {
    ApiRequest::fixture("create-order")
        .customer(customer)
        .json(json!({ "bouquetIds": bouquets }))
        .no_idempotency_key()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_customers_racing_for_one_bouquet_get_one_order() {
    let cloud = Arc::new(TestCloud::new().await);
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let racers = (0..50).map(|i| {
        let cloud = cloud.clone();
        let bouquet = bouquet.clone();
        tokio::spawn(async move {
            cloud
                .call(
                    "create-order",
                    order_request(&format!("customer-{i}"), &[&bouquet]),
                )
                .await
        })
    });
    let responses: Vec<_> = futures::future::join_all(racers)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    let created = responses.iter().filter(|r| r.status == 201).count();
    let unavailable = responses
        .iter()
        .filter(|r| r.status == 409 && r.code() == Some("bouquet.unavailable"))
        .count();
    let statuses: Vec<_> = responses
        .iter()
        .map(|r| (r.status, r.code().map(str::to_owned)))
        .collect();
    assert_eq!((created, unavailable), (1, 49), "{statuses:?}");
    for refused in responses.iter().filter(|r| r.status == 409) {
        assert_eq!(
            refused.body["bouquetIds"],
            json!([bouquet]),
            "the refusal names the bouquet"
        );
    }
    assert_eq!(
        cloud.items_of("order").await.len(),
        1,
        "exactly one order item"
    );
    assert_eq!(
        cloud
            .items_of("event")
            .await
            .iter()
            .filter(|e| e["eventName"] == AttributeValue::S("OrderReserved".into()))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_identical_requests_with_one_key_create_one_order() {
    let cloud = Arc::new(TestCloud::new().await);
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let request = order_request("customer-1", &[&bouquet]).idempotency_key("checkout-7f3a");
    let racers = (0..20).map(|_| {
        let cloud = cloud.clone();
        let request = request.clone();
        tokio::spawn(async move { cloud.call("create-order", request).await })
    });
    let responses: Vec<_> = futures::future::join_all(racers)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .collect();
    let orders = cloud.items_of("order").await;
    assert_eq!(orders.len(), 1, "exactly one order");
    let order_id = match &orders[0]["orderId"] {
        AttributeValue::S(id) => id.clone(),
        other => panic!("{other:?}"),
    };
    let mut originals = 0;
    for response in &responses {
        match response.status_and_code() {
            (201, None) => {
                assert_eq!(
                    response.body["orderId"],
                    order_id.as_str(),
                    "every 201 is the one order"
                );
                if response.header("idempotent-replayed").is_none() {
                    originals += 1;
                }
            }
            (409, Some("idempotency.in_progress")) => {}
            other => panic!("unexpected answer {other:?}: {}", response.body),
        }
    }
    assert_eq!(
        originals, 1,
        "one original answer, the rest replays or in-progress"
    );
}

#[tokio::test]
async fn a_replay_returns_the_stored_answer_and_a_reused_key_is_refused() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [a, b] = cloud.bouquets(&vendor, ["10.00", "12.00"]).await;
    // `customer` reserves `bouquet` under the idempotency key every request here reuses.
    let reserve_under_k1 = |customer: &'static str, bouquet: &str| {
        cloud.call(
            "create-order",
            order_request(customer, &[bouquet]).idempotency_key("k-1"),
        )
    };
    let first = reserve_under_k1("customer-1", &a).await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("idempotent-replayed"), None);

    // Same key, same body (formatted differently): the stored answer, marked as a replay.
    let replay = cloud
        .call(
            "create-order",
            order_request("customer-1", &[&a])
                .idempotency_key("k-1")
                .raw_body(&format!("{{ \"bouquetIds\" : [ \"{a}\" ] }}")),
        )
        .await;
    assert_eq!(
        (replay.status, replay.header("idempotent-replayed")),
        (201, Some("true"))
    );
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.header("location"), first.header("location"));

    // Same key, different body: 422, and nothing is written.
    let before = cloud.items().await;
    let reused = reserve_under_k1("customer-1", &b).await;
    assert_eq!(
        reused.status_and_code(),
        (422, Some("idempotency.key_reused"))
    );
    assert_eq!(cloud.items().await, before);

    // Keys are scoped to the caller: another customer's "k-1" is a new request.
    let other = reserve_under_k1("customer-2", &b).await;
    assert_eq!(other.status, 201, "{}", other.body);

    // Records expire after 24 h: then the key is new again.
    cloud.clock.advance(Duration::from_secs(24 * 3600 + 1));
    let c = cloud.bouquet(&vendor, "9.00").await;
    let fresh = reserve_under_k1("customer-1", &c).await;
    assert_eq!(
        (fresh.status, fresh.header("idempotent-replayed")),
        (201, None),
        "{}",
        fresh.body
    );
}

#[tokio::test]
async fn a_refusal_names_exactly_the_bouquets_that_were_taken_and_writes_nothing() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let ids: Vec<String> =
        futures::future::join_all((0..3).map(|_| cloud.bouquet(&vendor, "10.00"))).await;
    assert_eq!(cloud.reserve("customer-1", &[&ids[0]]).await.status, 201);
    assert_eq!(cloud.reserve("customer-2", &[&ids[2]]).await.status, 201);
    let before = cloud.items().await;
    let refused = cloud
        .reserve("customer-3", &[&ids[0], &ids[1], &ids[2]])
        .await;
    assert_eq!(
        refused.status_and_code(),
        (409, Some("bouquet.unavailable"))
    );
    assert_eq!(refused.body["bouquetIds"], json!([ids[0], ids[2]]));
    assert_eq!(
        cloud.items().await,
        before,
        "the free bouquet was not reserved either"
    );
    let unknown = "01JF0000000000000000000000";
    let refused = cloud.reserve("customer-3", &[&ids[1], unknown]).await;
    assert_eq!(
        refused.body["bouquetIds"],
        json!([unknown]),
        "a bouquet that does not exist cannot be reserved"
    );
}

#[tokio::test]
async fn an_expired_hold_can_be_taken_by_the_next_customer() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let first = cloud.reserve("customer-1", &[&bouquet]).await;
    assert_eq!(first.status, 201);
    assert_eq!(
        first.body["reservedUntil"], "2026-12-02T16:31:51.000Z",
        "held for 15 minutes"
    );

    cloud.clock.advance(Duration::from_secs(15 * 60));
    assert_eq!(
        cloud.reserve("customer-2", &[&bouquet]).await.status,
        409,
        "still held at the deadline itself"
    );

    cloud.clock.advance(Duration::from_millis(1));
    let second = cloud.reserve("customer-2", &[&bouquet]).await;
    assert_eq!(
        second.status, 201,
        "no sweeper has run; the condition accepts the expired hold: {}",
        second.body
    );

    // The first order no longer holds the bouquet and reads as expired.
    let first_id = first.body["orderId"].as_str().unwrap();
    let seen = cloud
        .send(by_customer("get-order", "customer-1").order_id(first_id))
        .await;
    assert_eq!(seen.body["status"], "expired");
    let held_by = cloud.items_of("bouquet").await[0]["orderId"].clone();
    assert_eq!(
        held_by,
        AttributeValue::S(second.body["orderId"].as_str().unwrap().to_owned())
    );
    // Paying the first order must now be 409 reservation.expired: payment arrives with issue 4
    // (domain: order::tests::payment_needs_a_live_hold_and_is_idempotent_once_paid).
}

#[tokio::test]
async fn an_order_holds_one_vendors_bouquets() {
    let cloud = TestCloud::new().await;
    let (v1, v2) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    let (a, b) = (
        cloud.bouquet(&v1, "10.00").await,
        cloud.bouquet(&v2, "10.00").await,
    );
    let before = cloud.items().await;
    let mixed = cloud.reserve("customer-1", &[&a, &b]).await;
    assert_eq!(mixed.status_and_code(), (409, Some("cart.vendor_mismatch")));
    assert_eq!(cloud.items().await, before);
    let two = cloud
        .reserve("customer-1", &[&a, &cloud.bouquet(&v1, "5.25").await])
        .await;
    assert_eq!(
        two.body["total"],
        json!({"amount": "15.25", "currency": "EUR"})
    );
    assert_eq!(two.body["lines"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn a_reservation_is_two_dynamodb_calls_and_a_replay_one() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let request = order_request("customer-1", &[&bouquet]).idempotency_key("count-me");

    cloud.calls.reset();
    assert_eq!(
        cloud.call("create-order", request.clone()).await.status,
        201
    );
    let expected = HashMap::from([
        ("BatchGetItem".to_owned(), 1),
        ("TransactWriteItems".to_owned(), 1),
    ]);
    assert_eq!(cloud.calls.by_operation(), expected, "new reservation");

    cloud.calls.reset();
    let replay = cloud.call("create-order", request).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        cloud.calls.by_operation(),
        HashMap::from([("BatchGetItem".to_owned(), 1)]),
        "replay"
    );
}
