//! `PUT /v1/orders/{orderId}/review/answer` `{text}`: the reviewed shop answers the review,
//! once (409 `review.already_answered` after).

use bouquet_app::domain::OrderId;
use bouquet_app::{reviews, App};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("PUT", "/v1/orders/{orderId}/review/answer");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerRequest {
    text: String,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let body: AnswerRequest = ctx.json()?;
    let review = reviews::answer(
        &ctx.app,
        caller,
        order_id,
        &body.text,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&review)
}
