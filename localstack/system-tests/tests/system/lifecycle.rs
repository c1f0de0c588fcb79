//! Cancel, fulfil and the expiry sweeper.

use std::sync::Arc;
use std::time::Duration;

use system_tests::{by_customer, by_vendor, Outcome, PathParams, TestCloud};

#[tokio::test]
async fn a_customer_cancels_a_live_reservation_once() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    let cancel = |customer: &str| by_customer("cancel-order", customer).order_id(&order);
    assert_eq!(
        cloud
            .call("cancel-order", cancel("customer-2"))
            .await
            .status,
        404,
        "not someone else's"
    );
    let cancelled = cloud.call("cancel-order", cancel("customer-1")).await;
    assert_eq!(cancelled.status_and_state(), (200, Some("cancelled")));
    assert_eq!(
        cloud.bouquet_status(&bouquet).await.as_deref(),
        Some("available")
    );
    let again = cloud.call("cancel-order", cancel("customer-1")).await;
    assert_eq!(
        (
            again.status,
            again.code(),
            again.body["orderStatus"].as_str()
        ),
        (409, Some("order.invalid_state"), Some("cancelled"))
    );
    assert!(cloud
        .event_names()
        .await
        .contains(&"OrderCancelled".to_owned()));
    assert_eq!(
        cloud.reserve("customer-3", &[&bouquet]).await.status,
        201,
        "the bouquet can be reserved again"
    );
}

#[tokio::test]
async fn its_vendor_fulfils_a_paid_order() {
    let cloud = TestCloud::new().await;
    let (vendor, other) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    let fulfil = |vendor_id: &str| by_vendor("fulfil-order", vendor_id).order_id(&order);
    let early = cloud.call("fulfil-order", fulfil(&vendor)).await;
    assert_eq!(
        early.status_and_code(),
        (409, Some("order.invalid_state")),
        "only paid orders"
    );
    assert_eq!(cloud.pay_by_card("customer-1", &order).await.status, 200);
    assert_eq!(
        cloud.call("fulfil-order", fulfil(&other)).await.status,
        404,
        "not another vendor's"
    );
    let done = cloud.call("fulfil-order", fulfil(&vendor)).await;
    assert_eq!(done.status_and_state(), (200, Some("fulfilled")));
    let seen = cloud
        .send(by_customer("get-order", "customer-1").order_id(&order))
        .await;
    assert_eq!(seen.body["status"], "fulfilled");
    let cancel = cloud
        .send(by_customer("cancel-order", "customer-1").order_id(&order))
        .await;
    assert_eq!(cancel.status, 409);
    assert!(cloud
        .event_names()
        .await
        .contains(&"OrderFulfilled".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_sweepers_at_once_expire_each_lapsed_order_exactly_once() {
    let cloud = Arc::new(TestCloud::new().await);
    let vendor = cloud.vendor("Bloom").await;
    let mut orders = Vec::new();
    for i in 0..8 {
        let bouquet = cloud.bouquet(&vendor, "10.00").await;
        orders.push(
            cloud
                .reserve(&format!("customer-{i}"), &[&bouquet])
                .await
                .body["orderId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let live = cloud.bouquet(&vendor, "10.00").await;
    assert_eq!(
        cloud.run_scheduled("expire-reservations").await["expired"],
        0,
        "nothing is due yet"
    );
    cloud.clock.advance(Duration::from_secs(15 * 60 + 1));
    let fresh = cloud.reserved_order_id("customer-late", &[&live]).await;
    let (a, b) = tokio::join!(
        cloud.run_scheduled("expire-reservations"),
        cloud.run_scheduled("expire-reservations")
    );
    assert_eq!(
        a["expired"].as_u64().unwrap() + b["expired"].as_u64().unwrap(),
        8,
        "{a} {b}"
    );
    for order in &orders {
        assert_eq!(cloud.order_status(order).await.as_deref(), Some("expired"));
    }
    assert_eq!(
        cloud.order_status(&fresh).await.as_deref(),
        Some("reserved"),
        "a live hold is left alone"
    );
    assert_eq!(
        cloud
            .items_of("bouquet")
            .await
            .iter()
            .filter(|b| b["status"].as_s().is_ok_and(|s| s == "available"))
            .count(),
        8
    );
    assert_eq!(cloud.event_count("ReservationExpired").await, 8);
    assert_eq!(
        cloud.run_scheduled("expire-reservations").await["due"],
        0,
        "expired orders leave the sparse index"
    );
}

#[tokio::test]
async fn the_sweeper_releases_only_bouquets_the_order_still_holds() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [a, b] = cloud.bouquets(&vendor, ["10.00", "10.00"]).await;
    let first = cloud.reserved_order_id("customer-1", &[&a, &b]).await;
    cloud.clock.advance(Duration::from_secs(16 * 60));
    // Another customer takes one of the lapsed holds before the sweeper runs.
    let second = cloud.reserved_order_id("customer-2", &[&a]).await;
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["expired"], 1, "{report}");
    assert_eq!(cloud.order_status(&first).await.as_deref(), Some("expired"));
    assert_eq!(
        cloud.bouquet_status(&a).await.as_deref(),
        Some("reserved"),
        "still {second}'s"
    );
    assert_eq!(cloud.bouquet_status(&b).await.as_deref(), Some("available"));
}
