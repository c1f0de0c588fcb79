//! `POST /v1/orders/{orderId}/cancel`: its customer cancels a `reserved` order whose hold is
//! live; its bouquets become available again in the same transaction (`OrderCancelled`).

use bouquet_http::checkout::{self, CheckoutError};
use bouquet_http::domain::OrderId;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, App, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/cancel");

/// Lost a race with another writer (a payment claim, the sweeper): read again, and the
/// domain says what the order is now.
const ATTEMPTS: usize = 3;

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    for _ in 0..ATTEMPTS {
        let order = ctx
            .app
            .store
            .order(order_id)
            .await?
            .filter(|o| o.customer_id == caller.subject)
            .ok_or(ApiError::NotFound("order"))?;
        match checkout::cancel(&ctx.app.store, &order, &ctx.correlation_id, ctx.now).await {
            Ok(cancelled) => return Reply::ok(&cancelled),
            Err(CheckoutError::Changed) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
