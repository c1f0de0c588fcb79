//! `PATCH /v1/orders/{orderId}/review` `{stars?, text?}`: its author edits the review within 48
//! hours of writing it (409 `review.edit_window_closed` after); what is left out stays.

use bouquet_app::domain::review::ReviewDraft;
use bouquet_app::domain::OrderId;
use bouquet_app::reviews;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(PATCH "/v1/orders/{orderId}/review" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let draft: ReviewDraft = ctx.json()?;
    let review = reviews::edit(
        &ctx.app,
        caller,
        order_id,
        &draft,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&review)
}
