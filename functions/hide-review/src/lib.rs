//! `PUT /v1/orders/{orderId}/review/hidden` `{reason}`: an administrator hides the review with a
//! reason; its author is told (`ReviewHidden` on their orders channel) and the shop's rating
//! stops counting it. Hiding it again changes nothing.

use bouquet_app::domain::OrderId;
use bouquet_app::{reviews, App};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("PUT", "/v1/orders/{orderId}/review/hidden");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HideRequest {
    reason: String,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
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
