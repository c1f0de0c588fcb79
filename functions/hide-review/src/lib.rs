//! `PUT /v1/orders/{orderId}/review/hidden` `{reason}`: an administrator hides the review with a
//! reason; its author is told (`ReviewHidden` on their orders channel) and the shop's rating
//! stops counting it. Hiding it again changes nothing.

use bouquet_app::domain::OrderId;
use bouquet_app::reviews;
use bouquet_http::{ApiError, Ctx, Reply};
use serde::Deserialize;

bouquet_http::route!(PUT "/v1/orders/{orderId}/review/hidden" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HideRequest {
    reason: String,
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let body: HideRequest = ctx.json()?;
    let review = reviews::hide(
        &ctx.app,
        caller,
        order_id,
        &body.reason,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&review)
}
