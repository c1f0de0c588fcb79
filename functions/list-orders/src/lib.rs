//! `GET /v1/orders`: a customer's own orders, or a vendor's orders, newest first; a vendor's
//! by `status` and delivery day (`deliveryFrom`, `deliveryTo`) in delivery order.

use bouquet_app::queries;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/orders" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let limit = ctx.limit()?;
    let filter = queries::OrderFilter::parse(
        ctx.query("status"),
        ctx.query("deliveryFrom"),
        ctx.query("deliveryTo"),
    )?;
    let page = queries::orders(&ctx.app, caller, &filter, ctx.cursor(), limit).await?;
    let items: Vec<_> = page.items.iter().map(|o| o.as_seen_at(ctx.now)).collect();
    Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))
}
