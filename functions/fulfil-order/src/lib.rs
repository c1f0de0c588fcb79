//! `POST /v1/orders/{orderId}/fulfil`: its vendor marks a `paid` order `fulfilled`.

use bouquet_http::checkout;
use bouquet_http::domain::OrderId;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, App, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/fulfil");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let order = ctx
        .app
        .store
        .order(order_id)
        .await?
        .filter(|o| caller.vendor_id == Some(o.vendor_id))
        .ok_or(ApiError::NotFound("order"))?;
    Reply::ok(&checkout::fulfil(&ctx.app.store, &order, &ctx.correlation_id, ctx.now).await?)
}
