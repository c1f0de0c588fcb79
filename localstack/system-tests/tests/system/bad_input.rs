//! Invariant 6: bad input gets its problem code and changes nothing.

use serde_json::json;

use system_tests::{ApiRequest, Outcome, PathParams, TestCloud};

struct Case {
    name: &'static str,
    binary: &'static str,
    request: ApiRequest,
    /// The answer's status and problem code.
    expected: (u16, &'static str),
    /// A field the `errors` list must name, when the problem is about a field.
    field: Option<&'static str>,
}

fn case(
    name: &'static str,
    binary: &'static str,
    request: ApiRequest,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
) -> Case {
    Case {
        name,
        binary,
        request,
        expected: (status, code),
        field,
    }
}

/// Two shops, `vendor`'s and `other_vendor`'s: the first has `bouquet` on sale and another
/// bouquet that `customer-1` reserved, as `order_id`. Returns
/// `(cloud, vendor, other_vendor, bouquet, order_id)`.
async fn two_shops() -> (TestCloud, String, String, String, String) {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let other_vendor = cloud.vendor("Petal").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let reserved = cloud.bouquet(&vendor, "9.00").await;
    let order_id = cloud.reserved_order_id("customer-1", &[&reserved]).await;
    (cloud, vendor, other_vendor, bouquet, order_id)
}

#[tokio::test]
async fn bad_requests_get_their_problem_and_write_nothing() {
    let (cloud, vendor, other_vendor, bouquet, order_id) = two_shops().await;

    let order_req = |body: serde_json::Value| {
        ApiRequest::fixture("create-order")
            .customer("customer-9")
            .json(body)
            .no_idempotency_key()
    };
    let listing = |vendor_id: &str, price: serde_json::Value| {
        ApiRequest::fixture("create-bouquet")
            .own_shop(vendor_id)
            .json(json!({ "name": "Tulips", "price": price }))
            .no_idempotency_key()
    };
    let many: Vec<String> = (0..21)
        .map(|i| format!("01JF00000000000000000000{i:02}"))
        .collect();
    let cases = vec![
        case("malformed JSON", "create-order", order_req(json!({})).raw_body("{\"bouquetIds\": ["), 400, "request.invalid", None),
        case("wrong type", "create-order", order_req(json!({ "bouquetIds": "all" })), 400, "request.invalid", Some("bouquetIds")),
        case("missing field", "create-order", order_req(json!({})), 400, "request.invalid", Some("")),
        case("unknown field", "create-order", order_req(json!({ "bouquetIds": [&bouquet], "coupon": "FREE" })), 400, "request.invalid", Some("coupon")),
        case("empty bouquetIds", "create-order", order_req(json!({ "bouquetIds": [] })), 400, "request.invalid", Some("bouquetIds")),
        case("oversized bouquetIds", "create-order", order_req(json!({ "bouquetIds": many })), 400, "request.invalid", Some("bouquetIds")),
        case("duplicate ids", "create-order", order_req(json!({ "bouquetIds": [&bouquet, &bouquet] })), 400, "request.invalid", Some("bouquetIds/1")),
        case("odd characters", "create-order", order_req(json!({ "bouquetIds": ["01JF'; DROP TABLE--000000"] })), 400, "request.invalid", Some("bouquetIds/0")),
        case("lowercase id", "create-order", order_req(json!({ "bouquetIds": [bouquet.to_lowercase()] })), 400, "request.invalid", Some("bouquetIds/0")),
        case("body over the limit", "create-order", order_req(json!({ "bouquetIds": ["x".repeat(20_000)] })), 413, "request.too_large", None),
        case("not JSON media type", "create-order", order_req(json!({ "bouquetIds": [&bouquet] })).header("content-type", "text/plain"), 415, "request.invalid", None),
        case("no body, empty cart", "create-order", order_req(json!({})).no_body(), 409, "cart.empty", None),
        case("bad idempotency key", "create-order", order_req(json!({ "bouquetIds": [&bouquet] })).idempotency_key(&"k".repeat(256)), 400, "request.invalid", Some("Idempotency-Key")),
        case("no token", "create-order", order_req(json!({ "bouquetIds": [&bouquet] })).anonymous(), 401, "auth.unauthenticated", None),
        case("a vendor ordering", "create-order", order_req(json!({ "bouquetIds": [&bouquet] })).vendor(&vendor), 403, "auth.forbidden", None),
        case("unknown currency", "create-bouquet", listing(&vendor, json!({ "amount": "10.00", "currency": "XBT" })), 400, "request.invalid", Some("price.currency")),
        case("three decimals", "create-bouquet", listing(&vendor, json!({ "amount": "10.001", "currency": "EUR" })), 400, "request.invalid", Some("price.amount")),
        case("negative price", "create-bouquet", listing(&vendor, json!({ "amount": "-1.00", "currency": "EUR" })), 400, "request.invalid", Some("price.amount")),
        case("zero price", "create-bouquet", listing(&vendor, json!({ "amount": "0", "currency": "EUR" })), 400, "request.invalid", Some("price.amount")),
        case("price as a number", "create-bouquet", listing(&vendor, json!({ "amount": 10.5, "currency": "EUR" })), 400, "request.invalid", Some("price/amount")),
        case("another vendor's shop", "create-bouquet", listing(&vendor, json!({ "amount": "10.00", "currency": "EUR" })).vendor(&other_vendor), 403, "auth.forbidden", None),
        case("a customer listing", "create-bouquet", listing(&vendor, json!({ "amount": "10.00", "currency": "EUR" })).customer("customer-1"), 403, "auth.forbidden", None),
        case("unknown vendor", "create-bouquet", listing("01JF0000000000000000000000", json!({ "amount": "10.00", "currency": "EUR" })), 404, "not_found", None),
        case("someone else's vase", "create-bouquet", listing(&vendor, json!({ "amount": "10.00", "currency": "EUR" })).json(json!({ "name": "T", "price": { "amount": "1", "currency": "EUR" }, "vaseId": "01JF0000000000000000000000" })), 400, "request.invalid", Some("vaseId")),
        case("empty vendor name", "create-vendor", ApiRequest::fixture("create-vendor").admin().json(json!({ "name": "  " })).no_idempotency_key(), 400, "request.invalid", Some("name")),
        case("a customer onboarding", "create-vendor", ApiRequest::fixture("create-vendor").customer("customer-1").no_idempotency_key(), 403, "auth.forbidden", None),
        case("another customer's order", "get-order", ApiRequest::fixture("get-order").customer("customer-2").order_id(&order_id), 404, "not_found", None),
        case("another vendor's order", "get-order", ApiRequest::fixture("get-order").vendor(&other_vendor).order_id(&order_id), 404, "not_found", None),
        case("odd path id", "get-bouquet", ApiRequest::fixture("get-bouquet").bouquet_id("..%2F..%2Fetc"), 400, "request.invalid", Some("path/bouquetId")),
        case("limit zero", "list-bouquets", ApiRequest::fixture("list-bouquets").query("limit", "0"), 400, "request.invalid", Some("query/limit")),
        case("forged cursor", "list-bouquets", ApiRequest::fixture("list-bouquets").query("cursor", "bm90LWEtY3Vyc29y"), 400, "request.invalid", Some("cursor")),
        case("forged vendor cursor", "list-bouquets", ApiRequest::fixture("list-bouquets").query("vendorId", &vendor).query("cursor", "IjAxSkYnIg"), 400, "request.invalid", Some("cursor")),
        case("bad vendorId filter", "list-bouquets", ApiRequest::fixture("list-bouquets").query("vendorId", "nope"), 400, "request.invalid", Some("query/vendorId")),
        case("patch without If-Match", "update-bouquet", ApiRequest::fixture("update-bouquet").vendor(&vendor).bouquet_id(&bouquet).without_header("if-match"), 428, "precondition.failed", None),
        case("patch a stale version", "update-bouquet", ApiRequest::fixture("update-bouquet").vendor(&vendor).bouquet_id(&bouquet).header("if-match", "\"7\""), 412, "precondition.failed", None),
        case("patch nothing", "update-bouquet", ApiRequest::fixture("update-bouquet").vendor(&vendor).bouquet_id(&bouquet).json(json!({})), 400, "request.invalid", None),
        case("patch another vendor's", "update-bouquet", ApiRequest::fixture("update-bouquet").vendor(&other_vendor).bouquet_id(&bouquet), 403, "auth.forbidden", None),
        case("withdraw another vendor's", "withdraw-bouquet", ApiRequest::fixture("withdraw-bouquet").vendor(&other_vendor).bouquet_id(&bouquet), 403, "auth.forbidden", None),
    ];

    let before = cloud.items().await;
    for case in cases {
        let response = cloud.call(case.binary, case.request).await;
        assert_eq!(
            response.status_and_code(),
            (case.expected.0, Some(case.expected.1)),
            "{}: {}",
            case.name,
            response.body
        );
        assert_eq!(
            response.header("content-type"),
            Some("application/problem+json"),
            "{}",
            case.name
        );
        assert!(
            response.header("x-correlation-id").is_some(),
            "{}",
            case.name
        );
        if let Some(field) = case.field {
            let fields: Vec<&str> = response.body["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["field"].as_str())
                .collect();
            assert!(
                fields.contains(&field),
                "{}: expected an error on {field:?}, got {fields:?}",
                case.name
            );
        }
        assert_eq!(
            cloud.items().await,
            before,
            "{} wrote to the table",
            case.name
        );
    }
}

/// Who may act is decided before the request is judged: a stranger's malformed edit, withdrawal
/// or payment is 403 or 404 (what the contract says for a stranger), not the 400 or 428 its
/// body or `If-Match` would earn the owner; the owner's own malformed request is still 400.
#[tokio::test]
async fn a_strangers_malformed_request_is_refused_as_a_stranger() {
    let (cloud, vendor, other_vendor, bouquet, order_id) = two_shops().await;
    let cases = [
        (
            "update-bouquet",
            ApiRequest::fixture("update-bouquet")
                .vendor(&other_vendor)
                .bouquet_id(&bouquet)
                .header("if-match", "not-a-version")
                .json(json!({ "price": "free" })),
            403,
        ),
        (
            "update-bouquet",
            ApiRequest::fixture("update-bouquet")
                .customer("customer-1")
                .bouquet_id(&bouquet)
                .json(json!({ "bogus": true })),
            403,
        ),
        (
            "withdraw-bouquet",
            ApiRequest::fixture("withdraw-bouquet")
                .vendor(&other_vendor)
                .bouquet_id(&bouquet)
                .header("if-match", "W/\"x\""),
            403,
        ),
        (
            "pay-order",
            ApiRequest::fixture("pay-order")
                .customer("customer-2")
                .order_id(&order_id)
                .json(json!({ "paymentToken": 42 }))
                .no_idempotency_key(),
            404,
        ),
        // The owner's own malformed requests: 400, as before.
        (
            "update-bouquet",
            ApiRequest::fixture("update-bouquet")
                .vendor(&vendor)
                .bouquet_id(&bouquet)
                .header("if-match", "\"1\"")
                .json(json!({ "price": "free" })),
            400,
        ),
        (
            "pay-order",
            ApiRequest::fixture("pay-order")
                .customer("customer-1")
                .order_id(&order_id)
                .json(json!({ "paymentToken": 42 }))
                .no_idempotency_key(),
            400,
        ),
    ];
    let before = cloud.items().await;
    for (binary, request, status) in cases {
        let response = cloud.call(binary, request).await;
        assert_eq!(response.status, status, "{binary}: {}", response.body);
    }
    assert_eq!(cloud.items().await, before, "nothing written");
}
