//! `POST /v1/orders/{orderId}/cancel`: its customer cancels a `reserved` order whose hold is
//! live; its bouquets become available again in the same transaction (`OrderCancelled`).

use bouquet_http::checkout;
use bouquet_http::domain::OrderId;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, App, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/cancel");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let order = ctx
        .app
        .store
        .order(order_id)
        .await?
        .filter(|o| o.customer_id == caller.subject)
        .ok_or(ApiError::NotFound("order"))?;
    let cancelled = checkout::cancel(&ctx.app.store, &order, &ctx.correlation_id, ctx.now)
        .await
        .map_err(changed_is_conflict)?;
    Reply::ok(&cancelled)
}

/// Another writer changed the order between read and write (a payment claim, the
/// sweeper): this cancellation lost the race.
fn changed_is_conflict(error: checkout::CheckoutError) -> ApiError {
    match error {
        checkout::CheckoutError::Changed => {
            ApiError::OrderInvalidState(bouquet_http::domain::OrderStatus::PaymentPending)
        }
        other => other.into(),
    }
}
