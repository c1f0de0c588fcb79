//! `POST /v1/payments/webhook`: Stripe's events about the marketplace's PaymentIntents and its
//! shops' connected accounts. No JWT: the `Stripe-Signature` header is checked instead
//! (HMAC-SHA256 of `timestamp.body`, 5 minutes' tolerance, constant-time comparison) under
//! one of two signing secrets, as Stripe documents it: the platform endpoint's (payments) and
//! the Connect endpoint's (connected accounts' events); both endpoints may share this URL. A
//! request that does not verify is 400 and writes nothing. An event is acted on only if it
//! came to its own endpoint and its `livemode` is the deployment's (`STRIPE_LIVEMODE`): a
//! test-mode event at a live deployment is acknowledged, counted and dropped.
//!
//! - `payment_intent.succeeded`: the attempt it paid becomes `paid` (bouquets `sold`), once;
//!   money for an attempt that no longer stands (the hold lapsed, another attempt paid) is
//!   refunded.
//! - `payment_intent.payment_failed` / `canceled`: the attempt is released (`reserved`, or
//!   `expired` past its hold).
//! - `account.updated` of a shop's connected account (its `metadata.vendorId`): whether it
//!   takes charges and pays out, recorded unless an earlier-created report arrived late.
//! - Any other event, or an intent that is not the marketplace's: 200, nothing done (Stripe
//!   stops retrying).
//!
//! Each transition is written with an idempotency record keyed by Stripe's event id, so a
//! redelivered event changes nothing; every transition is conditional on the order's version,
//! so late and out-of-order events cannot undo a later state.

use bouquet_app::checkout::{self, CheckoutError, Settled, Settlement};
use bouquet_app::domain::vendor::AccountReport;
use bouquet_app::domain::{FieldError, OrderId, Timestamp, VendorId};
use bouquet_app::idempotency::IdempotencyPut;
use bouquet_app::metrics;
use bouquet_app::payments::stripe_webhook::{self, PaymentEvent};
use bouquet_app::payouts::{self, Reported};
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(POST "/v1/payments/webhook" => handle);

/// Whether this deployment takes live-mode events (`STRIPE_LIVEMODE=true`, the prod stage's);
/// read once per container.
static LIVE_MODE: std::sync::LazyLock<bool> =
    std::sync::LazyLock::new(|| std::env::var("STRIPE_LIVEMODE").is_ok_and(|v| v == "true"));

/// Acknowledges an event the marketplace does not act on (200: Stripe stops retrying),
/// counted by why.
fn dropped(event: &stripe_webhook::Event, outcome: &'static str) -> Result<Reply, ApiError> {
    metrics::count(metrics::WEBHOOK_EVENTS, outcome, 1);
    bouquet_app::tracing::info!(event_id = %event.id, kind = %event.kind, outcome, "webhook event dropped");
    Reply::ok(&json!({ "received": true, "eventId": event.id, "outcome": outcome }))
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let endpoint = stripe_webhook::verify_endpoint(
        ctx.header("stripe-signature"),
        ctx.raw_body(),
        ctx.app.ports.webhook_secret().await?,
        ctx.app.ports.connect_webhook_secret().await?,
        ctx.now.as_epoch_seconds(),
    )
    .map_err(|error| {
        bouquet_app::tracing::warn!(%error, "webhook refused");
        ApiError::Invalid(vec![FieldError::new("Stripe-Signature", error)])
    })?;
    let event: stripe_webhook::Event = ctx.json()?;
    if event.livemode != *LIVE_MODE {
        return dropped(&event, "other_mode");
    }
    // A connected account's event comes only to the Connect endpoint, and the platform's
    // own only to its endpoint: anything else was not sent by Stripe as configured.
    let to_connect = event.connected_account.is_some();
    if to_connect != (endpoint == stripe_webhook::Endpoint::Connect) {
        return dropped(&event, "wrong_endpoint");
    }
    if let Some(account) = event.account() {
        metrics::count(metrics::WEBHOOK_EVENTS, "acted", 1);
        return account_updated(ctx, &event, account).await;
    }
    let Some(payment) = event.payment() else {
        return dropped(&event, "ignored");
    };
    metrics::count(metrics::WEBHOOK_EVENTS, "acted", 1);
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

/// A shop's connected account changed at Stripe.
async fn account_updated(
    ctx: &Ctx,
    event: &stripe_webhook::Event,
    account: stripe_webhook::AccountEvent,
) -> Result<Reply, ApiError> {
    let Ok(vendor_id) = VendorId::parse(&account.vendor_id) else {
        return Reply::ok(&json!({ "received": true, "outcome": "ignored" }));
    };
    let report = AccountReport {
        account_id: account.account_id,
        charges_enabled: account.charges_enabled,
        payouts_enabled: account.payouts_enabled,
        reported_at: Timestamp::from_millis(account.created.saturating_mul(1000)),
    };
    let outcome =
        match payouts::record_report(&ctx.app, vendor_id, &report, &ctx.correlation_id, ctx.now)
            .await?
        {
            Reported::Changed => "changed",
            Reported::Confirmed => "confirmed",
            Reported::Ignored => "ignored",
        };
    bouquet_app::tracing::info!(event_id = %event.id, %vendor_id, outcome, "account report");
    Reply::ok(&json!({ "received": true, "eventId": event.id, "outcome": outcome }))
}
