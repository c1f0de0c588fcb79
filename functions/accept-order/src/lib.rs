//! `POST /v1/orders/{orderId}/accept`: its vendor accepts a `paid` order: `accepted` (event `OrderAccepted`).

use bouquet_app::domain::OrderId;
use bouquet_app::orders::Action;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::owned::order_transition;
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route =
    Route::new("POST", "/v1/orders/{orderId}/accept").goes_on_while_suspended();

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    order_transition(ctx, order_id, Action::Accept).await
}
