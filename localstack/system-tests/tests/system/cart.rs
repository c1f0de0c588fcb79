//! The cart: one vendor (enforced by the write's condition), a size limit, and reservation
//! of the whole cart in the same transaction that empties it.

use std::sync::Arc;

use serde_json::json;

use bouquet_app::domain::cart::MAX_CART_ITEMS;
use system_tests::{by_customer, ApiRequest, ApiResponse, Outcome, PathParams, TestCloud};

fn put(customer: &str, bouquet: &str) -> ApiRequest {
    ApiRequest::fixture("put-cart-item")
        .customer(customer)
        .bouquet_id(bouquet)
}

/// `customer` puts `bouquet` in its cart.
async fn add_to_cart(cloud: &TestCloud, customer: &str, bouquet: &str) -> ApiResponse {
    cloud.call("put-cart-item", put(customer, bouquet)).await
}

#[tokio::test]
async fn a_cart_holds_one_vendors_available_bouquets_and_becomes_an_order() {
    let cloud = TestCloud::new().await;
    let (v1, v2) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    let (a, b, c) = (
        cloud.bouquet(&v1, "10.00").await,
        cloud.bouquet(&v1, "2.50").await,
        cloud.bouquet(&v2, "5.00").await,
    );
    assert_eq!(add_to_cart(&cloud, "customer-1", &a).await.status, 200);
    let two = add_to_cart(&cloud, "customer-1", &b).await;
    assert_eq!(
        (
            two.body["items"].as_array().map(Vec::len),
            two.body["total"].clone()
        ),
        (Some(2), json!({"amount": "12.50", "currency": "EUR"}))
    );
    let before = cloud.items().await;
    let mixed = add_to_cart(&cloud, "customer-1", &c).await;
    assert_eq!(mixed.status_and_code(), (409, Some("cart.vendor_mismatch")));
    assert_eq!(cloud.items().await, before);

    let removed = cloud
        .send(by_customer("delete-cart-item", "customer-1").bouquet_id(&b))
        .await;
    assert_eq!(removed.body["items"].as_array().map(Vec::len), Some(1));
    let got = cloud.send(by_customer("get-cart", "customer-1")).await;
    assert_eq!(got.body["items"][0]["bouquetId"], a.as_str());

    let order = cloud.reserve_cart("customer-1", "cart-1").await;
    assert_eq!(order.status, 201, "{}", order.body);
    assert_eq!(order.body["lines"][0]["bouquetId"], a.as_str());
    let emptied = cloud.send(by_customer("get-cart", "customer-1")).await;
    assert_eq!(
        (emptied.body["items"].clone(), emptied.body["total"].clone()),
        (json!([]), json!(null))
    );
    let replay = cloud.reserve_cart("customer-1", "cart-1").await;
    assert_eq!(
        (replay.status, replay.header("idempotent-replayed")),
        (201, Some("true"))
    );
    let empty = cloud
        .send(
            by_customer("create-order", "customer-1")
                .no_body()
                .no_idempotency_key(),
        )
        .await;
    assert_eq!(empty.status_and_code(), (409, Some("cart.empty")));

    // An emptied cart takes any vendor; an unavailable bouquet is refused.
    assert_eq!(add_to_cart(&cloud, "customer-1", &c).await.status, 200);
    let held = add_to_cart(&cloud, "customer-2", &a).await;
    assert_eq!(held.status_and_code(), (409, Some("bouquet.unavailable")));
}

#[tokio::test]
async fn a_cart_is_limited_to_what_one_transaction_can_reserve() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let mut ids = Vec::new();
    for _ in 0..=MAX_CART_ITEMS {
        ids.push(cloud.bouquet(&vendor, "1.00").await);
    }
    for id in &ids[..MAX_CART_ITEMS] {
        assert_eq!(add_to_cart(&cloud, "customer-1", id).await.status, 200);
    }
    let full = add_to_cart(&cloud, "customer-1", &ids[MAX_CART_ITEMS]).await;
    assert_eq!(full.status_and_code(), (409, Some("cart.full")));
    assert_eq!(
        add_to_cart(&cloud, "customer-1", &ids[0]).await.status,
        200,
        "re-adding an item of a full cart"
    );
    let order = cloud
        .send(by_customer("create-order", "customer-1").no_body())
        .await;
    assert_eq!(
        (order.status, order.body["lines"].as_array().map(Vec::len)),
        (201, Some(MAX_CART_ITEMS)),
        "{}",
        order.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_of_two_vendors_to_an_empty_cart_let_one_win() {
    let cloud = Arc::new(TestCloud::new().await);
    let (v1, v2) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    for round in 0..5 {
        let customer = format!("customer-{round}");
        let (a, b) = (
            cloud.bouquet(&v1, "1.00").await,
            cloud.bouquet(&v2, "1.00").await,
        );
        let (first, second) = tokio::join!(
            cloud.call("put-cart-item", put(&customer, &a)),
            cloud.call("put-cart-item", put(&customer, &b))
        );
        let mut statuses = [first.status, second.status];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409], "round {round}");
        let loser = if first.status == 409 { &first } else { &second };
        assert_eq!(loser.code(), Some("cart.vendor_mismatch"));
        let cart = cloud.send(by_customer("get-cart", &customer)).await;
        assert_eq!(cart.body["items"].as_array().map(Vec::len), Some(1));
    }
}

#[tokio::test]
async fn bad_cart_and_order_requests_write_nothing() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "1.00").await;
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    let cases = [
        (
            "put-cart-item",
            put("customer-1", "not-an-id"),
            400,
            "request.invalid",
        ),
        (
            "put-cart-item",
            put("customer-1", "01JF0000000000000000000000"),
            409,
            "bouquet.unavailable",
        ),
        (
            "put-cart-item",
            put("customer-1", &bouquet).vendor(&vendor),
            403,
            "auth.forbidden",
        ),
        (
            "get-cart",
            ApiRequest::fixture("get-cart").anonymous(),
            401,
            "auth.unauthenticated",
        ),
        (
            "pay-order",
            ApiRequest::fixture("pay-order")
                .customer("customer-1")
                .order_id(&order)
                .json(json!({ "paymentToken": "4111111111111111" })),
            400,
            "request.invalid",
        ),
        (
            "pay-order",
            ApiRequest::fixture("pay-order")
                .customer("customer-1")
                .order_id(&order)
                .json(json!({})),
            400,
            "request.invalid",
        ),
        (
            "pay-order",
            ApiRequest::fixture("pay-order")
                .customer("customer-2")
                .order_id(&order),
            404,
            "not_found",
        ),
        (
            "cancel-order",
            ApiRequest::fixture("cancel-order")
                .vendor(&vendor)
                .order_id(&order),
            403,
            "auth.forbidden",
        ),
        (
            "fulfil-order",
            ApiRequest::fixture("fulfil-order")
                .customer("customer-1")
                .order_id(&order),
            403,
            "auth.forbidden",
        ),
    ];
    let before = cloud.items().await;
    for (binary, request, status, code) in cases {
        let response = cloud.call(binary, request).await;
        assert_eq!(
            response.status_and_code(),
            (status, Some(code)),
            "{binary}: {}",
            response.body
        );
        assert_eq!(cloud.items().await, before, "{binary} wrote to the table");
    }
}
