//! Bouquet lifecycle through the API: list, read (ETag, 304), change under If-Match,
//! withdraw; changes and withdrawal only while available (invariant 4).

use serde_json::json;

use system_tests::{by_vendor, fixture, ApiRequest, Outcome, PathParams, TestCloud};

#[tokio::test]
async fn get_has_an_etag_and_answers_304_when_unchanged() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let got = cloud
        .send(fixture("get-bouquet").bouquet_id(&bouquet))
        .await;
    assert_eq!((got.status, got.header("etag")), (200, Some("\"1\"")));
    assert!(got
        .header("cache-control")
        .is_some_and(|c| c.contains("max-age")));
    assert_eq!(
        got.body["freshness"],
        serde_json::Value::Null,
        "no vase readings yet"
    );
    let cached = cloud
        .send(
            fixture("get-bouquet")
                .bouquet_id(&bouquet)
                .header("if-none-match", "\"1\""),
        )
        .await;
    assert_eq!(cached.status, 304);
    let missing = cloud
        .send(fixture("get-bouquet").bouquet_id("01JF0000000000000000000000"))
        .await;
    assert_eq!(missing.status_and_code(), (404, Some("not_found")));
}

#[tokio::test]
async fn changes_need_the_current_version_and_an_available_bouquet() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let patch = |version: &str, body: serde_json::Value| {
        ApiRequest::fixture("update-bouquet")
            .vendor(&vendor)
            .bouquet_id(&bouquet)
            .header("if-match", version)
            .json(body)
    };
    let renamed = cloud
        .call(
            "update-bouquet",
            patch("\"1\"", json!({ "name": "Coral Peonies" })),
        )
        .await;
    assert_eq!(
        (
            renamed.status,
            renamed.body["name"].as_str(),
            renamed.body["version"].as_u64()
        ),
        (200, Some("Coral Peonies"), Some(2))
    );
    let stale = cloud
        .call(
            "update-bouquet",
            patch("\"1\"", json!({ "name": "Lost update" })),
        )
        .await;
    assert_eq!(stale.status_and_code(), (412, Some("precondition.failed")));

    assert_eq!(cloud.reserve("customer-1", &[&bouquet]).await.status, 201);
    let before = cloud.items().await;
    let held = cloud
        .call(
            "update-bouquet",
            patch(
                "\"3\"",
                json!({ "price": { "amount": "1.00", "currency": "EUR" } }),
            ),
        )
        .await;
    held.assert_code(409, "bouquet.not_available_for_change");
    let withdraw = cloud
        .send(by_vendor("withdraw-bouquet", &vendor).bouquet_id(&bouquet))
        .await;
    assert_eq!(
        withdraw.status_and_code(),
        (409, Some("bouquet.not_available_for_change"))
    );
    assert_eq!(
        cloud.items().await,
        before,
        "a refused change writes nothing"
    );

    let events: Vec<String> = cloud
        .items_of("event")
        .await
        .iter()
        .filter_map(|e| e["eventName"].as_s().ok().cloned())
        .collect();
    for name in [
        "VendorOnboarded",
        "BouquetListed",
        "BouquetChanged",
        "OrderReserved",
    ] {
        assert!(
            events.iter().any(|e| e == name),
            "{name} missing from {events:?}"
        );
    }
}

#[tokio::test]
async fn a_withdrawn_bouquet_leaves_the_catalogue_and_cannot_be_reserved() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let withdrawn = cloud
        .send(by_vendor("withdraw-bouquet", &vendor).bouquet_id(&bouquet))
        .await;
    assert_eq!(withdrawn.status_and_state(), (200, Some("withdrawn")));
    let listed = cloud.send(fixture("list-bouquets")).await;
    assert_eq!(listed.body["items"], json!([]));
    let reserve = cloud.reserve("customer-1", &[&bouquet]).await;
    assert_eq!(
        reserve.status_and_code(),
        (409, Some("bouquet.unavailable"))
    );
    let again = cloud
        .send(by_vendor("withdraw-bouquet", &vendor).bouquet_id(&bouquet))
        .await;
    assert_eq!(again.status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_at_one_version_let_exactly_one_win() {
    let cloud = std::sync::Arc::new(TestCloud::new().await);
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let racers = (0..10).map(|i| {
        let cloud = cloud.clone();
        let request = ApiRequest::fixture("update-bouquet")
            .vendor(&vendor)
            .bouquet_id(&bouquet)
            .header("if-match", "\"1\"")
            .json(json!({ "name": format!("Edit {i}") }));
        tokio::spawn(async move { cloud.call("update-bouquet", request).await })
    });
    let statuses: Vec<u16> = futures::future::join_all(racers)
        .await
        .into_iter()
        .map(|r| r.unwrap().status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 412).count(),
        9,
        "{statuses:?}"
    );
}
