//! Delivery details through the function binaries' handlers: who may read them (API), that
//! the sweeper redacts them, and that analytics never receive them.

use std::time::Duration;

use serde_json::Value;

use system_tests::{by_customer, by_vendor, fixture, ApiRequest, PathParams, TestCloud};

fn carries_details(body: &Value) -> bool {
    let text = body.to_string();
    ["Camille", "+336", "Fleurs", "Happy birthday"]
        .iter()
        .any(|personal| text.contains(personal))
}

#[tokio::test]
async fn only_the_customer_the_orders_vendor_and_an_admin_read_the_delivery_details() {
    let (cloud, vendor) = TestCloud::with_vendor("Fleur").await;
    let other_vendor = cloud.vendor("Other").await;
    let order = cloud.paid_order(&vendor, "ana").await;
    for (who, request, status) in [
        (
            "the customer",
            ApiRequest::fixture("get-order").customer("ana"),
            200,
        ),
        (
            "its vendor",
            ApiRequest::fixture("get-order").vendor(&vendor),
            200,
        ),
        ("an admin", ApiRequest::fixture("get-order").admin(), 200),
        (
            "another customer",
            ApiRequest::fixture("get-order").customer("ben"),
            404,
        ),
        (
            "another vendor",
            ApiRequest::fixture("get-order").vendor(&other_vendor),
            404,
        ),
        ("anyone", ApiRequest::fixture("get-order").anonymous(), 401),
    ] {
        let answer = cloud.call("get-order", request.order_id(&order)).await;
        assert_eq!(answer.status, status, "{who}: {}", answer.body);
        assert_eq!(
            carries_details(&answer.body),
            status == 200,
            "{who}: {}",
            answer.body
        );
    }
    for (who, request) in [
        (
            "another customer",
            ApiRequest::fixture("list-orders").customer("ben"),
        ),
        (
            "another vendor",
            ApiRequest::fixture("list-orders").vendor(&other_vendor),
        ),
        (
            "the catalogue",
            ApiRequest::fixture("list-bouquets").anonymous(),
        ),
    ] {
        let binary = if who == "the catalogue" {
            "list-bouquets"
        } else {
            "list-orders"
        };
        let answer = cloud.call(binary, request).await;
        assert_eq!(answer.status, 200, "{who}: {}", answer.body);
        assert!(!carries_details(&answer.body), "{who}: {}", answer.body);
    }
    let shop = cloud.send(by_vendor("list-orders", &vendor)).await;
    assert!(
        carries_details(&shop.body),
        "its vendor delivers it: {}",
        shop.body
    );
    // The outbox: every event detail is free of them; so, then, is what analytics keep.
    for item in cloud.items_of("event").await {
        let detail = item["detail"].as_s().unwrap();
        assert!(!carries_details(&Value::String(detail.clone())), "{detail}");
        if item["eventName"].as_s().unwrap() == "OrderPaid" {
            let event = serde_json::json!({
                "source": "bouquet.marketplace", "detail-type": "OrderPaid",
                "detail": serde_json::from_str::<Value>(detail).unwrap(),
            });
            let projected = cloud
                .run_event_function("project-vendor-analytics", event)
                .await;
            assert_eq!(projected["applied"], true, "{projected}");
        }
    }
    let analytics = cloud
        .send(fixture("get-vendor-analytics").own_shop(&vendor))
        .await;
    assert_eq!(analytics.body["days"][0]["sales"], 1, "{}", analytics.body);
    let kept: Vec<String> = cloud
        .items()
        .await
        .iter()
        .filter(|i| i["pk"].as_s().is_ok_and(|pk| pk.starts_with("ANALYTICS#")))
        .map(|i| format!("{i:?}"))
        .collect();
    assert!(!kept.is_empty());
    assert!(
        kept.iter()
            .all(|i| !carries_details(&Value::String(i.clone()))),
        "{kept:?}"
    );
}

#[tokio::test]
async fn the_sweeper_redacts_the_details_the_configured_days_after_delivery() {
    let (cloud, vendor) = TestCloud::with_vendor("Fleur").await;
    // Redaction deletes the order's delivery photos from the upload bucket, which is there.
    cloud.photos().await;
    let order = cloud.paid_order(&vendor, "ana").await;
    let delivered = cloud
        .send(by_vendor("fulfil-order", &vendor).order_id(&order))
        .await;
    assert_eq!(delivered.status, 200, "{}", delivered.body);
    cloud.clock.advance(Duration::from_secs(29 * 86_400));
    let early = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(early["redacted"], 0, "{early}");
    cloud.clock.advance(Duration::from_secs(86_400 + 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["redacted"], 1, "{report}");
    let read = cloud
        .send(by_vendor("get-order", &vendor).order_id(&order))
        .await;
    assert!(!carries_details(&read.body), "{}", read.body);
    assert_eq!(read.body["delivery"]["recipientName"], "[redacted]");
    assert_eq!(read.body["delivery"]["address"]["city"], "Paris");
    assert!(read.body["redactedAt"].is_string());
    let erased = cloud.send(by_customer("erase-personal-data", "ana")).await;
    assert_eq!(
        (erased.status, erased.body["redacted"].as_u64()),
        (200, Some(0)),
        "already redacted: {}",
        erased.body
    );
}
