//! Stripe's webhook (`payment-webhook`) and 3-D Secure: the pay route answers 202 while the
//! customer authenticates; the webhook settles the attempt, once, whatever order or how many
//! times its events arrive; forged, stale or unsigned deliveries change nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use bouquet_app::domain::Clock;
use bouquet_app::payments::stripe_webhook::sign;
use bouquet_app::payments::{ChargeOutcome, ChargeRequest, GatewayError, PaymentGateway};
use system_tests::{ApiRequest, ApiResponse, Outcome, TestCloud, WEBHOOK_SECRET};

/// A PSP whose cards all need 3-D Secure: a charge is `requires_action`; what the customer
/// then does is set by the test (`complete`), as Stripe would learn it.
#[derive(Default)]
struct ThreeDSecure {
    settled: Mutex<HashMap<String, ChargeOutcome>>,
    refunded: Mutex<Vec<String>>,
}

impl ThreeDSecure {
    fn complete(&self, key: &str, outcome: ChargeOutcome) {
        self.settled.lock().unwrap().insert(key.to_owned(), outcome);
    }
}

#[async_trait::async_trait]
impl PaymentGateway for ThreeDSecure {
    fn provider(&self) -> &'static str {
        "stripe"
    }
    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        Ok(ChargeOutcome::RequiresAction {
            intent_id: format!("pi_{}", request.idempotency_key),
            client_secret: format!("pi_{}_secret", request.idempotency_key),
        })
    }
    async fn lookup(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        let key = key.to_owned();

        Ok(Some(
            self.settled.lock().unwrap().get(&key).cloned().unwrap_or(
                ChargeOutcome::RequiresAction {
                    intent_id: format!("pi_{key}"),
                    client_secret: String::new(),
                },
            ),
        ))
    }
    async fn refund(&self, key: &str, _: &str, _: bool) -> Result<(), GatewayError> {
        let key = key.to_owned();

        self.refunded.lock().unwrap().push(key);
        Ok(())
    }
}

/// The card that needs 3-D Secure, and the two events that settle an authenticating attempt.
const THREE_D_SECURE_CARD: &str = "pm_card_threeDSecure2Required";
const SUCCEEDED: &str = "payment_intent.succeeded";
const FAILED: &str = "payment_intent.payment_failed";

fn event(id: &str, kind: &str, order: &str, attempt: u32) -> Value {
    json!({
        "id": id, "object": "event", "type": kind,
        "data": {"object": {
            "id": format!("pi_{order}-{attempt}"), "object": "payment_intent",
            "metadata": {"orderId": order, "attemptKey": format!("{order}-{attempt}")},
        }},
    })
}

/// The webhook request Stripe sends for `body`, signed with `secret` at `at` (unix seconds).
fn delivery(body: &str, secret: &str, at: i64) -> ApiRequest {
    ApiRequest::fixture("payment-webhook")
        .anonymous()
        .no_idempotency_key()
        .raw_body(body)
        .header("stripe-signature", &sign(body.as_bytes(), secret, at))
}

async fn deliver(cloud: &TestCloud, body: &Value) -> ApiResponse {
    let now = cloud.clock.now().as_epoch_seconds();
    cloud
        .call(
            "payment-webhook",
            delivery(&body.to_string(), WEBHOOK_SECRET, now),
        )
        .await
}

/// A reserved order paid with a card that needs authentication: 202, `payment_pending`.
async fn authenticating(cloud: &TestCloud) -> (String, String) {
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    let paying = cloud
        .pay("customer-1", &order, THREE_D_SECURE_CARD, Some("p1"))
        .await;
    assert_eq!(paying.status, 202, "{}", paying.body);
    assert_eq!(paying.body["status"], "payment_pending");
    assert_eq!(paying.body["nextAction"]["type"], "authenticate");
    assert_eq!(paying.body["nextAction"]["provider"], "stripe");
    assert_eq!(
        paying.body["nextAction"]["clientSecret"],
        format!("pi_{order}-0_secret")
    );
    assert_eq!(paying.header("payment-provider"), Some("stripe"));
    (order, bouquet)
}

/// A cloud paying through a [`ThreeDSecure`] PSP (returned too), and an order
/// [`authenticating`] on it.
async fn authenticating_order() -> (Arc<ThreeDSecure>, TestCloud, String, String) {
    let gateway = Arc::new(ThreeDSecure::default());
    let cloud = TestCloud::new().await.with_gateway(gateway.clone());
    let (order, bouquet) = authenticating(&cloud).await;
    (gateway, cloud, order, bouquet)
}

async fn order_events(cloud: &TestCloud, name: &str) -> usize {
    cloud
        .items_of("event")
        .await
        .iter()
        .filter(|i| {
            i.get("eventName")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some(name)
        })
        .count()
}

#[tokio::test]
async fn a_signed_success_pays_the_authenticating_attempt_exactly_once() {
    let (_, cloud, order, bouquet) = authenticating_order().await;
    let success = event("evt_1", SUCCEEDED, &order, 0);
    let first = deliver(&cloud, &success).await;
    assert_eq!(
        (first.status, first.body["outcome"].as_str()),
        (200, Some("paid")),
        "{}",
        first.body
    );
    for _ in 0..2 {
        let again = deliver(&cloud, &success).await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_ne!(
            again.body["outcome"], "paid",
            "a redelivery changes nothing"
        );
    }
    cloud.assert_order_status(&order, "paid").await;
    cloud.assert_bouquet_status(&bouquet, "sold").await;
    assert_eq!(order_events(&cloud, "OrderPaid").await, 1, "one transition");
    // A failure reported after the success (out of order) cannot undo it.
    let late = deliver(&cloud, &event("evt_2", FAILED, &order, 0)).await;
    assert_eq!(late.body["outcome"], "already_settled");
    cloud.assert_order_status(&order, "paid").await;
}

#[tokio::test]
async fn forged_stale_or_unsigned_deliveries_are_400_and_write_nothing() {
    let (_, cloud, order, _) = authenticating_order().await;
    let before = cloud.items().await;
    let body = event("evt_1", SUCCEEDED, &order, 0).to_string();
    let now = cloud.clock.now().as_epoch_seconds();
    let tampered = body.replace("succeeded", "succeeded ");
    let cases = [
        (
            "tampered body",
            delivery(&body, WEBHOOK_SECRET, now).raw_body(&tampered),
        ),
        ("wrong secret", delivery(&body, "whsec_attacker", now)),
        (
            "older than 5 minutes",
            delivery(&body, WEBHOOK_SECRET, now - 301),
        ),
        (
            "no signature",
            delivery(&body, WEBHOOK_SECRET, now).without_header("stripe-signature"),
        ),
    ];
    for (case, request) in cases {
        let refused = cloud.call("payment-webhook", request).await;
        assert_eq!(
            refused.status_and_code(),
            (400, Some("request.invalid")),
            "{case}: {}",
            refused.body
        );
        assert_eq!(
            refused.body["errors"][0]["field"], "Stripe-Signature",
            "{case}"
        );
    }
    assert_eq!(cloud.items().await, before, "nothing written");
    cloud.assert_order_status(&order, "payment_pending").await;
}

#[tokio::test]
async fn a_failed_authentication_releases_the_attempt_and_a_new_one_can_pay() {
    let (gateway, cloud, order, bouquet) = authenticating_order().await;
    let failed = deliver(&cloud, &event("evt_f", FAILED, &order, 0)).await;
    assert_eq!(failed.body["outcome"], "released", "{}", failed.body);
    cloud.assert_order_status(&order, "reserved").await;
    cloud.assert_bouquet_status(&bouquet, "reserved").await;
    // The next attempt (key `-1`) authenticates and succeeds.
    let again = cloud
        .pay("customer-1", &order, THREE_D_SECURE_CARD, Some("p2"))
        .await;
    assert_eq!(again.status, 202);
    let paid = deliver(&cloud, &event("evt_s", SUCCEEDED, &order, 1)).await;
    assert_eq!(paid.body["outcome"], "paid", "{}", paid.body);
    // A success for the first, released attempt arriving now is money for nothing: refunded.
    let stray = deliver(&cloud, &event("evt_old", SUCCEEDED, &order, 0)).await;
    assert_eq!(stray.body["outcome"], "refunded");
    assert_eq!(
        *gateway.refunded.lock().unwrap(),
        vec![format!("{order}-0")]
    );
    assert_eq!(order_events(&cloud, "OrderPaid").await, 1);
}

#[tokio::test]
async fn a_success_after_the_hold_lapsed_is_refunded_and_the_order_stays_expired() {
    let (gateway, cloud, order, bouquet) = authenticating_order().await;
    // The customer never finishes in time: past the hold, the sweeper asks the PSP (still
    // `requires_action`) and releases the order.
    cloud.clock.advance(Duration::from_secs(16 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsReleased"], 1, "{report}");
    cloud.assert_order_status(&order, "expired").await;
    cloud.assert_bouquet_status(&bouquet, "available").await;
    // Then the authentication completes after all.
    gateway.complete(
        &format!("{order}-0"),
        ChargeOutcome::Approved {
            charge_id: format!("pi_{order}-0"),
        },
    );
    let late = deliver(&cloud, &event("evt_late", SUCCEEDED, &order, 0)).await;
    assert_eq!(late.body["outcome"], "refunded", "{}", late.body);
    assert_eq!(
        *gateway.refunded.lock().unwrap(),
        vec![format!("{order}-0")]
    );
    cloud.assert_order_status(&order, "expired").await;
    assert_eq!(order_events(&cloud, "OrderPaid").await, 0);
}

/// A PSP that approves, but whose webhook reaches the marketplace before its own answer
/// reaches the pay function.
struct WebhookFirst {
    webhook: Mutex<Option<BoxFuture<'static, ApiResponse>>>,
}

#[async_trait::async_trait]
impl PaymentGateway for WebhookFirst {
    fn provider(&self) -> &'static str {
        "stripe"
    }
    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        let webhook = self.webhook.lock().unwrap().take().expect("one charge");
        let delivered = webhook.await;
        assert_eq!(delivered.body["outcome"], "paid", "{}", delivered.body);
        Ok(ChargeOutcome::Approved {
            charge_id: format!("pi_{}", request.idempotency_key),
        })
    }
    async fn lookup(&self, _: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        Ok(None)
    }
    async fn refund(&self, _: &str, _: &str, _: bool) -> Result<(), GatewayError> {
        panic!("nothing to refund")
    }
}

#[tokio::test]
async fn a_success_arriving_before_the_synchronous_answer_pays_once() {
    let (setup, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = setup.bouquet(&vendor, "24.50").await;
    let order = setup.reserved_order_id("customer-1", &[&bouquet]).await;
    // The webhook runs on a second instance of the app over the same table.
    let webhook_side = setup.clone_with_gateway(Arc::new(ThreeDSecure::default()));
    let body = event("evt_early", SUCCEEDED, &order, 0);
    let gateway = Arc::new(WebhookFirst {
        webhook: Mutex::new(Some(Box::pin(async move {
            deliver(&webhook_side, &body).await
        }))),
    });
    let cloud = setup.with_gateway(gateway);
    let paid = cloud
        .pay("customer-1", &order, "pm_card_visa", Some("p1"))
        .await;
    paid.assert_state(200, "paid");
    assert_eq!(paid.body["chargeId"], format!("pi_{order}-0"));
    assert_eq!(order_events(&cloud, "OrderPaid").await, 1, "paid once");
}

#[tokio::test]
async fn an_authentication_late_in_the_hold_keeps_the_bouquets_for_its_window() {
    let cloud = TestCloud::new()
        .await
        .with_gateway(Arc::new(ThreeDSecure::default()));
    let vendor = cloud.vendor("Bloom").await;
    let [a, b] = cloud.bouquets(&vendor, ["10.00", "11.00"]).await;
    let start = cloud.clock.now();
    let mut orders = Vec::new();
    for (customer, bouquet) in [("customer-a", &a), ("customer-b", &b)] {
        orders.push(cloud.reserved_order_id(customer, &[bouquet]).await);
    }
    // Twelve minutes into the 15-minute hold, both pay with cards that need 3-D Secure.
    cloud.clock.advance(Duration::from_secs(12 * 60));
    for (customer, order) in ["customer-a", "customer-b"].iter().zip(&orders) {
        let paying = cloud.pay(customer, order, THREE_D_SECURE_CARD, None).await;
        assert_eq!(paying.status, 202, "{}", paying.body);
        assert_eq!(
            paying.body["authenticatingUntil"],
            start.plus(Duration::from_secs(22 * 60)).to_rfc3339(),
            "ten minutes to authenticate"
        );
    }
    // Past the reservation, within the window: nothing is released, nobody else gets them.
    cloud.clock.advance(Duration::from_secs(4 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(
        (
            report["paymentsReleased"].as_u64(),
            report["expired"].as_u64()
        ),
        (Some(0), Some(0)),
        "{report}"
    );
    let taken = cloud.reserve("customer-c", &[&a]).await;
    assert_eq!(taken.status_and_code(), (409, Some("bouquet.unavailable")));
    // A authenticates in time; B never does and is released when the window closes.
    let paid = deliver(&cloud, &event("evt_a", SUCCEEDED, &orders[0], 0)).await;
    assert_eq!(paid.body["outcome"], "paid", "{}", paid.body);
    cloud.clock.advance(Duration::from_secs(7 * 60));
    let report = cloud.run_scheduled("expire-reservations").await;
    assert_eq!(report["paymentsReleased"], 1, "{report}");
    cloud.assert_order_status(&orders[0], "paid").await;
    cloud.assert_order_status(&orders[1], "expired").await;
    cloud.assert_bouquet_status(&b, "available").await;
}
