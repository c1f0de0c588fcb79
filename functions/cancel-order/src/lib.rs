//! `POST /v1/orders/{orderId}/cancel`: its customer cancels a `reserved` order whose hold is
//! live; its bouquets become available again in the same transaction (`OrderCancelled`).

use bouquet_app::domain::OrderId;
use bouquet_app::orders::Action;
use bouquet_http::owned::order_transition;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(POST "/v1/orders/{orderId}/cancel" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Customer)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    order_transition(ctx, order_id, Action::Cancel).await
}
