//! `POST /v1/orders/{orderId}/fulfil`: its vendor marks a `paid` order `fulfilled`
//! (`OrderFulfilled`).

use bouquet_app::checkout;
use bouquet_app::domain::OrderId;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/fulfil");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let order = bouquet_app::orders::transition(
        &ctx.app.store,
        order_id,
        |o| caller.vendor_id == Some(o.vendor_id),
        checkout::fulfil,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&order)
}
