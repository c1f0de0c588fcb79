//! `POST /v1/orders/{orderId}/review` `{stars, text?}`: the customer of a delivered order
//! reviews it, once, within 30 days of the delivery: 201 with the review. Another's order is
//! 403 `review.not_allowed`; an undelivered one 409 `review.not_delivered`; a second review
//! 409 `review.exists`; a late one 409 `review.window_closed`.

use bouquet_app::domain::review::ReviewDraft;
use bouquet_app::domain::OrderId;
use bouquet_app::reviews;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(POST "/v1/orders/{orderId}/review" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let draft: ReviewDraft = ctx.json()?;
    let review = reviews::write(
        &ctx.app,
        caller,
        order_id,
        &draft,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::created(&review, format!("/v1/orders/{order_id}/review"))
}
