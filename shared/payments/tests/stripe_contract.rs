//! Contract tests of the Stripe adapter against a fake Stripe on a local port. The fake
//! answers as Stripe documents it (PaymentIntents, Search, Refunds, errors), keeps Stripe's
//! idempotency rules (the same key and body replay the first answer; the same key with
//! another body is an `idempotency_error`), and records every request the adapter sends.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use serde_json::{json, Value};

use bouquet_payments::stripe::{StripeGateway, API_VERSION};
use bouquet_payments::{
    ChargeOutcome, ChargeRequest, GatewayError, OnboardingLinks, PaymentGateway, Transfer,
};

const SECRET: &str = "sk_test_contract";

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    query: String,
    headers: HashMap<String, String>,
    form: HashMap<String, String>,
}

#[derive(Default)]
struct FakeStripe {
    seen: Mutex<Vec<Seen>>,
    /// Idempotency-Key → (the body first sent, the answer given).
    replies: Mutex<HashMap<String, (String, u16, Value)>>,
    intents: Mutex<Vec<Value>>,
    refunds: Mutex<Vec<String>>,
    accounts: Mutex<Vec<Value>>,
    /// The destination charges whose transfer a refund reversed, and whose fee it refunded.
    reversals: Mutex<Vec<String>>,
    /// Payouts by connected account, newest first as Stripe lists them.
    payouts: Mutex<HashMap<String, Vec<Value>>>,
    /// Search has not caught up with the writes yet (it lags by up to a minute at Stripe).
    search_lags: std::sync::atomic::AtomicBool,
}

impl FakeStripe {
    fn intent(&self, form: &HashMap<String, String>, status: &str) -> Value {
        let id = format!("pi_{}", self.intents.lock().unwrap().len() + 1);
        let intent = json!({
            "id": id, "object": "payment_intent", "status": status,
            "amount": form["amount"].parse::<i64>().unwrap(), "currency": form["currency"],
            "client_secret": format!("{id}_secret_x"),
            "metadata": {"orderId": form["metadata[orderId]"], "attemptKey": form["metadata[attemptKey]"]},
            "next_action": if status == "requires_action" { json!({"type": "use_stripe_sdk"}) } else { Value::Null },
            "transfer_data": form.get("transfer_data[destination]").map(|d| json!({"destination": d})),
            "application_fee_amount": form.get("application_fee_amount").map(|f| f.parse::<i64>().unwrap()),
        });
        self.intents.lock().unwrap().push(intent.clone());
        intent
    }

    /// Stripe's documented answers, chosen by the test PaymentMethod.
    async fn create(&self, form: &HashMap<String, String>) -> (u16, Value) {
        // An application fee needs a destination (or a connected account's own charge).
        if form.contains_key("application_fee_amount")
            && !form.contains_key("transfer_data[destination]")
        {
            return (
                400,
                json!({"error": {"type": "invalid_request_error", "param": "application_fee_amount",
                "message": "Can only apply an application_fee_amount when the PaymentIntent is attempting a direct payment or a destination payment."}}),
            );
        }
        match form["payment_method"].as_str() {
            "pm_card_visa" => (200, self.intent(form, "succeeded")),
            "pm_card_authenticationRequired" => (200, self.intent(form, "requires_action")),
            "pm_card_chargeDeclined" => {
                let intent = self.intent(form, "requires_payment_method");
                (
                    402,
                    json!({"error": {"type": "card_error", "code": "card_declined",
                    "decline_code": "generic_decline", "message": "Your card was declined.",
                    "payment_intent": intent}}),
                )
            }
            "pm_rate_limited" => (
                429,
                json!({"error": {"type": "invalid_request_error", "code": "rate_limit",
                "message": "Too many requests hit the API too quickly."}}),
            ),
            "pm_server_error" => (
                500,
                json!({"error": {"type": "api_error",
                "message": "An unknown error occurred"}}),
            ),
            "pm_slow" => {
                tokio::time::sleep(Duration::from_secs(2)).await;
                (200, self.intent(form, "succeeded"))
            }
            other => (
                400,
                json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                "message": format!("No such PaymentMethod: '{other}'")}}),
            ),
        }
    }

    async fn answer(&self, request: Request<hyper::body::Incoming>) -> (u16, Value) {
        let (parts, body) = request.into_parts();
        let body = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
        let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        let seen = Seen {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().unwrap_or("").to_owned(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
                .collect(),
            form: form.clone(),
        };
        self.seen.lock().unwrap().push(seen.clone());
        if seen.headers.get("authorization").map(String::as_str)
            != Some(&format!("Bearer {SECRET}"))
        {
            return (
                401,
                json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}),
            );
        }
        let key = seen.headers.get("idempotency-key").cloned();
        if let Some(key) = &key {
            if let Some((first_body, status, reply)) =
                self.replies.lock().unwrap().get(key).cloned()
            {
                if first_body != body {
                    return (
                        400,
                        json!({"error": {"type": "idempotency_error",
                        "message": "Keys for idempotent requests can only be used with the same parameters they were first used with."}}),
                    );
                }
                return (status, reply);
            }
        }
        let (status, reply) = match (seen.method.as_str(), seen.path.as_str()) {
            ("POST", "/v1/payment_intents") => self.create(&form).await,
            ("POST", "/v1/accounts") => {
                let mut accounts = self.accounts.lock().unwrap();
                let id = format!("acct_{}", accounts.len() + 1);
                let account = json!({
                    "id": id, "object": "account", "type": form["type"],
                    "charges_enabled": false, "payouts_enabled": false,
                    "capabilities": {"card_payments": "inactive", "transfers": "inactive"},
                    "metadata": {"vendorId": form["metadata[vendorId]"]},
                });
                accounts.push(account.clone());
                (200, account)
            }
            ("POST", "/v1/account_links") => {
                let account = form["account"].clone();
                let known = self
                    .accounts
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|a| a["id"] == account.as_str());
                if !known || form.get("type").map(String::as_str) != Some("account_onboarding") {
                    (
                        400,
                        json!({"error": {"type": "invalid_request_error", "param": "account",
                        "message": format!("No such account: '{account}'")}}),
                    )
                } else {
                    (
                        200,
                        json!({"object": "account_link", "expires_at": 1_796_300_300,
                        "url": format!("https://connect.stripe.com/setup/e/{account}/onboard")}),
                    )
                }
            }
            ("GET", "/v1/payouts") => {
                // On behalf of a connected account, by arrival date, 100 at most per page.
                let query: HashMap<String, String> = form_urlencoded::parse(seen.query.as_bytes())
                    .into_owned()
                    .collect();
                let Some(account) = seen.headers.get("stripe-account") else {
                    return (
                        200,
                        json!({"object": "list", "data": [], "has_more": false}),
                    );
                };
                let bound = |name: &str| query.get(name).and_then(|v| v.parse::<i64>().ok());
                let (gte, lt) = (bound("arrival_date[gte]"), bound("arrival_date[lt]"));
                let limit: usize = query
                    .get("limit")
                    .and_then(|l| l.parse().ok())
                    .unwrap_or(10);
                let all = self
                    .payouts
                    .lock()
                    .unwrap()
                    .get(account)
                    .cloned()
                    .unwrap_or_default();
                let matching: Vec<Value> = all
                    .into_iter()
                    .filter(|p| {
                        let at = p["arrival_date"].as_i64().unwrap();
                        gte.is_none_or(|g| at >= g) && lt.is_none_or(|l| at < l)
                    })
                    .skip_while(|p| {
                        query
                            .get("starting_after")
                            .is_some_and(|after| p["id"] != after.as_str())
                    })
                    .skip(usize::from(query.contains_key("starting_after")))
                    .collect();
                let has_more = matching.len() > limit;
                let data: Vec<Value> = matching.into_iter().take(limit).collect();
                (
                    200,
                    json!({"object": "list", "data": data, "has_more": has_more}),
                )
            }
            ("GET", "/v1/payment_intents/search") => {
                let query: HashMap<String, String> = form_urlencoded::parse(seen.query.as_bytes())
                    .into_owned()
                    .collect();
                let wanted = query["query"]
                    .strip_prefix("metadata['attemptKey']:'")
                    .and_then(|q| q.strip_suffix('\''))
                    .expect("the adapter searches by attemptKey")
                    .to_owned();
                let lagging = self.search_lags.load(std::sync::atomic::Ordering::SeqCst);
                let data: Vec<Value> = self
                    .intents
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|i| !lagging && i["metadata"]["attemptKey"] == wanted.as_str())
                    .cloned()
                    .collect();
                (
                    200,
                    json!({"object": "search_result", "data": data, "has_more": false}),
                )
            }
            ("POST", "/v1/refunds") => {
                let intent = form["payment_intent"].clone();
                let paid = self
                    .intents
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|i| i["id"] == intent.as_str() && i["status"] == "succeeded")
                    .cloned();
                let Some(paid) = paid else {
                    return (
                        400,
                        json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                        "message": format!("No such payment_intent: '{intent}'")}}),
                    );
                };
                let reverses = form.get("reverse_transfer").map(String::as_str) == Some("true");
                if reverses && paid["transfer_data"].is_null() {
                    return (
                        400,
                        json!({"error": {"type": "invalid_request_error", "param": "reverse_transfer",
                        "message": "This charge has no transfer to reverse."}}),
                    );
                }
                if reverses
                    && form.get("refund_application_fee").map(String::as_str) == Some("true")
                {
                    self.reversals.lock().unwrap().push(intent.clone());
                }
                self.refunds.lock().unwrap().push(intent.clone());
                (
                    200,
                    json!({"id": "re_1", "object": "refund", "status": "succeeded",
                    "payment_intent": intent}),
                )
            }
            _ => (
                404,
                json!({"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}}),
            ),
        };
        // Stripe keeps the answer of a keyed request unless it failed before executing (429).
        if let (Some(key), true) = (key, status != 429) {
            self.replies
                .lock()
                .unwrap()
                .insert(key, (body, status, reply.clone()));
        }
        (status, reply)
    }

    fn requests_to(&self, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }
}

async fn fake_stripe() -> (Arc<FakeStripe>, SocketAddr) {
    let fake = Arc::new(FakeStripe::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serving = fake.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let fake = serving.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let fake = fake.clone();
                    async move {
                        // Detached: like Stripe, the work finishes when the client gives up.
                        let (status, body) =
                            tokio::spawn(async move { fake.answer(request).await })
                                .await
                                .unwrap();
                        let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
                        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (fake, address)
}

fn charge(key: &str, payment_method: &str) -> ChargeRequest {
    ChargeRequest {
        idempotency_key: key.into(),
        order_id: "01ORDER".into(),
        amount_minor: 2450,
        currency: "EUR".into(),
        payment_token: payment_method.into(),
        transfer: None,
    }
}

async fn gateway() -> (Arc<FakeStripe>, StripeGateway) {
    let (fake, address) = fake_stripe().await;
    let gateway = StripeGateway::new(&format!("http://{address}"), SECRET)
        .unwrap()
        .with_timeout(Duration::from_millis(500));
    (fake, gateway)
}

#[tokio::test]
async fn a_successful_charge_sends_what_stripe_documents_and_a_repeat_is_the_same_intent() {
    let (fake, stripe) = gateway().await;
    let first = stripe
        .charge(charge("01ORDER-0", "pm_card_visa"))
        .await
        .unwrap();
    assert_eq!(
        first,
        ChargeOutcome::Approved {
            charge_id: "pi_1".into()
        }
    );
    assert_eq!(
        stripe
            .charge(charge("01ORDER-0", "pm_card_visa"))
            .await
            .unwrap(),
        first,
        "replayed"
    );
    assert_eq!(
        fake.intents.lock().unwrap().len(),
        1,
        "one intent for one key"
    );

    let sent = fake.requests_to("/v1/payment_intents");
    assert_eq!(sent.len(), 2);
    let request = &sent[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.headers["idempotency-key"], "01ORDER-0");
    assert_eq!(request.headers["stripe-version"], API_VERSION);
    assert_eq!(
        request.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
    let form = &request.form;
    assert_eq!(form["amount"], "2450");
    assert_eq!(form["currency"], "eur");
    assert_eq!(form["payment_method"], "pm_card_visa");
    assert_eq!(form["confirm"], "true");
    assert_eq!(form["metadata[orderId]"], "01ORDER");
    assert_eq!(form["metadata[attemptKey]"], "01ORDER-0");
    assert_eq!(form["automatic_payment_methods[allow_redirects]"], "never");
    assert!(
        !form.contains_key("transfer_data[destination]")
            && !form.contains_key("application_fee_amount"),
        "no shop account, no transfer: {form:?}"
    );
    assert_eq!(stripe.provider(), "stripe");
    assert!(
        !format!("{stripe:?}").contains(SECRET),
        "the key never reaches a log line"
    );
}

#[tokio::test]
async fn a_declined_card_is_a_decline_with_stripes_reason() {
    let (_, stripe) = gateway().await;
    assert_eq!(
        stripe
            .charge(charge("k-declined", "pm_card_chargeDeclined"))
            .await
            .unwrap(),
        ChargeOutcome::Declined {
            reason: "generic_decline".into()
        }
    );
}

#[tokio::test]
async fn three_d_secure_is_requires_action_with_the_client_secret() {
    let (_, stripe) = gateway().await;
    assert_eq!(
        stripe
            .charge(charge("k-3ds", "pm_card_authenticationRequired"))
            .await
            .unwrap(),
        ChargeOutcome::RequiresAction {
            intent_id: "pi_1".into(),
            client_secret: "pi_1_secret_x".into()
        }
    );
}

#[tokio::test]
async fn rate_limits_server_errors_and_silence_are_no_definite_answer() {
    let (fake, stripe) = gateway().await;
    for method in ["pm_rate_limited", "pm_server_error"] {
        let outcome = stripe.charge(charge(&format!("k-{method}"), method)).await;
        assert!(
            matches!(outcome, Err(GatewayError::Unavailable(_))),
            "{method}: {outcome:?}"
        );
    }
    assert!(matches!(
        stripe.charge(charge("k-slow", "pm_slow")).await,
        Err(GatewayError::Timeout)
    ));
    // The slow charge went through at Stripe after all: lookup finds it.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert!(matches!(
        stripe.lookup("k-slow").await,
        Ok(Some(ChargeOutcome::Approved { .. }))
    ));
    assert_eq!(fake.requests_to("/v1/payment_intents/search").len(), 1);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_refused_not_charged_twice() {
    let (fake, stripe) = gateway().await;
    stripe
        .charge(charge("k-reused", "pm_card_visa"))
        .await
        .unwrap();
    let mut other = charge("k-reused", "pm_card_visa");
    other.amount_minor = 9999;
    let refused = stripe.charge(other).await;
    assert!(
        matches!(&refused, Err(GatewayError::Unavailable(m)) if m.to_string().contains("idempotency_error")),
        "{refused:?}"
    );
    assert_eq!(fake.intents.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn lookup_finds_the_intent_by_its_attempt_key_and_refund_goes_by_the_intent() {
    let (fake, stripe) = gateway().await;
    assert_eq!(stripe.lookup("k-none").await.unwrap(), None);

    let paid = stripe
        .charge(charge("k-paid", "pm_card_visa"))
        .await
        .unwrap();
    let ChargeOutcome::Approved { charge_id } = paid else {
        panic!("{paid:?}")
    };
    stripe
        .charge(charge("k-declined", "pm_card_chargeDeclined"))
        .await
        .unwrap();
    assert_eq!(
        stripe.lookup("k-declined").await.unwrap(),
        Some(ChargeOutcome::Declined {
            reason: "requires_payment_method".into()
        })
    );
    // Search lags writes by up to a minute: the refund must not depend on it.
    fake.search_lags
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        stripe.lookup("k-paid").await.unwrap(),
        None,
        "search has not caught up"
    );
    let searched = fake.requests_to("/v1/payment_intents/search").len();
    stripe.refund("k-paid", &charge_id, false).await.unwrap();
    stripe.refund("k-paid", &charge_id, false).await.unwrap();
    assert_eq!(
        *fake.refunds.lock().unwrap(),
        vec![charge_id.clone()],
        "one refund, of the paid intent"
    );
    let refunds = fake.requests_to("/v1/refunds");
    assert_eq!(refunds.len(), 2, "the second is a replay");
    assert!(refunds
        .iter()
        .all(|r| r.headers["idempotency-key"] == "refund-k-paid"));
    assert_eq!(
        fake.requests_to("/v1/payment_intents/search").len(),
        searched,
        "refunds never search"
    );
    // What Stripe does not refund is never reported refunded.
    assert!(stripe.refund("k-none", "pi_unknown", false).await.is_err());
}

#[tokio::test]
async fn a_wrong_key_is_not_a_decline() {
    let (fake, address) = fake_stripe().await;
    let stripe = StripeGateway::new(&format!("http://{address}"), "sk_test_wrong").unwrap();
    let outcome = stripe.charge(charge("k", "pm_card_visa")).await;
    assert!(
        matches!(outcome, Err(GatewayError::Unavailable(_))),
        "{outcome:?}"
    );
    assert!(fake.intents.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_destination_charge_pays_the_shop_less_the_fee_and_its_refund_takes_both_back() {
    let (fake, stripe) = gateway().await;
    let request = ChargeRequest {
        transfer: Some(Transfer {
            destination: "acct_shop1".into(),
            application_fee_minor: 368,
        }),
        ..charge("k-shop", "pm_card_visa")
    };
    let Ok(ChargeOutcome::Approved { charge_id }) = stripe.charge(request).await else {
        panic!("approved")
    };
    let sent = &fake.requests_to("/v1/payment_intents")[0].form;
    assert_eq!(sent["transfer_data[destination]"], "acct_shop1");
    assert_eq!(sent["application_fee_amount"], "368");
    let intent = fake.intents.lock().unwrap()[0].clone();
    assert_eq!(
        (
            &intent["transfer_data"]["destination"],
            &intent["application_fee_amount"]
        ),
        (&json!("acct_shop1"), &json!(368))
    );

    // Twice, as a retried rejection would: one refund, one reversal of the transfer and fee.
    stripe.refund("k-shop", &charge_id, true).await.unwrap();
    stripe.refund("k-shop", &charge_id, true).await.unwrap();
    let refund = &fake.requests_to("/v1/refunds")[0].form;
    assert_eq!(
        (
            refund["reverse_transfer"].as_str(),
            refund["refund_application_fee"].as_str()
        ),
        ("true", "true")
    );
    assert_eq!(*fake.refunds.lock().unwrap(), vec![charge_id.clone()]);
    assert_eq!(*fake.reversals.lock().unwrap(), vec![charge_id]);
}

#[tokio::test]
async fn a_shop_gets_one_express_account_and_a_link_to_onboard_it() {
    let (fake, stripe) = gateway().await;
    let account = stripe.create_account("01VENDOR").await.unwrap();
    assert_eq!(account, "acct_1");
    assert_eq!(
        stripe.create_account("01VENDOR").await.unwrap(),
        account,
        "a retry is the same account (keyed by the shop)"
    );
    let created = fake.requests_to("/v1/accounts");
    assert_eq!(fake.accounts.lock().unwrap().len(), 1);
    let form = &created[0].form;
    assert_eq!(form["type"], "express");
    assert_eq!(form["capabilities[card_payments][requested]"], "true");
    assert_eq!(form["capabilities[transfers][requested]"], "true");
    assert_eq!(form["metadata[vendorId]"], "01VENDOR");
    assert_eq!(created[0].headers["idempotency-key"], "account-01VENDOR");

    let links = OnboardingLinks {
        return_url: "https://shop.example/#/shop?onboarding=done".into(),
        refresh_url: "https://shop.example/#/shop".into(),
    };
    let url = stripe.onboarding_link(&account, &links).await.unwrap();
    assert_eq!(url, "https://connect.stripe.com/setup/e/acct_1/onboard");
    let link = &fake.requests_to("/v1/account_links")[0].form;
    assert_eq!(
        (
            link["type"].as_str(),
            link["return_url"].as_str(),
            link["refresh_url"].as_str()
        ),
        (
            "account_onboarding",
            links.return_url.as_str(),
            links.refresh_url.as_str()
        )
    );
    assert!(
        stripe
            .onboarding_link("acct_unknown", &links)
            .await
            .is_err(),
        "Stripe's refusal is no link"
    );
}

#[tokio::test]
async fn a_shops_payouts_are_read_on_its_behalf_by_arrival_date_page_by_page() {
    let (fake, stripe) = gateway().await;
    // 2026-12-01 00:00 UTC, then one payout a day, newest first as Stripe lists them.
    let day = |n: i64| 1_796_083_200 + n * 86_400;
    let mut listed: Vec<Value> = (0..130)
        .map(|n| {
            json!({"id": format!("po_{n}"), "object": "payout", "amount": 1000 + n,
                   "currency": "eur", "arrival_date": day(n % 5), "status": "paid"})
        })
        .collect();
    listed.reverse();
    fake.payouts.lock().unwrap().insert("acct_1".into(), listed);
    let payouts = stripe
        .payouts("acct_1", "2026-12-02", "2026-12-03")
        .await
        .unwrap();
    // Days 1 and 2 of each five: 26 + 26 payouts, over two pages of at most 100.
    assert_eq!(payouts.len(), 52);
    assert!(payouts
        .iter()
        .all(|p| p.currency == "EUR" && p.status == "paid"));
    assert_eq!(payouts.first().unwrap().arrival_date, "2026-12-02");
    assert_eq!(payouts.last().unwrap().arrival_date, "2026-12-03");
    let requests = fake.requests_to("/v1/payouts");
    assert_eq!(requests.len(), 1, "52 fit one page of 100");
    assert_eq!(requests[0].headers["stripe-account"], "acct_1");
    assert!(
        requests[0]
            .query
            .contains("arrival_date%5Bgte%5D=1796169600"),
        "{}",
        requests[0].query
    );
    assert!(
        requests[0]
            .query
            .contains("arrival_date%5Blt%5D=1796342400"),
        "{}",
        requests[0].query
    );
    let everything = stripe
        .payouts("acct_1", "2026-12-01", "2026-12-05")
        .await
        .unwrap();
    assert_eq!(everything.len(), 130);
    assert_eq!(
        fake.requests_to("/v1/payouts").len(),
        3,
        "100, then 30 after the last seen"
    );
    assert!(stripe
        .payouts("acct_other", "2026-12-01", "2026-12-05")
        .await
        .unwrap()
        .is_empty());
}
