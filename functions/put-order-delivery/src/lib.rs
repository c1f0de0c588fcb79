//! `PUT /v1/orders/{orderId}/delivery`: its customer gives or changes the delivery details
//! (recipient, address, date, slot, card message) while the order is reserved, or paid and not
//! yet accepted. Requires `If-Match` with the order's version; each problem is a field error
//! ([`bouquet_app::delivery::set_order_delivery`]).

use bouquet_app::delivery;
use bouquet_app::domain::delivery::DeliveryRequest;
use bouquet_app::domain::{Order, OrderId};
use bouquet_http::owned::{order_idempotency, order_reply};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply, Role};

bouquet_http::route!(PUT "/v1/orders/{orderId}/delivery" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let if_match = ctx.if_match()?;
    let request: DeliveryRequest = ctx.json()?;
    let key = order_idempotency(ctx, reply);
    let outcome = delivery::set_order_delivery(
        &ctx.app,
        caller,
        order_id,
        &request,
        if_match,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    order_reply(ctx, outcome, reply).await
}

fn reply(order: &Order) -> Result<Reply, ApiError> {
    Ok(Reply::ok(order)?.header("etag", format!("\"{}\"", order.version)))
}
