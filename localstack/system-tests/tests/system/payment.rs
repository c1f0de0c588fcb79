//! Payment: claim before charge, one charge per attempt whatever fails, races decided by
//! conditions. The simulated gateway counts the charges it made.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use bouquet_app::payments::{
    ChargeOutcome, ChargeRequest, GatewayError, PaymentGateway, SimulatedGateway,
};
use system_tests::{
    by_customer, delivery_details, fixture, ApiRequest, ApiResponse, Outcome, PathParams, TestCloud,
};

async fn reserved_order(cloud: &TestCloud, customer: &str) -> (String, String) {
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let order = cloud.reserve(customer, &[&bouquet]).await;
    assert_eq!(order.status, 201);
    let order_id = order.body["orderId"].as_str().unwrap().to_owned();
    assert_eq!(cloud.give_delivery(customer, &order_id).await.status, 200);
    (order_id, bouquet)
}

/// A cloud paying through `gateway`, and a [`reserved_order`] of customer-1 on it.
async fn reserved_with(gateway: Arc<dyn PaymentGateway>) -> (TestCloud, String, String) {
    let cloud = TestCloud::new().await.with_gateway(gateway);
    let (order, bouquet) = reserved_order(&cloud, "customer-1").await;
    (cloud, order, bouquet)
}

/// customer-1 pays `order` with the card `token`, under the idempotency key `key`.
async fn customer_pays(cloud: &TestCloud, order: &str, token: &str, key: &str) -> ApiResponse {
    cloud.pay("customer-1", order, token, Some(key)).await
}

/// customer-1's request to pay `order`, as the fixture has it.
fn pay_request(order: &str) -> ApiRequest {
    ApiRequest::fixture("pay-order")
        .customer("customer-1")
        .order_id(order)
}

/// `request` on a [`CrashAfterCharge`] gateway: charged, then cut off by its deadline.
async fn pay_until_the_crash(cloud: &TestCloud, request: &ApiRequest) -> ApiResponse {
    let cut_off = request.clone().deadline_in(Duration::from_millis(800));
    cloud.call("pay-order", cut_off).await
}

#[tokio::test]
async fn paying_sells_the_bouquets_once_and_paying_again_returns_the_order() {
    let gateway = Arc::new(SimulatedGateway::new());
    let (cloud, order, bouquet) = reserved_with(gateway.clone()).await;
    let paid = customer_pays(&cloud, &order, "tok_visa", "pay-1").await;
    paid.assert_state(200, "paid");
    assert!(paid.body["chargeId"]
        .as_str()
        .is_some_and(|c| c.starts_with("ch_")));
    cloud.assert_bouquet_status(&bouquet, "sold").await;
    let replay = customer_pays(&cloud, &order, "tok_visa", "pay-1").await;
    assert_eq!(
        (replay.status, replay.header("idempotent-replayed")),
        (200, Some("true"))
    );
    let again = cloud.pay_by_card("customer-1", &order).await;
    assert_eq!(again.status_and_state(), (200, Some("paid")));
    assert_eq!(gateway.charges_made(), 1);
    assert_eq!(cloud.event_count("OrderPaid").await, 1);
    let listed = cloud.send(fixture("list-bouquets")).await;
    assert_eq!(
        listed.body["items"],
        json!([]),
        "a sold bouquet leaves the catalogue"
    );
}

#[tokio::test]
async fn a_declined_payment_returns_the_order_to_reserved_and_a_new_card_pays() {
    let gateway = Arc::new(SimulatedGateway::new());
    let (cloud, order, _) = reserved_with(gateway.clone()).await;
    let declined = customer_pays(&cloud, &order, "tok_decline", "try-1").await;
    assert_eq!(declined.status_and_code(), (402, Some("payment.declined")));
    cloud.assert_order_status(&order, "reserved").await;
    let paid = customer_pays(&cloud, &order, "tok_visa", "try-2").await;
    paid.assert_state(200, "paid");
    assert_eq!(gateway.charges_made(), 1);
}

#[tokio::test]
async fn an_expired_hold_is_not_charged() {
    let gateway = Arc::new(SimulatedGateway::new());
    let (cloud, order, _) = reserved_with(gateway.clone()).await;
    cloud.clock.advance(Duration::from_secs(15 * 60 + 1));
    let before = cloud.items().await;
    let late = customer_pays(&cloud, &order, "tok_visa", "late").await;
    assert_eq!(late.status_and_code(), (409, Some("reservation.expired")));
    assert_eq!(gateway.charges_made(), 0);
    assert_eq!(cloud.items().await, before);
}

#[tokio::test]
async fn a_gateway_timeout_keeps_the_attempt_and_a_retry_charges_once() {
    let gateway = Arc::new(SimulatedGateway::new());
    let (cloud, order, _) = reserved_with(gateway.clone()).await;
    let timeout = customer_pays(&cloud, &order, "tok_timeout", "k").await;
    assert_eq!(
        timeout.status_and_code(),
        (503, Some("payment.unavailable"))
    );
    assert_eq!(
        cloud.order_status(&order).await.as_deref(),
        Some("payment_pending"),
        "it may have been charged"
    );
    let retry = customer_pays(&cloud, &order, "tok_timeout", "k").await;
    assert_eq!(retry.status, 503, "the same attempt again");
    let other_card = customer_pays(&cloud, &order, "tok_visa", "k2").await;
    other_card.assert_state(200, "paid");
    assert_eq!(
        gateway.charges_made(),
        1,
        "the retry returned the first charge"
    );
}

/// Charges, then never answers: the process "dies" between the charge and its commit.
struct CrashAfterCharge(Arc<SimulatedGateway>);

#[async_trait::async_trait]
impl PaymentGateway for CrashAfterCharge {
    fn provider(&self) -> &'static str {
        self.0.provider()
    }
    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        let _ = self.0.charge(request).await;
        futures::future::pending().await
    }
    async fn lookup(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        self.0.lookup(key).await
    }
    async fn refund(
        &self,
        key: &str,
        charge_id: &str,
        transferred: bool,
    ) -> Result<(), GatewayError> {
        self.0.refund(key, charge_id, transferred).await
    }
}

/// [`reserved_with`] a [`CrashAfterCharge`] gateway; returns the simulated gateway behind it
/// too, which counts the charges and which a healthy container pays with.
async fn reserved_with_a_crash() -> (Arc<SimulatedGateway>, TestCloud, String, String) {
    let gateway = Arc::new(SimulatedGateway::new());
    let crashing = Arc::new(CrashAfterCharge(gateway.clone()));
    let (cloud, order, bouquet) = reserved_with(crashing).await;
    (gateway, cloud, order, bouquet)
}

#[tokio::test]
async fn a_crash_between_charge_and_commit_is_completed_by_a_retry_with_one_charge() {
    let (gateway, cloud, order, bouquet) = reserved_with_a_crash().await;
    let request = pay_request(&order).idempotency_key("pay-once");
    let crashed = pay_until_the_crash(&cloud, &request).await;
    assert_eq!(crashed.status_and_code(), (503, Some("deadline.exceeded")));
    assert_eq!(gateway.charges_made(), 1);
    cloud.assert_order_status(&order, "payment_pending").await;

    // The same request, on a healthy container: within the lease it is in progress...
    let cloud = cloud.with_gateway(gateway.clone());
    let soon = cloud.call("pay-order", request.clone()).await;
    assert_eq!(
        soon.status_and_code(),
        (409, Some("idempotency.in_progress"))
    );
    let other_request = cloud.pay_by_card("customer-1", &order).await;
    assert_eq!(
        other_request.status_and_code(),
        (409, Some("order.invalid_state")),
        "another payment request while one is in progress"
    );
    // ...after it, the attempt is taken over and the charge repeated under the same key.
    cloud.clock.advance(Duration::from_secs(61));
    let retried = cloud.call("pay-order", request).await;
    retried.assert_state(200, "paid");
    assert_eq!(gateway.charges_made(), 1, "charged once");
    cloud.assert_bouquet_status(&bouquet, "sold").await;
}

#[tokio::test]
async fn a_crash_between_charge_and_commit_is_completed_by_the_sweeper() {
    let (gateway, cloud, order, bouquet) = reserved_with_a_crash().await;
    let request = pay_request(&order);
    assert_eq!(pay_until_the_crash(&cloud, &request).await.status, 503);
    let cloud = cloud.with_gateway(gateway.clone());
    // Not due while the attempt's lease runs (the attempt may still answer)...
    cloud.clock.advance(Duration::from_secs(59));
    assert_eq!(cloud.run_scheduled("expire-reservations").await["due"], 0);
    // ...and resolved by the first sweep after it (every minute), not at the hold's end: the
    // charged customer waits at most two minutes past the lease.
    cloud.clock.advance(Duration::from_secs(2));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsCompleted"], 1, "{report}");
    cloud.assert_order_status(&order, "paid").await;
    cloud.assert_bouquet_status(&bouquet, "sold").await;
    assert_eq!(gateway.charges_made(), 1);
}

#[tokio::test]
async fn an_interrupted_attempt_that_charged_nothing_is_released_by_the_sweeper() {
    let gateway = Arc::new(SimulatedGateway::new());
    let (cloud, order, bouquet) = reserved_with(gateway.clone()).await;
    assert_eq!(
        cloud
            .pay("customer-1", &order, "tok_unavailable", None)
            .await
            .code(),
        Some("payment.unavailable")
    );
    // The attempt gave up its lease: the next sweep asks the gateway and, nothing charged,
    // gives the reservation back to its customer (its hold runs on)...
    cloud.clock.advance(Duration::from_secs(1));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsReleased"], 1, "{report}");
    cloud.assert_order_status(&order, "reserved").await;
    // ...until its own deadline.
    cloud.clock.advance(Duration::from_secs(16 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["expired"], 1, "{report}");
    cloud.assert_order_status(&order, "expired").await;
    cloud.assert_bouquet_status(&bouquet, "available").await;
    assert_eq!(gateway.charges_made(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pay_and_cancel_at_once_exactly_one_wins() {
    for round in 0..5 {
        let gateway = Arc::new(SimulatedGateway::with_latency(Duration::from_millis(20)));
        let (cloud, order, bouquet) = reserved_with(gateway.clone()).await;
        let (pay, cancel) = tokio::join!(
            cloud.pay_by_card("customer-1", &order),
            cloud.send(by_customer("cancel-order", "customer-1").order_id(&order)),
        );
        let final_status = cloud.order_status(&order).await;
        match (pay.status, cancel.status) {
            (200, 409) => {
                assert_eq!(final_status.as_deref(), Some("paid"));
                cloud.assert_bouquet_status(&bouquet, "sold").await;
                assert_eq!(gateway.charges_made(), 1);
            }
            (409, 200) => {
                assert_eq!(final_status.as_deref(), Some("cancelled"));
                cloud.assert_bouquet_status(&bouquet, "available").await;
                assert_eq!(
                    gateway.charges_made(),
                    0,
                    "a cancelled order is never charged"
                );
            }
            other => panic!("round {round}: {other:?} {} {}", pay.body, cancel.body),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pay_and_expiry_at_the_deadline_never_both_happen() {
    for round in 0..5 {
        let gateway = Arc::new(SimulatedGateway::with_latency(Duration::from_millis(10)));
        let (cloud, order, bouquet) = reserved_with(gateway.clone()).await;
        let deadline = system_tests::T0.plus(Duration::from_secs(15 * 60));
        // The payment runs at the deadline (still valid), the sweeper 1 ms after it (due).
        let payer = cloud.app_at(deadline).with_payments(gateway.clone());
        let sweeper = cloud
            .app_at(deadline.plus(Duration::from_millis(1)))
            .with_payments(gateway.clone());
        let request = pay_request(&order).no_idempotency_key();
        let (pay, report) = tokio::join!(
            cloud.call_with(payer, "pay-order", request),
            cloud.run_scheduled_with("expire-reservations", sweeper)
        );
        let order_status = cloud.order_status(&order).await.unwrap();
        let bouquet_status = cloud.bouquet_status(&bouquet).await.unwrap();
        match order_status.as_str() {
            "paid" => {
                assert_eq!(
                    (
                        pay.status,
                        bouquet_status.as_str(),
                        report["expired"].as_u64()
                    ),
                    (200, "sold", Some(0)),
                    "round {round}"
                );
                assert_eq!(gateway.charges_made(), 1);
            }
            "expired" => {
                assert_eq!(
                    (pay.status, pay.code(), bouquet_status.as_str()),
                    (409, Some("reservation.expired"), "available"),
                    "round {round}: {}",
                    pay.body
                );
                assert_eq!(
                    gateway.charges_made(),
                    0,
                    "an expired order is never charged"
                );
            }
            other => panic!(
                "round {round}: order {other}, pay {} {}, sweep {report}",
                pay.status, pay.body
            ),
        }
    }
}

/// Sends `request`, asserting it succeeds (200).
async fn sent_ok(cloud: &TestCloud, request: ApiRequest) {
    let answer = cloud.send(request).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[tokio::test]
async fn dynamodb_calls_per_operation() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [a, b] = cloud.bouquets(&vendor, ["10.00", "10.00"]).await;

    cloud.calls.reset();
    sent_ok(&cloud, by_customer("put-cart-item", "c").bouquet_id(&a)).await;
    cloud.assert_calls(
        &[("GetItem", 1), ("UpdateItem", 1), ("BatchGetItem", 1)],
        "add to cart (read bouquet, conditional update, cart view)",
    );

    cloud.calls.reset();
    let order = cloud.reserve_cart("c", "k").await;
    assert_eq!(order.status, 201);
    cloud.assert_calls(
        &[("BatchGetItem", 2), ("TransactWriteItems", 1)],
        "reserve the cart",
    );
    let order_id = order.body["orderId"].as_str().unwrap().to_owned();

    cloud.calls.reset();
    let tomorrow =
        bouquet_app::domain::delivery::date_after(cloud.app.clock.now(), 1, "UTC").unwrap();
    let delivery = by_customer("put-order-delivery", "c")
        .order_id(&order_id)
        .header("if-match", "\"1\"")
        .json(delivery_details(&tomorrow))
        .idempotency_key("d");
    sent_ok(&cloud, delivery).await;
    cloud.assert_calls(
        &[
            ("BatchGetItem", 1),
            ("GetItem", 1),
            ("TransactWriteItems", 1),
        ],
        "delivery details: read the order and the key, the shop's settings, write",
    );

    let pay = by_customer("pay-order", "c")
        .order_id(&order_id)
        .json(json!({ "paymentToken": "tok_visa" }))
        .idempotency_key("p");
    cloud.calls.reset();
    sent_ok(&cloud, pay.clone()).await;
    cloud.assert_calls(&[
            ("BatchGetItem", 1),
            ("GetItem", 3),
            ("TransactWriteItems", 2),
            ("PutItem", 1)
        ], "pay: read, the shop's settings (the delivery date still taken) and the shop (its payout account, the charge's destination) side by side, claim, the simulated gateway's charge (its ledger's item), the shop's invoice sequence (its last number), commit with the next");

    cloud.calls.reset();
    let replayed = cloud.send(pay).await;
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    cloud.assert_calls(&[("BatchGetItem", 1), ("GetItem", 1)], "pay replay: the key's record (which keeps no personal data), then the order as the caller may see it now");

    let other = cloud.reserved_order_id("d", &[&b]).await;
    cloud.calls.reset();
    sent_ok(&cloud, by_customer("cancel-order", "d").order_id(&other)).await;
    cloud.assert_calls(&[("GetItem", 1), ("TransactWriteItems", 1)], "cancel");
}

#[tokio::test]
async fn a_charge_whose_bouquets_were_lost_after_a_crash_is_refunded_by_the_sweeper() {
    let (gateway, cloud, order, bouquet) = reserved_with_a_crash().await;
    let request = pay_request(&order).idempotency_key("lost");
    assert_eq!(pay_until_the_crash(&cloud, &request).await.status, 503);
    let cloud = cloud.with_gateway(gateway.clone());
    // Hold and lease long gone: another customer takes the bouquet before anyone resolves it.
    cloud.clock.advance(Duration::from_secs(16 * 60));
    let other = cloud.reserve("customer-2", &[&bouquet]).await;
    assert_eq!(other.status, 201, "{}", other.body);
    let retried = cloud.call("pay-order", request).await;
    assert_eq!(
        retried.status_and_code(),
        (409, Some("reservation.expired"))
    );
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsReleased"], 1, "{report}");
    cloud.assert_order_status(&order, "expired").await;
    assert_eq!(gateway.refunds().len(), 1, "the charge was refunded");
    assert_eq!(
        cloud.bouquet_status(&bouquet).await.as_deref(),
        Some("reserved"),
        "still the other customer's"
    );
}

/// The simulated gateway's ledger is the table: a charge the real `pay-order` binary made
/// (then timed out on) is found by the sweeper running in another process, which completes
/// the order with that charge instead of releasing it.
#[tokio::test]
async fn a_charge_made_by_the_pay_binary_is_found_by_the_sweeper_in_another_process() {
    use bouquet_app::domain::{Clock, SystemClock};
    use bouquet_app::payments::TableLedger;
    use devstack::runtime_api::{http_response, FunctionProcess};

    let cloud = TestCloud::new().await;
    // The binary runs on the wall clock; so does this side until the sweep.
    cloud.clock.set(SystemClock.now());
    let (order, bouquet) = reserved_order(&cloud, "customer-1").await;

    let pay = FunctionProcess::spawn(
        &system_tests::function_binary("pay-order"),
        "pay-order",
        &cloud.function_env("pay-order"),
    )
    .await
    .expect("spawn pay-order");
    assert!(pay.init_duration(Duration::from_secs(20)).await.is_some());
    let request = pay_request(&order).json(json!({ "paymentToken": "tok_timeout" }));
    let payload = pay
        .api
        .invoke(request.event().clone(), Duration::from_secs(10))
        .await
        .expect("invoke");
    pay.stop().await;
    let (status, _, body) = http_response(&payload);
    assert_eq!(status.as_u16(), 503, "{}", String::from_utf8_lossy(&body));
    cloud.assert_order_status(&order, "payment_pending").await;

    // Another container: a gateway of its own over the same table.
    let ledger =
        SimulatedGateway::with_ledger(TableLedger::new(cloud.client.clone(), cloud.table.clone()));
    let key = format!("{order}-0");
    let Ok(Some(ChargeOutcome::Approved { charge_id })) = ledger.lookup(&key).await else {
        panic!("the binary's charge is in the table under {key}");
    };
    assert!(
        matches!(SimulatedGateway::new().lookup(&key).await, Ok(None)),
        "a ledger in memory would not know it"
    );
    let cloud = cloud.with_gateway(Arc::new(ledger));
    cloud.clock.advance(Duration::from_secs(16 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsCompleted"], 1, "{report}");
    assert_eq!(report["paymentsReleased"], 0, "{report}");
    let order_pk = aws_sdk_dynamodb::types::AttributeValue::S(format!("ORDER#{order}"));
    let paid = cloud
        .items()
        .await
        .into_iter()
        .find(|item| item.get("pk") == Some(&order_pk))
        .expect("the order item");
    let text = |name: &str| paid.get(name).and_then(|v| v.as_s().ok()).cloned();
    assert_eq!(text("status").as_deref(), Some("paid"));
    assert_eq!(
        text("chargeId"),
        Some(charge_id),
        "the binary's charge, not a new one"
    );
    cloud.assert_bouquet_status(&bouquet, "sold").await;
}

/// Stripe's secret key comes from an SSM SecureString parameter, read once when the gateway
/// is built, and never shows in what the gateway prints.
#[tokio::test]
async fn the_stripe_key_is_read_from_its_ssm_parameter_and_never_printed() {
    use bouquet_app::payments::stripe::StripeGateway;
    let sdk = system_tests::emulator_sdk_config().await;
    let name = format!("/bouquet-test/{}/stripe/secret-key", ulid::Ulid::new());
    let secret = format!("sk_test_{}", ulid::Ulid::new());
    aws_sdk_ssm::Client::new(&sdk)
        .put_parameter()
        .name(&name)
        .value(&secret)
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    let gateway = StripeGateway::from_parameter(&sdk, &name, "https://api.stripe.com")
        .await
        .expect("the parameter is read");
    assert_eq!(gateway.provider(), "stripe");
    assert!(!format!("{gateway:?}").contains(&secret));
    let missing =
        StripeGateway::from_parameter(&sdk, &format!("{name}-missing"), "https://api.stripe.com")
            .await;
    assert!(
        missing.is_err(),
        "a missing parameter fails the container's start"
    );
}
