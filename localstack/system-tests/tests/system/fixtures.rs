//! Each route's example request (its OpenAPI operation's, as API Gateway sends it) gets a
//! well-formed answer from its function (never a 5xx) against an empty table.

use system_tests::in_process::HTTP_FUNCTIONS;
use system_tests::{by_vendor, fixture, Outcome, PathParams, TestCloud};

#[tokio::test]
async fn every_fixture_gets_a_well_formed_answer() {
    let cloud = TestCloud::new().await;
    for (binary, _, _) in HTTP_FUNCTIONS {
        let response = cloud.send(fixture(binary)).await;
        assert!(
            response.status < 500,
            "{binary}: {} {}",
            response.status,
            response.body
        );
        assert_eq!(
            response.header("x-correlation-id"),
            Some(format!("fixture-{binary}").as_str()),
            "{binary} echoes the correlation id"
        );
        if response.status >= 400 {
            assert_eq!(
                response.header("content-type"),
                Some("application/problem+json"),
                "{binary}"
            );
            assert!(response.code().is_some(), "{binary}: {}", response.body);
        }
    }
}

#[tokio::test]
async fn fixtures_drive_the_happy_path() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom & Vase").await;
    let created = cloud
        .send(fixture("create-bouquet").own_shop(&vendor))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["status"], "available");
    assert_eq!(
        created.body["price"],
        serde_json::json!({"amount": "34.90", "currency": "EUR"})
    );
    let bouquet = created.body["bouquetId"].as_str().unwrap();
    assert_eq!(
        created.header("location"),
        Some(format!("/v1/bouquets/{bouquet}").as_str())
    );

    let patched = cloud
        .send(by_vendor("update-bouquet", &vendor).bouquet_id(bouquet))
        .await;
    assert_eq!(
        (patched.status, patched.body["price"]["amount"].as_str()),
        (200, Some("29.90")),
        "{}",
        patched.body
    );
    assert_eq!(patched.header("etag"), Some("\"2\""));

    let order = cloud
        .send(fixture("create-order").json(serde_json::json!({ "bouquetIds": [bouquet] })))
        .await;
    assert_eq!(order.status, 201, "{}", order.body);
    assert_eq!(
        order.body["total"],
        serde_json::json!({"amount": "29.90", "currency": "EUR"})
    );
    let order_id = order.body["orderId"].as_str().unwrap();
    let fetched = cloud.send(fixture("get-order").order_id(order_id)).await;
    assert_eq!(fetched.status_and_state(), (200, Some("reserved")));
    let listed = cloud.send(fixture("list-orders")).await;
    assert_eq!(listed.body["items"][0]["orderId"], order_id);
}
