//! `PATCH /v1/orders/{orderId}/review` `{stars?, text?}`: its author edits the review within 48
//! hours of writing it (409 `review.edit_window_closed` after); what is left out stays.

use bouquet_app::domain::review::ReviewDraft;
use bouquet_app::domain::OrderId;
use bouquet_app::{reviews, App};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};

pub const ROUTE: Route = Route::new("PATCH", "/v1/orders/{orderId}/review");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

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
