//! `GET /v1/orders/{orderId}/invoice`: a paid order's invoice as a printable HTML page, for its
//! customer, its shop and the administrators (anyone else: 404, as for the order). An order
//! that was never paid has no invoice: 409 `order.invalid_state`.

use bouquet_app::domain::OrderId;
use bouquet_app::invoice;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/orders/{orderId}/invoice" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let page = invoice::page(&ctx.app, caller, order_id, ctx.now).await?;
    Ok(Reply::document("text/html; charset=utf-8", page))
}
