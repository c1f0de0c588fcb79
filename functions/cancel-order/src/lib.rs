//! `POST /v1/orders/{orderId}/cancel`: its customer cancels a `reserved` order whose hold is
//! live; its bouquets become available again in the same transaction (`OrderCancelled`).

use bouquet_app::checkout::CheckoutError;
use bouquet_app::domain::Order;
use bouquet_app::domain::OrderId;
use bouquet_app::orders::{Action, TransitionError};
use bouquet_app::store::StoreError;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("POST", "/v1/orders/{orderId}/cancel");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    // A retried request with its Idempotency-Key gets the answer it got the first time.
    if let Some(replay) = ctx.stored_reply().await? {
        return Ok(replay);
    }
    let record_for = |order: &Order| {
        Reply::ok(order)
            .ok()
            .and_then(|r| ctx.idempotency_record(&r))
    };
    let result = bouquet_app::orders::transition(
        &ctx.app.store,
        order_id,
        |o| o.customer_id == caller.subject,
        Action::Cancel,
        &record_for,
        &ctx.correlation_id,
        ctx.now,
    )
    .await;
    match result {
        Ok(order) => Reply::ok(&order),
        // A concurrent duplicate with the same key committed first.
        Err(TransitionError::Checkout(CheckoutError::Store(StoreError::IdempotencyReplay(
            record,
        )))) => Ok(Reply::replay(*record)),
        Err(other) => Err(other.into()),
    }
}
