//! `GET /v1/orders/{orderId}`: one order, for its customer, its vendor or an admin. Anyone
//! else gets 404, not 403: an order id must not reveal that the order exists.

use bouquet_app::domain::OrderId;
use bouquet_app::queries;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};

pub const ROUTE: Route = Route::new("GET", "/v1/orders/{orderId}");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let order = queries::order(&ctx.app, caller, order_id).await?;
    Reply::ok(&order.as_seen_at(ctx.now))
}
