//! `POST /v1/orders/{orderId}/fulfil`: its vendor marks a `paid` order `fulfilled`
//! (`OrderFulfilled`).

use bouquet_http::checkout::{self, CheckoutError};
use bouquet_http::domain::OrderId;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, App, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/fulfil");

/// Lost a race (a second fulfilment): read again, and the domain says what the order is.
const ATTEMPTS: usize = 3;

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    for _ in 0..ATTEMPTS {
        let order = ctx
            .app
            .store
            .order(order_id)
            .await?
            .filter(|o| caller.vendor_id == Some(o.vendor_id))
            .ok_or(ApiError::NotFound("order"))?;
        match checkout::fulfil(&ctx.app.store, &order, &ctx.correlation_id, ctx.now).await {
            Ok(fulfilled) => return Reply::ok(&fulfilled),
            Err(CheckoutError::Changed) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
