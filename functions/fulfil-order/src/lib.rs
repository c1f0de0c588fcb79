//! `POST /v1/orders/{orderId}/fulfil`: its vendor marks a `paid` order `fulfilled`
//! (`OrderFulfilled`).

use bouquet_app::domain::OrderId;
use bouquet_app::orders::Action;
use bouquet_http::owned::order_transition;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(POST "/v1/orders/{orderId}/fulfil" => handle, goes_on_while_suspended);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    order_transition(ctx, order_id, Action::Fulfil).await
}
