//! Verified reviews through the functions: the customer of a delivered order reviews it once,
//! others are refused with their codes, the projector counts it once however often its event
//! comes, and the shop's public page shows the rating and the review.

use serde_json::{json, Value};
use system_tests::{
    by_customer, by_vendor, fixture, operation_counts, Outcome, PathParams, TestCloud,
};

async fn review(
    cloud: &TestCloud,
    customer: &str,
    order: &str,
    stars: i64,
) -> system_tests::ApiResponse {
    cloud
        .send(
            by_customer("create-review", customer)
                .order_id(order)
                .json(json!({ "stars": stars, "text": "Fresh and on time" })),
        )
        .await
}

/// `vendor` fulfils (delivers) `order`.
async fn deliver(cloud: &TestCloud, vendor: &str, order: &str) {
    let delivered = cloud
        .send(by_vendor("fulfil-order", vendor).order_id(order))
        .await;
    assert_eq!(delivered.status, 200, "{}", delivered.body);
}

/// `customer`'s order of `bouquet`, paid and delivered by `vendor`; returns its id.
async fn delivered_order(cloud: &TestCloud, vendor: &str, customer: &str, bouquet: &str) -> String {
    let order = cloud.reserved_order_id(customer, &[bouquet]).await;
    let paid = cloud.pay_by_card(customer, &order).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    deliver(cloud, vendor, &order).await;
    order
}

/// The analytics projector applies the `ReviewWritten` event `written`, as its rule delivers
/// it; the call counter counts its calls only.
async fn project_review(cloud: &TestCloud, written: Value) {
    cloud.calls.reset();
    let projected = cloud
        .run_event_function(
            "project-vendor-analytics",
            json!({ "source": "bouquet.marketplace", "detail-type": "ReviewWritten", "detail": written }),
        )
        .await;
    assert_eq!(projected["applied"], json!(true));
}

#[tokio::test]
async fn a_delivered_order_is_reviewed_once_and_its_shop_shows_the_rating() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "30.00").await;
    let order = cloud.reserved_order_id("c1", &[&bouquet]).await;
    let paid = cloud.pay_by_card("c1", &order).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(
        review(&cloud, "c1", &order, 5).await.status_and_code(),
        (409, Some("review.not_delivered"))
    );
    deliver(&cloud, &vendor, &order).await;
    // Issue 51: a stranger is not told the order exists, whatever it asks.
    assert_eq!(
        review(&cloud, "c2", &order, 5).await.status_and_code(),
        (404, Some("not_found"))
    );
    let bad = review(&cloud, "c1", &order, 6).await;
    assert_eq!(bad.status_and_code(), (400, Some("request.invalid")));
    assert_eq!(bad.body["errors"][0]["field"], "stars");
    let written = review(&cloud, "c1", &order, 5).await;
    assert_eq!(written.status, 201, "{}", written.body);
    assert_eq!(
        (written.body["stars"].clone(), written.body["text"].clone()),
        (json!(5), json!("Fresh and on time"))
    );
    assert!(
        written.body.get("customerId").is_none(),
        "the author is not published"
    );
    assert_eq!(
        review(&cloud, "c1", &order, 4).await.status_and_code(),
        (409, Some("review.exists"))
    );

    let events: Vec<Value> = cloud
        .items_of("event")
        .await
        .iter()
        .filter(|e| e["eventName"].as_s().is_ok_and(|n| n == "ReviewWritten"))
        .map(|e| {
            let detail: Value = serde_json::from_str(e["detail"].as_s().unwrap()).unwrap();
            json!({ "source": "bouquet.marketplace", "detail-type": "ReviewWritten", "detail": detail })
        })
        .collect();
    assert_eq!(events.len(), 1);
    let first = cloud
        .run_event_function("project-vendor-analytics", events[0].clone())
        .await;
    let again = cloud
        .run_event_function("project-vendor-analytics", events[0].clone())
        .await;
    assert_eq!(
        (first["applied"].clone(), again["applied"].clone()),
        (json!(true), json!(false))
    );

    let page = cloud
        .send(fixture("list-shop-reviews").vendor_id(&vendor))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        page.body["rating"],
        json!({ "average": 5.0, "count": 1, "byStars": [0, 0, 0, 0, 1] })
    );
    // Issue 51: the public page names no order; the shop's member sees which it is.
    let public_review = &page.body["items"][0];
    assert!(public_review.get("orderId").is_none(), "{public_review}");
    assert_eq!(public_review["reviewId"], written.body["reviewId"]);
    assert_eq!(written.body["reviewId"].as_str().map(str::len), Some(26));
    let as_shop = cloud
        .send(by_vendor("list-shop-reviews", &vendor).vendor_id(&vendor))
        .await;
    assert_eq!(as_shop.body["items"][0]["orderId"], order.as_str());

    // Edited by its author, answered once by its shop, hidden by an administrator only.
    let edited = cloud
        .send(
            by_customer("edit-review", "c1")
                .order_id(&order)
                .json(json!({ "stars": 4 })),
        )
        .await;
    assert_eq!(
        (edited.status, edited.body["stars"].clone()),
        (200, json!(4)),
        "{}",
        edited.body
    );
    assert_eq!(
        cloud
            .send(
                by_customer("edit-review", "c2")
                    .order_id(&order)
                    .json(json!({ "stars": 1 }))
            )
            .await
            .status_and_code(),
        (404, Some("not_found"))
    );
    let other_shop = cloud.vendor("Elsewhere").await;
    assert_eq!(
        cloud
            .send(
                by_vendor("answer-review", &other_shop)
                    .order_id(&order)
                    .json(json!({ "text": "Not ours" }))
            )
            .await
            .status_and_code(),
        (404, Some("not_found"))
    );
    let answer = |text: &str| {
        by_vendor("answer-review", &vendor)
            .order_id(&order)
            .json(json!({ "text": text }))
    };
    let answered = cloud.send(answer("Thank you!")).await;
    assert_eq!(
        answered.body["answer"]["text"], "Thank you!",
        "{}",
        answered.body
    );
    assert_eq!(
        cloud.send(answer("Again")).await.status_and_code(),
        (409, Some("review.already_answered"))
    );
    let hide = |request: system_tests::ApiRequest| {
        request
            .order_id(&order)
            .json(json!({ "reason": "Names the courier" }))
    };
    assert_eq!(
        cloud
            .send(hide(by_vendor("hide-review", &vendor)))
            .await
            .status_and_code(),
        (403, Some("review.not_allowed"))
    );
    let hidden = cloud.send(hide(fixture("hide-review"))).await;
    assert_eq!(
        hidden.body["hidden"]["reason"], "Names the courier",
        "{}",
        hidden.body
    );
    let page = cloud
        .send(fixture("list-shop-reviews").vendor_id(&vendor))
        .await;
    assert_eq!(
        page.body["items"],
        json!([]),
        "a hidden review leaves the page"
    );
}

/// What reviews cost in DynamoDB round trips (a figure for docs/performance.md): the write,
/// the projection of its event (the rating, then the shop's bouquets in the rating order),
/// the shop's page, the catalogue by rating and the order's page with its review.
#[tokio::test]
async fn dynamodb_calls_of_a_review_its_rating_and_their_pages() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "30.00").await;
    // Two more on sale: the projector moves them in the rating order (not the sold one).
    cloud.bouquet(&vendor, "20.00").await;
    cloud.bouquet(&vendor, "25.00").await;
    let order = delivered_order(&cloud, &vendor, "c1", &bouquet).await;

    cloud.calls.reset();
    assert_eq!(review(&cloud, "c1", &order, 4).await.status, 201);
    cloud.assert_calls(
        &[("GetItem", 1), ("TransactWriteItems", 1)],
        "write a review (the order, then the review with its event on a condition)",
    );

    let written: Value = cloud
        .items_of("event")
        .await
        .iter()
        .find(|e| e["eventName"].as_s().is_ok_and(|n| n == "ReviewWritten"))
        .map(|e| serde_json::from_str(e["detail"].as_s().unwrap()).unwrap())
        .expect("its event");
    project_review(&cloud, written).await;
    cloud.assert_calls(
        &[
            ("GetItem", 2),
            ("TransactWriteItems", 1),
            ("Query", 1),
            ("UpdateItem", 2),
        ],
        "project it (read the rating, write the next with ShopRatingChanged; read it again, \
         the shop's bouquets, one update for each of the two on sale: the sold one is in no \
         catalogue order)",
    );

    cloud.calls.reset();
    let page = cloud
        .send(fixture("list-shop-reviews").vendor_id(&vendor))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    cloud.assert_calls(
        &[("BatchGetItem", 1), ("Query", 1)],
        "the shop's page (its name and rating, its reviews)",
    );

    cloud.calls.reset();
    let by_rating = cloud
        .send(fixture("list-bouquets").query("sort", "rating"))
        .await;
    assert_eq!(by_rating.status, 200, "{}", by_rating.body);
    assert_eq!(
        by_rating.body["items"][0]["shopRating"],
        json!({ "average": 4.0, "count": 1, "byStars": [0, 0, 0, 1, 0] })
    );
    cloud.assert_calls(
        &[("Query", 4), ("BatchGetItem", 1)],
        "the catalogue by rating (its four shards, then the page's shops and ratings)",
    );

    cloud.calls.reset();
    let seen = cloud
        .send(by_customer("get-order", "c1").order_id(&order))
        .await;
    assert_eq!(seen.body["review"]["stars"], json!(4), "{}", seen.body);
    cloud.assert_calls(
        &[("GetItem", 2)],
        "the order's page (the order, its review)",
    );

    // Two more reviews of four stars: the second moves the shop's place (two reviews are a
    // new power of two), the third does not (4.0 of three reviews stands where 4.0 of two
    // did), and its projection writes no bouquet.
    let mut projections = Vec::new();
    for customer in ["c2", "c3"] {
        let bouquet = cloud.bouquet(&vendor, "22.00").await;
        let order = delivered_order(&cloud, &vendor, customer, &bouquet).await;
        assert_eq!(review(&cloud, customer, &order, 4).await.status, 201);
        let written: Value = cloud
            .items_of("event")
            .await
            .iter()
            .map(|e| serde_json::from_str::<Value>(e["detail"].as_s().unwrap()).unwrap())
            .find(|e| e["data"]["orderId"] == json!(order) && e["data"]["stars"] == json!(4))
            .expect("its ReviewWritten");
        project_review(&cloud, written).await;
        projections.push(cloud.calls.by_operation());
    }
    assert_eq!(
        projections[0].get("UpdateItem"),
        Some(&2),
        "the second review moves the place: each of the shop's two bouquets on sale"
    );
    assert_eq!(
        projections[1],
        operation_counts(&[("GetItem", 1), ("TransactWriteItems", 1)]),
        "the third leaves the place: the rating read and written, no bouquet"
    );
}
