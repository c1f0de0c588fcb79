//! Closed to abuse and complete in privacy (issue 38), through the function binaries'
//! handlers: idempotency records keep no personal data and a replay shows the order as it is
//! now; card testing and reservation churn answer 429 with `Retry-After`; every answer carries
//! the security headers.

use std::time::Duration;

use serde_json::{json, Value};

use system_tests::{
    by_customer, fixture, verified_email, ApiRequest, ApiResponse, Outcome, PathParams, TestCloud,
};

/// The personal fields of `system_tests::delivery_details` and the paid order's contact.
fn carries_details(text: &str) -> bool {
    [
        "Camille",
        "+33",
        "Fleurs",
        "Happy birthday",
        "ana@example.com",
    ]
    .iter()
    .any(|personal| text.contains(personal))
}

/// A new shop with one bouquet, reserved by `customer`: the shop and the order.
async fn reserved_order(cloud: &TestCloud, customer: &str) -> (String, String) {
    let vendor = cloud.vendor("Fleur").await;
    let bouquet = cloud.bouquet(&vendor, "30.00").await;
    let order = cloud.reserve(customer, &[&bouquet]).await;
    assert_eq!(order.status, 201, "{}", order.body);
    let order_id = order.body["orderId"].as_str().unwrap().to_owned();
    (vendor, order_id)
}

/// `order_id` as `customer` reads it.
async fn order_of(cloud: &TestCloud, customer: &str, order_id: &str) -> system_tests::ApiResponse {
    cloud
        .send(by_customer("get-order", customer).order_id(order_id))
        .await
}

/// `response` is a 400 whose first error is about `field`.
#[track_caller]
fn assert_refused_on(response: &ApiResponse, field: &str) {
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(
        response.body["errors"][0]["field"], field,
        "{}",
        response.body
    );
}

#[tokio::test]
async fn idempotency_records_keep_no_personal_data_and_replays_after_erasure_show_none() {
    let cloud = TestCloud::new().await;
    let (vendor, order_id) = reserved_order(&cloud, "ana").await;
    let tomorrow =
        bouquet_app::domain::delivery::date_after(cloud.app.clock.now(), 1, "UTC").unwrap();
    let details = system_tests::delivery_details(&tomorrow);
    let give = ApiRequest::fixture("put-order-delivery")
        .customer("ana")
        .order_id(&order_id)
        .header("if-match", "\"1\"")
        .json(details);
    let given = cloud.call("put-order-delivery", give.clone()).await;
    assert_eq!(given.status, 200, "{}", given.body);
    let pay = ApiRequest::fixture("pay-order")
        .customer("ana")
        .order_id(&order_id)
        .json(json!({ "paymentToken": "tok_visa" }))
        .idempotency_key("pay-1");
    let paid = cloud.call("pay-order", pay.clone()).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert!(
        carries_details(&paid.body.to_string()),
        "the first answer is whole"
    );
    let fulfil = ApiRequest::fixture("fulfil-order")
        .vendor(&vendor)
        .order_id(&order_id)
        .idempotency_key("fulfil-1");
    let delivered = cloud.call("fulfil-order", fulfil.clone()).await;
    assert_eq!(delivered.status, 200, "{}", delivered.body);

    // Every copy the keys left: none carries a detail.
    let records = cloud.items_of("idempotency").await;
    assert_eq!(
        records.len(),
        2,
        "the payment's and the delivery's: {records:?}"
    );
    for record in &records {
        assert!(!carries_details(&format!("{record:?}")), "{record:?}");
    }
    // A replay before erasure: the order as the caller may see it now, details included.
    let replayed = cloud.call("pay-order", pay.clone()).await;
    assert_eq!(
        (replayed.status, replayed.header("idempotent-replayed")),
        (200, Some("true"))
    );
    assert_eq!(replayed.body["status"], "fulfilled", "as it is now");
    assert_eq!(
        replayed.body["delivery"]["recipientName"], "Camille Martin",
        "its customer reads its details"
    );

    // Its proof of delivery in the upload bucket (two sizes), and another order's.
    let uploads = cloud.photos().await.uploads.clone();
    let photo = |order: &str, width: u32| {
        format!("delivered/{order}/01JF0000000000000000000000/{width}.jpg")
    };
    let other_order = "01JF0000000000000000000001";
    for key in [
        photo(&order_id, 320),
        photo(&order_id, 640),
        photo(other_order, 640),
    ] {
        cloud
            .s3
            .put_object()
            .bucket(&uploads)
            .key(key)
            .body(vec![0xff, 0xd8].into())
            .send()
            .await
            .expect("the emulator keeps the photo");
    }
    let exists = |key: String| {
        let (s3, bucket) = (cloud.s3.clone(), uploads.clone());
        async move {
            s3.head_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .is_ok()
        }
    };

    let erased = cloud.send(by_customer("erase-personal-data", "ana")).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    // Issue 51: erasure deletes the ended order's delivery photos (S3), only its own.
    assert!(!exists(photo(&order_id, 320)).await && !exists(photo(&order_id, 640)).await);
    assert!(
        exists(photo(other_order, 640)).await,
        "another order's photo stays"
    );
    for (who, binary, request) in [
        ("the customer's payment", "pay-order", pay),
        ("the vendor's delivery", "fulfil-order", fulfil),
    ] {
        let replay = cloud.call(binary, request).await;
        assert_eq!(
            (replay.status, replay.header("idempotent-replayed")),
            (200, Some("true")),
            "{who}: {}",
            replay.body
        );
        assert!(
            !carries_details(&replay.body.to_string()),
            "{who}: {}",
            replay.body
        );
        assert_eq!(
            replay.body["delivery"]["recipientName"], "[redacted]",
            "{who}"
        );
    }
}

#[tokio::test]
async fn details_replaced_after_a_keyed_payment_are_not_kept_by_its_record() {
    let cloud = TestCloud::new().await;
    let (_, order_id) = reserved_order(&cloud, "ana").await;
    let pay = ApiRequest::fixture("pay-order")
        .customer("ana")
        .order_id(&order_id)
        .json(json!({ "paymentToken": "tok_visa" }))
        .idempotency_key("pay-1");
    cloud.give_delivery("ana", &order_id).await;
    assert_eq!(cloud.call("pay-order", pay.clone()).await.status, 200);
    // Paid, not yet accepted: the customer corrects the recipient.
    let paid = order_of(&cloud, "ana", &order_id).await;
    let version = paid.body["version"].as_u64().unwrap();
    let tomorrow =
        bouquet_app::domain::delivery::date_after(cloud.app.clock.now(), 1, "UTC").unwrap();
    let mut corrected: Value = system_tests::delivery_details(&tomorrow);
    corrected["recipient"]["name"] = json!("Dominique Roux");
    let changed = cloud
        .send(
            by_customer("put-order-delivery", "ana")
                .order_id(&order_id)
                .header("if-match", &format!("\"{version}\""))
                .json(corrected),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let replay = cloud.call("pay-order", pay).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        replay.body["delivery"]["recipientName"].as_str(),
        Some("Dominique Roux"),
        "the replay shows what the order holds now, not the replaced name: {}",
        replay.body
    );
    for record in cloud.items_of("idempotency").await {
        assert!(!format!("{record:?}").contains("Camille"), "{record:?}");
    }
}

#[tokio::test]
async fn a_declining_card_past_the_bound_is_429_with_retry_after_and_the_order_pays_once_it_ends() {
    let cloud = TestCloud::new().await;
    let (vendor, order_id) = reserved_order(&cloud, "mallory").await;
    let per_order = cloud.app.config.declines_per_order;
    for attempt in 1..=per_order {
        let declined = cloud.pay("mallory", &order_id, "tok_decline", None).await;
        assert_eq!(
            declined.status_and_code(),
            (402, Some("payment.declined")),
            "attempt {attempt}"
        );
    }
    let locked = cloud.pay_by_card("mallory", &order_id).await;
    locked.assert_code(429, "payment.attempts_exceeded");
    let retry_after: u64 = locked
        .header("retry-after")
        .and_then(|s| s.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=600).contains(&retry_after), "{retry_after}");
    // The refused attempt reached no gateway: the order is as the last decline left it.
    let read = order_of(&cloud, "mallory", &order_id).await;
    assert_eq!(
        (
            read.body["status"].as_str(),
            read.body["paymentAttempt"].as_u64()
        ),
        (Some("reserved"), Some(u64::from(per_order))),
        "{}",
        read.body
    );
    // Another customer pays meanwhile: the limit is the order's and its customer's.
    let other = cloud.paid_order(&vendor, "ana").await;
    assert_eq!(cloud.order_status(&other).await.as_deref(), Some("paid"));

    cloud.clock.advance(Duration::from_secs(retry_after));
    let paid = cloud.pay_by_card("mallory", &order_id).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
}

#[tokio::test]
async fn reservations_past_the_minutes_bound_are_429_rate_limited() {
    let (cloud, vendor) = TestCloud::with_vendor("Fleur").await;
    let per_minute = cloud.app.config.reservations_per_minute;
    let mut refused = None;
    for n in 0..=per_minute {
        let bouquet = cloud.bouquet(&vendor, "5.00").await;
        let order = cloud.reserve("churner", &[&bouquet]).await;
        if n < per_minute {
            assert_eq!(order.status, 201, "reservation {n}: {}", order.body);
            let id = order.body["orderId"].as_str().unwrap().to_owned();
            let cancelled = cloud
                .send(by_customer("cancel-order", "churner").order_id(&id))
                .await;
            assert_eq!(cancelled.status, 200, "{}", cancelled.body);
        } else {
            refused = Some((order, bouquet));
        }
    }
    let (order, bouquet) = refused.unwrap();
    order.assert_code(429, "rate.limited");
    assert!(order.header("retry-after").is_some());
    assert_eq!(
        cloud.bouquet_status(&bouquet).await.as_deref(),
        Some("available")
    );
    let other = cloud.reserve("ana", &[&bouquet]).await;
    assert_eq!(other.status, 201, "another customer is not limited");
}

#[tokio::test]
async fn every_answer_carries_the_security_headers_and_a_cache_policy() {
    let (cloud, vendor) = TestCloud::with_vendor("Fleur").await;
    let order = cloud.paid_order(&vendor, "ana").await;
    for (what, binary, request, cache) in [
        (
            "an order",
            "get-order",
            ApiRequest::fixture("get-order")
                .customer("ana")
                .order_id(&order),
            "no-store",
        ),
        (
            "a problem",
            "get-order",
            ApiRequest::fixture("get-order")
                .customer("ben")
                .order_id(&order),
            "no-store",
        ),
        (
            "the public catalogue",
            "list-bouquets",
            ApiRequest::fixture("list-bouquets").anonymous(),
            "public",
        ),
    ] {
        let answer = cloud.call(binary, request).await;
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
            "{what}"
        );
        assert!(
            answer
                .header("strict-transport-security")
                .is_some_and(|h| h.starts_with("max-age=")),
            "{what}"
        );
        assert!(
            answer
                .header("cache-control")
                .is_some_and(|h| h.contains(cache)),
            "{what}: {:?}",
            answer.header("cache-control")
        );
    }
}

/// Mail goes only to addresses a sign-in verified: a shop's contact is its member's, a
/// customer's is their own; a typed stranger's address is a field error and nothing is saved.
#[tokio::test]
async fn a_shops_contact_address_is_its_members_verified_one_private_and_kept_on_a_save_without_it()
{
    let cloud = TestCloud::new().await;
    let shop = cloud.vendor("Fleur").await;
    let member = verified_email(&format!("user-of-{shop}"));
    let mut settings = json!({"countries": ["FR"], "postcodePrefixes": ["75", "92"],
        "days": ["tuesday", "wednesday", "thursday", "friday", "saturday"], "horizonDays": 14,
        "sameDayCutoff": "11:00", "timeZone": "Europe/Paris"});
    let save = |settings: Value, version: u64| {
        let request = ApiRequest::fixture("put-delivery-settings")
            .own_shop(&shop)
            .json(settings);
        if version == 0 {
            request
        } else {
            request.header("if-match", &format!("\"{version}\""))
        }
    };
    settings["contactEmail"] = json!("orders@fleur.example");
    let stranger = cloud
        .call("put-delivery-settings", save(settings.clone(), 0))
        .await;
    assert_refused_on(&stranger, "contactEmail");
    settings["contactEmail"] = json!(member);
    let saved = cloud
        .call("put-delivery-settings", save(settings.clone(), 0))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(
        saved.body["contactEmail"],
        member.as_str(),
        "the shop reads its own"
    );
    let public = cloud
        .send(
            fixture("get-delivery-settings")
                .anonymous()
                .vendor_id(&shop),
        )
        .await;
    assert_eq!(public.status, 200, "{}", public.body);
    assert!(
        !public.body.to_string().contains(&member),
        "{}",
        public.body
    );
    assert_eq!(public.body["contactEmailSet"], true);
    // The console saves without the address it never read: the saved one stays.
    settings.as_object_mut().unwrap().remove("contactEmail");
    let kept = cloud.call("put-delivery-settings", save(settings, 1)).await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(kept.body["contactEmail"], member.as_str());

    // A customer's receipts (at a shop without settings): to another address refused, to
    // their own taken.
    let anywhere = cloud.vendor("Anywhere").await;
    let bouquet = cloud.bouquet(&anywhere, "30.00").await;
    let order = cloud.reserve("ana", &[&bouquet]).await;
    let order_id = order.body["orderId"].as_str().expect("reserved");
    let tomorrow =
        bouquet_app::domain::delivery::date_after(cloud.app.clock.now(), 1, "UTC").unwrap();
    let mut details = system_tests::delivery_details(&tomorrow);
    let give = |details: Value| {
        ApiRequest::fixture("put-order-delivery")
            .customer("ana")
            .order_id(order_id)
            .header("if-match", "\"1\"")
            .json(details)
    };
    details["contactEmail"] = json!("someone@elsewhere.example");
    let refused = cloud
        .call("put-order-delivery", give(details.clone()))
        .await;
    assert_refused_on(&refused, "delivery.contactEmail");
    details["contactEmail"] = json!(verified_email("ana"));
    let given = cloud.call("put-order-delivery", give(details)).await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert_eq!(given.body["delivery"]["contactEmail"], "ana@example.com");
}

/// The edge's web ACL, as the dev stack enforces it from the template: one address past its
/// rate gets WAF's 429 with Retry-After while another address's requests pass.
#[tokio::test]
async fn one_address_past_the_edges_rate_is_429_while_another_address_passes() {
    let cloud = TestCloud::new().await;
    let api = cloud.limited_edge_api(&["EdgeRequestsPerIpPerMinute=20"]);
    let browse = |ip: &str| devstack::apigw::Incoming {
        method: "GET".into(),
        path: "/v1/bouquets".into(),
        source_ip: ip.into(),
        ..devstack::apigw::Incoming::default()
    };
    for n in 0..20 {
        let (status, _, _) = api.handle(browse("203.0.113.1")).await;
        assert_eq!(status, 200, "request {n}");
    }
    let (status, headers, body) = api.handle(browse("203.0.113.1")).await;
    assert_eq!(status, 429);
    assert!(
        headers.contains(&("retry-after".to_owned(), "60".to_owned())),
        "{headers:?}"
    );
    assert_eq!(body, br#"{"message":"Too Many Requests"}"#);
    let (other, _, _) = api.handle(browse("198.51.100.2")).await;
    assert_eq!(other, 200, "another address is not limited");
}

/// The expensive routes' own throttle (the stage's RouteSettings), for all callers together:
/// past its burst, API Gateway's 429 before any function runs; other routes pass.
#[tokio::test]
async fn the_checkout_routes_have_their_own_throttle() {
    let cloud = TestCloud::new().await;
    let api = cloud.limited_edge_api(&["CheckoutRateLimit=1", "CheckoutBurstLimit=2"]);
    let request = |method: &str, path: &str, ip: &str| devstack::apigw::Incoming {
        method: method.into(),
        path: path.into(),
        source_ip: ip.into(),
        ..devstack::apigw::Incoming::default()
    };
    let before = api.invocations();
    let statuses: Vec<u16> = futures::future::join_all(
        (0..4).map(|n| api.handle(request("POST", "/v1/orders", &format!("203.0.113.{n}")))),
    )
    .await
    .into_iter()
    .map(|(status, _, _)| status.as_u16())
    .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        2,
        "a burst of two: {statuses:?}"
    );
    let (browse, _, _) = api
        .handle(request("GET", "/v1/bouquets", "203.0.113.9"))
        .await;
    assert_eq!(browse, 200);
    assert_eq!(
        api.invocations() - before,
        1,
        "the throttled and the unauthorized ran no function"
    );
}
