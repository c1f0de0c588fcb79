//! `POST /v1/orders/{orderId}/payment` `{paymentToken}`: claim before charge.
//!
//! 1. Read the order and the idempotency record (one `BatchGetItem`).
//! 2. Claim: `reserved` → `payment_pending` with the bouquets' hold extended over the attempt
//!    (one `TransactWriteItems`, conditioned on the version read; an expired hold is 409
//!    `reservation.expired` and nothing is charged).
//! 3. Charge through the gateway with the attempt's key (`{orderId}-{attempt}`).
//! 4. Commit `paid` and every bouquet `sold` with `OrderPaid` and the idempotency record
//!    (one `TransactWriteItems`); declined: back to `reserved`, 402 `payment.declined`.
//!
//! When the card needs 3-D Secure (Stripe's `requires_action`) the answer is 202: the order,
//! still `payment_pending`, with `nextAction` `{type: "authenticate", provider, clientSecret}`
//! for Stripe.js; the PSP's webhook (`POST /v1/payments/webhook`) commits how it ended.
//!
//! Paying a paid order returns it. See `bouquet_checkout` for what happens when the process
//! dies between 3 and 4.

use bouquet_app::checkout::{self, CheckoutError};
use bouquet_app::domain::{DomainError, FieldError, OrderId, OrderStatus};
use bouquet_app::payments::{valid_token, ChargeOutcome};
use bouquet_app::store::retry::Retry;
use bouquet_app::store::StoreError;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/payment");

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Payment {
    payment_token: String,
}

/// Names the provider that took the payment (`Payment-Provider: simulated` or `stripe`).
fn provided(ctx: &Ctx, reply: Result<Reply, ApiError>) -> Result<Reply, ApiError> {
    reply.map(|r| r.header("payment-provider", ctx.app.payments.provider()))
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let body: Payment = ctx.json()?;
    if !valid_token(&body.payment_token) {
        return Err(ApiError::Invalid(vec![FieldError::new(
            "paymentToken",
            "must be a payment token such as tok_visa",
        )]));
    }
    let (store, now, correlation) = (&ctx.app.store, ctx.now, ctx.correlation_id.as_str());
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let (order, record) = store
            .read_order_for_change(order_id, ctx.idempotency_key_hash(), now)
            .await?;
        if let Some(record) = record {
            return Ok(Reply::replay(record));
        }
        let order = order
            .filter(|o| o.customer_id == caller.subject)
            .ok_or(ApiError::NotFound("order"))?;
        if matches!(order.status, OrderStatus::Paid | OrderStatus::Fulfilled) {
            return provided(ctx, Reply::ok(&order));
        }
        let mut claimed = order.clone();
        match checkout::claim(store, &mut claimed, correlation, now).await {
            Ok(true) => {}
            Ok(false) => return provided(ctx, Reply::ok(&order)),
            Err(CheckoutError::Changed) => continue,
            // The same request (same key) still running elsewhere.
            Err(CheckoutError::Domain(DomainError::PaymentInProgress))
                if ctx.idempotency_key_hash().is_some() =>
            {
                return Err(ApiError::IdempotencyInProgress)
            }
            Err(other) => return Err(other.into()),
        }
        let outcome = ctx
            .app
            .payments
            .charge(checkout::charge_request(&claimed, &body.payment_token))
            .await;
        return match outcome {
            Ok(ChargeOutcome::Approved { charge_id }) => {
                let mut paid = claimed.clone();
                paid.payment_succeeded(charge_id.clone(), now)?;
                let reply = provided(ctx, Reply::ok(&paid))?;
                let record = ctx.idempotency_record(&reply);
                let committed = checkout::commit_charge(
                    store,
                    ctx.app.payments.as_ref(),
                    &claimed,
                    charge_id,
                    correlation,
                    record.as_ref(),
                    now,
                )
                .await;
                match committed {
                    Ok(_) => Ok(reply),
                    Err(CheckoutError::Store(StoreError::IdempotencyReplay(record))) => {
                        Ok(Reply::replay(*record))
                    }
                    // The PSP's webhook committed this charge first: the order is paid.
                    Err(CheckoutError::Changed) => match store.order(order_id).await? {
                        Some(order)
                            if matches!(
                                order.status,
                                OrderStatus::Paid | OrderStatus::Fulfilled
                            ) =>
                        {
                            provided(ctx, Reply::ok(&order))
                        }
                        _ => Err(ApiError::Busy),
                    },
                    Err(other) => Err(other.into()),
                }
            }
            Ok(ChargeOutcome::RequiresAction {
                intent_id,
                client_secret,
            }) => {
                // The customer authenticates with the PSP's SDK; its webhook commits the
                // outcome. Until then the order stays `payment_pending` without a lease (paying
                // again repeats this attempt: the PSP returns the same intent) and the bouquets
                // stay held over the authentication window.
                bouquet_app::tracing::info!(%order_id, %intent_id, "payment needs authentication");
                let awaiting =
                    checkout::await_authentication(store, &claimed, correlation, now).await?;
                let mut body = serde_json::to_value(&awaiting)
                    .map_err(|e| ApiError::Internal(e.to_string()))?;
                body["nextAction"] = serde_json::json!({
                    "type": "authenticate",
                    "provider": ctx.app.payments.provider(),
                    "clientSecret": client_secret,
                });
                provided(
                    ctx,
                    Reply::json(bouquet_http::lambda_http::http::StatusCode::ACCEPTED, &body),
                )
            }
            Ok(ChargeOutcome::Declined { reason }) => {
                bouquet_app::tracing::info!(%order_id, %reason, "payment declined");
                checkout::decline(store, &claimed, correlation, None, now).await?;
                Err(ApiError::PaymentDeclined)
            }
            Err(error) => {
                bouquet_app::tracing::warn!(%order_id, %error, "payment gateway gave no answer");
                checkout::interrupt(store, &claimed, correlation, now).await?;
                Err(ApiError::PaymentUnavailable)
            }
        };
    }
    Err(ApiError::Busy)
}
