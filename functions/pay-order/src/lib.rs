//! `POST /v1/orders/{orderId}/payment` `{paymentToken}`: claim before charge, through
//! [`bouquet_app::payment::pay`].
//!
//! 200 with the paid order; 202 with `nextAction` `{type: "authenticate", provider,
//! clientSecret}` when the card needs 3-D Secure (Stripe.js completes it; the PSP's webhook
//! commits how it ended); every answer names the provider (`Payment-Provider`).

use bouquet_app::domain::{Order, OrderId};
use bouquet_app::payment::{self, Paid};
use bouquet_http::lambda_http::http::StatusCode;
use bouquet_http::owned::{order_idempotency, order_reply};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply, Role};
use serde::Deserialize;

bouquet_http::route!(POST "/v1/orders/{orderId}/payment" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Payment {
    payment_token: String,
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    // Read now, judged by the use case once the order is the caller's: another customer's
    // order is 404 whatever the body held.
    let body: Option<Payment> = ctx.json().ok();
    let provider = ctx.app.payments.provider();
    let paid = |order: &Order| Ok(Reply::ok(order)?.header("payment-provider", provider));
    let key = order_idempotency(ctx, paid);
    let outcome = payment::pay(
        &ctx.app,
        &caller.subject,
        order_id,
        body.as_ref().map(|b| b.payment_token.as_str()),
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    order_reply(ctx, outcome, |outcome| match outcome {
        Paid::Paid(order) => paid(order),
        Paid::Authenticate {
            order,
            client_secret,
        } => {
            let mut body = serde_json::to_value(order).map_err(ApiError::internal)?;
            body["nextAction"] = serde_json::json!({
                "type": "authenticate",
                "provider": provider,
                "clientSecret": client_secret,
            });
            Ok(Reply::json(StatusCode::ACCEPTED, &body)?.header("payment-provider", provider))
        }
    })
    .await
}
