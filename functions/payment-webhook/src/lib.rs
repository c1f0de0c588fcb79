//! `POST /v1/payments/webhook`: Stripe's events about the marketplace's PaymentIntents. No JWT:
//! the `Stripe-Signature` header is checked instead (HMAC-SHA256 of `timestamp.body` under
//! the endpoint's signing secret, 5 minutes' tolerance, constant-time comparison). A request
//! that does not verify is 400 and writes nothing.
//!
//! - `payment_intent.succeeded`: the attempt it paid becomes `paid` (bouquets `sold`), once;
//!   money for an attempt that no longer stands (the hold lapsed, another attempt paid) is
//!   refunded.
//! - `payment_intent.payment_failed` / `canceled`: the attempt is released (`reserved`, or
//!   `expired` past its hold).
//! - Any other event, or an intent that is not the marketplace's: 200, nothing done (Stripe
//!   stops retrying).
//!
//! Each transition is written with an idempotency record keyed by Stripe's event id, so a
//! redelivered event changes nothing; every transition is conditional on the order's version,
//! so late and out-of-order events cannot undo a later state.

use bouquet_app::checkout::{self, CheckoutError, Settled, Settlement};
use bouquet_app::domain::{FieldError, OrderId};
use bouquet_app::idempotency::IdempotencyPut;
use bouquet_app::payments::stripe_webhook::{self, PaymentEvent};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("POST", "/v1/payments/webhook");

/// The endpoint's signing secret (`whsec_...`).
pub struct SigningSecret {
    secret: tokio::sync::OnceCell<String>,
    /// Where to read it when it is not given: the SDK configuration and the parameter's name.
    parameter: Option<(bouquet_aws::SdkConfig, String)>,
}

impl SigningSecret {
    pub fn new(secret: impl Into<String>) -> Self {
        Self {
            secret: tokio::sync::OnceCell::new_with(Some(secret.into())),
            parameter: None,
        }
    }

    /// `STRIPE_WEBHOOK_SECRET` when set (the dev stack's), else the SSM SecureString named by
    /// `STRIPE_WEBHOOK_SECRET_PARAMETER`, read at the first webhook and kept for the container:
    /// read at init, it would cost every cold start an SSM round trip.
    pub fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, Error> {
        if let Ok(secret) = std::env::var("STRIPE_WEBHOOK_SECRET") {
            return Ok(Self::new(secret));
        }
        let name = std::env::var("STRIPE_WEBHOOK_SECRET_PARAMETER")
            .map_err(|_| "STRIPE_WEBHOOK_SECRET_PARAMETER is not set")?;
        Ok(Self {
            secret: tokio::sync::OnceCell::new(),
            parameter: Some((sdk.clone(), name)),
        })
    }

    /// The secret; a failed read fails this webhook (500, Stripe redelivers) and is tried
    /// again by the next.
    async fn get(&self) -> Result<&str, ApiError> {
        self.secret
            .get_or_try_init(|| async {
                let (sdk, name) = self.parameter.as_ref().ok_or_else(|| {
                    ApiError::internal("the webhook signing secret is not configured")
                })?;
                bouquet_app::payments::stripe::read_secret_parameter(sdk, name)
                    .await
                    .map_err(ApiError::internal)
            })
            .await
            .map(String::as_str)
    }
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(..)")
    }
}

pub async fn handler(
    app: &App,
    secret: &SigningSecret,
    request: Request,
) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, async |ctx: &Ctx| {
        handle(ctx, secret).await
    })
    .await
}

async fn handle(ctx: &Ctx, secret: &SigningSecret) -> Result<Reply, ApiError> {
    stripe_webhook::verify(
        ctx.header("stripe-signature"),
        ctx.raw_body(),
        secret.get().await?,
        ctx.now.as_epoch_seconds(),
    )
    .map_err(|error| {
        bouquet_app::tracing::warn!(%error, "webhook refused");
        ApiError::Invalid(vec![FieldError::new("Stripe-Signature", error)])
    })?;
    let event: stripe_webhook::Event = ctx.json()?;
    let Some(payment) = event.payment() else {
        return Reply::ok(&json!({ "received": true, "outcome": "ignored" }));
    };
    let (order_id, settlement) = match payment {
        PaymentEvent::Succeeded {
            intent_id,
            order_id,
            attempt_key,
        } => (
            order_id,
            Settlement::Succeeded {
                charge_id: intent_id,
                attempt_key,
            },
        ),
        PaymentEvent::Failed {
            order_id,
            attempt_key,
        } => (order_id, Settlement::Failed { attempt_key }),
    };
    let order_id = OrderId::parse(&order_id)
        .map_err(|e| ApiError::Invalid(vec![FieldError::new("data/object/metadata/orderId", e)]))?;
    let body = json!({ "received": true, "eventId": event.id });
    let record = IdempotencyPut::new(
        format!("stripe-event#{}", event.id),
        event.id.clone(),
        200,
        body.to_string(),
        None,
        ctx.now,
    );
    let settled = checkout::settle(
        &ctx.app,
        order_id,
        &settlement,
        &record,
        &ctx.correlation_id,
        ctx.now,
    )
    .await;
    let outcome = match settled {
        Ok(Settled::Paid) => "paid",
        Ok(Settled::Released) => "released",
        Ok(Settled::Refunded) => "refunded",
        Ok(Settled::AlreadySettled) => "already_settled",
        // Not ours after all: acknowledge, or Stripe retries for three days.
        Err(CheckoutError::UnknownOrder(_)) => "unknown_order",
        Err(other) => return Err(other.into()),
    };
    bouquet_app::tracing::info!(event_id = %event.id, kind = %event.kind, %order_id, outcome, "webhook settled");
    Reply::ok(&json!({ "received": true, "eventId": event.id, "outcome": outcome }))
}
