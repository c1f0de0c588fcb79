//! Vendor analytics: the projector counts each event once, however often it is delivered.

use serde_json::{json, Value};

use system_tests::{by_vendor, fixture, ApiRequest, Outcome, PathParams, TestCloud};

fn order_event(name: &str, event_id: &str, vendor: &str, amount: &str) -> Value {
    let text = std::fs::read_to_string(
        system_tests::repository_root().join("events/project-vendor-analytics.json"),
    )
    .unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    event["detail-type"] = json!(name);
    event["detail"]["eventId"] = json!(event_id);
    event["detail"]["data"]["vendorId"] = json!(vendor);
    event["detail"]["data"]["total"]["amount"] = json!(amount);
    event
}

#[tokio::test]
async fn the_projector_applied_twice_gives_the_same_counters() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let events = [
        order_event("OrderPaid", "e1", &vendor, "34.90"),
        order_event("OrderPaid", "e2", &vendor, "10.10"),
        order_event("OrderCancelled", "e3", &vendor, "1.00"),
        order_event("ReservationExpired", "e4", &vendor, "1.00"),
        order_event("OrderFulfilled", "e5", &vendor, "1.00"),
        order_event("VendorOnboarded", "e6", &vendor, "1.00"),
    ];
    let mut applied = Vec::new();
    for round in 0..2 {
        for event in &events {
            let report = cloud
                .run_event_function("project-vendor-analytics", event.clone())
                .await;
            applied.push((round, report["applied"].as_bool().unwrap()));
        }
    }
    assert_eq!(
        applied.iter().filter(|(r, a)| *r == 0 && *a).count(),
        5,
        "first delivery applies the five order events"
    );
    assert_eq!(
        applied.iter().filter(|(r, a)| *r == 1 && *a).count(),
        0,
        "redelivery changes nothing"
    );

    // The shop's own analytics, as its member asks for them.
    let own_analytics = || ApiRequest::fixture("get-vendor-analytics").own_shop(&vendor);
    let analytics = cloud.call("get-vendor-analytics", own_analytics()).await;
    assert_eq!(analytics.status, 200, "{}", analytics.body);
    assert_eq!(
        analytics.body["days"],
        json!([{ "date": "2026-12-02", "sales": 2, "revenue": [{ "amount": "45.00", "currency": "EUR" }], "averageFreshness": null, "cancellations": 1, "expiries": 1, "fulfilled": 1 }])
    );
    let other = cloud.vendor("Petal").await;
    let forbidden = cloud
        .send(by_vendor("get-vendor-analytics", &other).vendor_id(&vendor))
        .await;
    assert_eq!(forbidden.status_and_code(), (403, Some("auth.forbidden")));
    let bad = cloud
        .send(own_analytics().query("from", "2026-13-01"))
        .await;
    assert_eq!(bad.status_and_code(), (400, Some("request.invalid")));
    let backwards = cloud
        .send(
            own_analytics()
                .query("from", "2026-12-03")
                .query("to", "2026-12-01"),
        )
        .await;
    assert_eq!(backwards.status, 400);
}

#[tokio::test]
async fn a_sale_adds_the_freshness_of_its_bouquets_to_the_day() {
    let cloud = TestCloud::new().await;
    let (vendor, a, b, unscored) = cloud.scored_shop().await;
    let mut paid = order_event("OrderPaid", "sale-1", &vendor, "40.00");
    paid["detail"]["data"]["bouquetIds"] = json!([a, b, unscored]);
    for _ in 0..2 {
        cloud
            .run_event_function("project-vendor-analytics", paid.clone())
            .await;
    }
    let analytics = cloud
        .send(fixture("get-vendor-analytics").own_shop(&vendor))
        .await;
    assert_eq!(analytics.body["days"][0]["sales"], 1, "{}", analytics.body);
    assert_eq!(analytics.body["days"][0]["averageFreshness"], 92.5);
}

#[tokio::test]
async fn a_sale_above_one_prices_bound_is_counted() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    // Two bouquets at 600,000.00: a total no single price may have.
    let event = order_event("OrderPaid", "big-1", &vendor, "1200000.00");
    let report = cloud
        .run_event_function("project-vendor-analytics", event)
        .await;
    assert_eq!(report["applied"], true);
    let request = ApiRequest::fixture("get-vendor-analytics").own_shop(&vendor);
    let analytics = cloud.call("get-vendor-analytics", request).await;
    assert_eq!(
        analytics.body["days"][0]["revenue"],
        json!([{ "amount": "1200000.00", "currency": "EUR" }]),
        "{}",
        analytics.body
    );
}
