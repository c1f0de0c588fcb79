//! Stripe behind [`PaymentGateway`]: a small typed client over hyper and rustls (the stack
//! the SDK already links, so it adds little to a binary).
//!
//! - `charge`: one `POST /v1/payment_intents` that creates and confirms the intent with the
//!   client's PaymentMethod (`pm_...`), the order total, `metadata[orderId]` and
//!   `metadata[attemptKey]`, and the attempt key as Stripe's `Idempotency-Key` (a repeat
//!   within Stripe's 24 h returns the first intent). Redirect-based methods are off, so 3-D
//!   Secure is `requires_action` with a client secret for Stripe.js.
//! - `lookup`: the intent whose `metadata['attemptKey']` is the key (Search API).
//!   A destination charge (Connect) adds `transfer_data[destination]` (the shop's account)
//!   and `application_fee_amount` (the marketplace's commission).
//! - `refund`: `POST /v1/refunds` for the PaymentIntent the charge is (its id, from the charge
//!   or Stripe's event; never from Search, which lags), with `refund-{key}` as its
//!   idempotency key, and for a destination charge `reverse_transfer` and
//!   `refund_application_fee` (the shop gives its share back, the marketplace its fee);
//!   `Ok` only on Stripe's answer.
//!
//! - `create_account`: `POST /v1/accounts` (Express, card payments and transfers requested,
//!   `metadata[vendorId]`), keyed by the shop; `onboarding_link`: `POST /v1/account_links`.
//!
//! Errors: a card error (402) is a decline; 429, 5xx, an idempotency error and a transport
//! failure are `Unavailable`; no answer in time is `Timeout`. The last three leave the order
//! `payment_pending` for a retry or the sweeper, which asks `lookup`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde::Deserialize;

use crate::{ChargeOutcome, ChargeRequest, GatewayError, OnboardingLinks, PaymentGateway, Payout};

/// Stripe's API version this client is written against (sent on every request).
pub const API_VERSION: &str = "2024-06-20";
/// How long one call may take (Lambda's timeout is 10 s; the pay route's deadline is shorter).
const TIMEOUT: Duration = Duration::from_secs(6);

type Client = bouquet_https::Client<Full<Bytes>>;

#[derive(Clone)]
pub struct StripeGateway {
    base: String,
    secret_key: Arc<str>,
    client: Client,
    timeout: Duration,
}

impl std::fmt::Debug for StripeGateway {
    // The secret key never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeGateway")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StripeConfigError {
    #[error("TLS set-up failed")]
    Tls(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("the secret key parameter could not be read")]
    Parameter(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A PaymentIntent, as far as this client reads it.
#[derive(Debug, Deserialize)]
struct Intent {
    id: String,
    status: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    last_payment_error: Option<StripeError>,
}

#[derive(Debug, Deserialize)]
struct StripeError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    decline_code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: StripeError,
}

/// An object answered with its id (an Account), or its URL (an Account Link).
#[derive(Deserialize)]
struct Created {
    #[serde(default)]
    id: String,
    #[serde(default)]
    url: String,
}

#[derive(Deserialize)]
struct SearchResult {
    data: Vec<Intent>,
}

impl StripeGateway {
    /// `base`: `https://api.stripe.com` (or a local fake in tests, over plain HTTP to a
    /// loopback address).
    pub fn new(base: &str, secret_key: &str) -> Result<Self, StripeConfigError> {
        let uri: hyper::Uri = base
            .parse()
            .map_err(|_| StripeConfigError::Tls(format!("{base} is not a URL").into()))?;
        let client =
            bouquet_https::client_for(&uri).map_err(|e| StripeConfigError::Tls(Box::new(e)))?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            secret_key: secret_key.into(),
            client,
            timeout: TIMEOUT,
        })
    }

    /// The same gateway with another per-call timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Deployed wiring: the secret key from the SSM parameter named by
    /// `STRIPE_SECRET_KEY_PARAMETER` (a SecureString, read once per container), the API at
    /// `STRIPE_API_BASE` or Stripe's own.
    pub async fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, StripeConfigError> {
        let name = std::env::var("STRIPE_SECRET_KEY_PARAMETER")
            .map_err(|_| StripeConfigError::Missing("STRIPE_SECRET_KEY_PARAMETER"))?;
        let base =
            std::env::var("STRIPE_API_BASE").unwrap_or_else(|_| "https://api.stripe.com".into());
        Self::from_parameter(sdk, &name, &base).await
    }

    /// The gateway for the API at `base`, its secret key read from the SSM parameter `name`.
    pub async fn from_parameter(
        sdk: &bouquet_aws::SdkConfig,
        name: &str,
        base: &str,
    ) -> Result<Self, StripeConfigError> {
        let secret = read_secret_parameter(sdk, name).await?;
        Self::new(base, &secret)
    }

    async fn send(
        &self,
        method: hyper::Method,
        path_and_query: &str,
        form: Option<String>,
        idempotency_key: Option<&str>,
    ) -> Result<(u16, Bytes), GatewayError> {
        self.send_as(None, method, path_and_query, form, idempotency_key)
            .await
    }

    /// [`Self::send`] on behalf of a connected account (`Stripe-Account`), when given.
    async fn send_as(
        &self,
        account: Option<&str>,
        method: hyper::Method,
        path_and_query: &str,
        form: Option<String>,
        idempotency_key: Option<&str>,
    ) -> Result<(u16, Bytes), GatewayError> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path_and_query}", self.base))
            .header("authorization", format!("Bearer {}", self.secret_key))
            .header("stripe-version", API_VERSION);
        if let Some(account) = account {
            request = request.header("stripe-account", account);
        }
        if form.is_some() {
            request = request.header("content-type", "application/x-www-form-urlencoded");
        }
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key);
        }
        let request = request
            .body(Full::new(Bytes::from(form.unwrap_or_default())))
            .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| GatewayError::Unavailable(Box::new(e)))?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| GatewayError::Timeout)?
    }

    /// A keyed `POST` whose answer is the created object.
    async fn create(&self, path: &str, form: String, key: &str) -> Result<Created, GatewayError> {
        let (status, body) = self
            .send(hyper::Method::POST, path, Some(form), Some(key))
            .await?;
        if status != 200 {
            return Err(unavailable(status, &body));
        }
        serde_json::from_slice(&body).map_err(|e| GatewayError::Unavailable(Box::new(e)))
    }

    async fn intent_of(&self, key: &str) -> Result<Option<Intent>, GatewayError> {
        let query = format!("metadata['attemptKey']:'{}'", key.replace('\'', "\\'"));
        let path = format!(
            "/v1/payment_intents/search?{}",
            form_urlencoded::Serializer::new(String::new())
                .append_pair("query", &query)
                .append_pair("limit", "1")
                .finish()
        );
        let (status, body) = self.send(hyper::Method::GET, &path, None, None).await?;
        if status != 200 {
            return Err(unavailable(status, &body));
        }
        let found: SearchResult =
            serde_json::from_slice(&body).map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
        Ok(found.data.into_iter().next())
    }
}

/// Reads a SecureString parameter with decryption.
pub async fn read_secret_parameter(
    sdk: &bouquet_aws::SdkConfig,
    name: &str,
) -> Result<String, StripeConfigError> {
    let output = bouquet_aws::client!(aws_sdk_ssm, sdk)
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| StripeConfigError::Parameter(Box::new(e)))?;
    output
        .parameter
        .and_then(|p| p.value)
        .ok_or_else(|| StripeConfigError::Parameter(format!("{name} has no value").into()))
}

fn unavailable(status: u16, body: &[u8]) -> GatewayError {
    let detail = serde_json::from_slice::<ErrorBody>(body)
        .map(|e| {
            format!(
                "{} {}",
                e.error.kind,
                e.error.code.or(e.error.message).unwrap_or_default()
            )
        })
        .unwrap_or_else(|_| "no error body".into());
    GatewayError::Unavailable(format!("stripe answered {status}: {detail}").into())
}

/// What an intent's status means for the order.
fn outcome_of(intent: Intent) -> Option<ChargeOutcome> {
    match intent.status.as_str() {
        "succeeded" => Some(ChargeOutcome::Approved {
            charge_id: intent.id,
        }),
        "requires_action" => Some(ChargeOutcome::RequiresAction {
            client_secret: intent.client_secret.unwrap_or_default(),
            intent_id: intent.id,
        }),
        "requires_payment_method" | "canceled" => Some(ChargeOutcome::Declined {
            reason: intent
                .last_payment_error
                .and_then(|e| e.decline_code.or(e.code))
                .unwrap_or_else(|| intent.status.clone()),
        }),
        // `processing`, `requires_confirmation`, `requires_capture`: not settled yet.
        _ => None,
    }
}

#[async_trait::async_trait]
impl PaymentGateway for StripeGateway {
    fn provider(&self) -> &'static str {
        "stripe"
    }

    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        // Built in a block: the serializer is not `Send` and must not live across an await.
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("amount", &request.amount_minor.to_string())
                .append_pair("currency", &request.currency.to_ascii_lowercase())
                .append_pair("payment_method", &request.payment_token)
                .append_pair("confirm", "true")
                .append_pair("automatic_payment_methods[enabled]", "true")
                .append_pair("automatic_payment_methods[allow_redirects]", "never")
                .append_pair("metadata[orderId]", &request.order_id)
                .append_pair("metadata[attemptKey]", &request.idempotency_key);
            if let Some(transfer) = &request.transfer {
                form.append_pair("transfer_data[destination]", &transfer.destination)
                    .append_pair(
                        "application_fee_amount",
                        &transfer.application_fee_minor.to_string(),
                    );
            }
            form.finish()
        };
        let (status, body) = self
            .send(
                hyper::Method::POST,
                "/v1/payment_intents",
                Some(form),
                Some(&request.idempotency_key),
            )
            .await?;
        match status {
            200 => {
                let intent: Intent = serde_json::from_slice(&body)
                    .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
                outcome_of(intent).ok_or_else(|| {
                    GatewayError::Unavailable("stripe: the payment is still processing".into())
                })
            }
            402 => match serde_json::from_slice::<ErrorBody>(&body) {
                Ok(ErrorBody { error }) if error.kind == "card_error" => {
                    Ok(ChargeOutcome::Declined {
                        reason: error
                            .decline_code
                            .or(error.code)
                            .unwrap_or_else(|| "card_declined".into()),
                    })
                }
                _ => Err(unavailable(status, &body)),
            },
            _ => Err(unavailable(status, &body)),
        }
    }

    async fn lookup(&self, idempotency_key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        let key = idempotency_key.to_owned();
        Ok(self.intent_of(&key).await?.and_then(outcome_of))
    }

    /// By the PaymentIntent itself, never through Search: Search lags writes by up to a
    /// minute, and a refund it did not find yet must not pass for one made.
    async fn refund(
        &self,
        idempotency_key: &str,
        charge_id: &str,
        transferred: bool,
    ) -> Result<(), GatewayError> {
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("payment_intent", charge_id);
            if transferred {
                form.append_pair("reverse_transfer", "true")
                    .append_pair("refund_application_fee", "true");
            }
            form.finish()
        };
        let (status, body) = self
            .send(
                hyper::Method::POST,
                "/v1/refunds",
                Some(form),
                Some(&format!("refund-{idempotency_key}")),
            )
            .await?;
        match status {
            200 => Ok(()),
            // Refunded already (e.g. from Stripe's dashboard): nothing left to do.
            400 if String::from_utf8_lossy(&body).contains("charge_already_refunded") => Ok(()),
            _ => Err(unavailable(status, &body)),
        }
    }

    /// `POST /v1/accounts`: an Express account that takes card payments and transfers, the
    /// shop's id in its metadata (its `account.updated` events name the shop by it) and as
    /// the idempotency key.
    async fn create_account(&self, vendor_id: &str) -> Result<String, GatewayError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("type", "express")
            .append_pair("capabilities[card_payments][requested]", "true")
            .append_pair("capabilities[transfers][requested]", "true")
            .append_pair("metadata[vendorId]", vendor_id)
            .finish();
        let key = format!("account-{vendor_id}");
        let created = self.create("/v1/accounts", form, &key).await?;
        Ok(created.id)
    }

    /// `POST /v1/account_links` of type `account_onboarding`: Stripe's hosted onboarding.
    async fn onboarding_link(
        &self,
        account_id: &str,
        links: &OnboardingLinks,
    ) -> Result<String, GatewayError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("account", account_id)
            .append_pair("type", "account_onboarding")
            .append_pair("return_url", &links.return_url)
            .append_pair("refresh_url", &links.refresh_url)
            .finish();
        // A link is single-use and short-lived: each request wants a new one, so no key.
        let (status, body) = self
            .send(hyper::Method::POST, "/v1/account_links", Some(form), None)
            .await?;
        if status != 200 {
            return Err(unavailable(status, &body));
        }
        let created: Created =
            serde_json::from_slice(&body).map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
        Ok(created.url)
    }

    /// `GET /v1/payouts` on behalf of the shop's account (`Stripe-Account`), by arrival date,
    /// page by page.
    async fn payouts(
        &self,
        account_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        let seconds = |day: &str, plus_days: i64| -> Result<i64, GatewayError> {
            let date: jiff::civil::Date = day
                .parse()
                .map_err(|e: jiff::Error| GatewayError::Unavailable(Box::new(e)))?;
            let start = date
                .checked_add(jiff::Span::new().days(plus_days))
                .and_then(|d| d.to_zoned_datetime(jiff::tz::TimeZone::UTC))
                .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
            Ok(start.timestamp().as_second())
        };
        let (gte, lt) = (seconds(from, 0)?, seconds(to, 1)?);
        let mut payouts = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let path = {
                let mut query = form_urlencoded::Serializer::new(String::new());
                query
                    .append_pair("arrival_date[gte]", &gte.to_string())
                    .append_pair("arrival_date[lt]", &lt.to_string())
                    .append_pair("limit", "100");
                if let Some(after) = &after {
                    query.append_pair("starting_after", after);
                }
                format!("/v1/payouts?{}", query.finish())
            };
            let (status, body) = self
                .send_as(Some(account_id), hyper::Method::GET, &path, None, None)
                .await?;
            if status != 200 {
                return Err(unavailable(status, &body));
            }
            let page: PayoutList = serde_json::from_slice(&body)
                .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
            after = page.data.last().map(|p| p.id.clone());
            for payout in page.data {
                let arrival = jiff::Timestamp::from_second(payout.arrival_date)
                    .map_err(|e| GatewayError::Unavailable(Box::new(e)))?;
                payouts.push(Payout {
                    id: payout.id,
                    amount_minor: payout.amount,
                    currency: payout.currency.to_ascii_uppercase(),
                    arrival_date: arrival
                        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
                        .date()
                        .to_string(),
                    status: payout.status,
                });
            }
            if !page.has_more || after.is_none() {
                // Stripe lists newest first.
                payouts.sort_by(|a, b| a.arrival_date.cmp(&b.arrival_date));
                return Ok(payouts);
            }
        }
    }
}

/// A page of `GET /v1/payouts`.
#[derive(Deserialize)]
struct PayoutList {
    data: Vec<StripePayout>,
    #[serde(default)]
    has_more: bool,
}

#[derive(Deserialize)]
struct StripePayout {
    id: String,
    amount: i64,
    currency: String,
    /// Epoch seconds.
    arrival_date: i64,
    status: String,
}
