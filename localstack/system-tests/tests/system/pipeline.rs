//! The shared pipeline: correlation ids, deadlines (invariant 8), problem documents.

use std::time::Duration;

use system_tests::{fixture, ApiRequest, Outcome, TestCloud};

#[tokio::test]
async fn every_answer_carries_a_correlation_id() {
    let cloud = TestCloud::new().await;
    let echoed = cloud
        .send(fixture("list-bouquets").header("x-correlation-id", "trace-42"))
        .await;
    assert_eq!(echoed.header("x-correlation-id"), Some("trace-42"));
    let minted = cloud
        .send(fixture("list-bouquets").without_header("x-correlation-id"))
        .await;
    assert_eq!(
        minted.header("x-correlation-id").map(str::len),
        Some(26),
        "a fresh ULID"
    );
    let unsafe_id = cloud
        .send(fixture("list-bouquets").header("x-correlation-id", &"x".repeat(300)))
        .await;
    assert_ne!(
        unsafe_id.header("x-correlation-id"),
        Some("x".repeat(300).as_str()),
        "an oversized id is replaced"
    );
}

#[tokio::test]
async fn a_request_out_of_time_answers_503_and_writes_nothing() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let before = cloud.items().await;
    let request = ApiRequest::fixture("create-order")
        .json(serde_json::json!({ "bouquetIds": [bouquet] }))
        .deadline_in(Duration::from_millis(100));
    let late = cloud.call("create-order", request).await;
    assert_eq!(late.status_and_code(), (503, Some("deadline.exceeded")));
    assert_eq!(cloud.items().await, before);
    let in_time = ApiRequest::fixture("create-order")
        .json(serde_json::json!({ "bouquetIds": [bouquet] }))
        .deadline_in(Duration::from_secs(10));
    assert_eq!(cloud.call("create-order", in_time).await.status, 201);
}
