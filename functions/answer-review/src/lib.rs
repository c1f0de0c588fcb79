//! `PUT /v1/orders/{orderId}/review/answer` `{text}`: the reviewed shop answers the review,
//! once (409 `review.already_answered` after).

use bouquet_app::domain::OrderId;
use bouquet_app::reviews;
use bouquet_http::{ApiError, Ctx, Reply};
use serde::Deserialize;

bouquet_http::route!(PUT "/v1/orders/{orderId}/review/answer" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerRequest {
    text: String,
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
