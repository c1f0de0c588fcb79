//! `GET /v1/vendors/{vendorId}/alerts?limit=&cursor=`: the shop's care alerts, newest first:
//! the open ones and those closed in the last 30 days, each with what the vase read, who
//! acknowledged it and when it closed. For the shop's members only.

use bouquet_app::care;
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/vendors/{vendorId}/alerts" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    // Who may act is answered before the request is validated (403 before 400).
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let limit = ctx.limit()?;
    let page = care::alerts(&ctx.app, caller, vendor_id, ctx.cursor(), limit).await?;
    Reply::ok(&json!({ "items": page.items, "nextCursor": page.next_cursor }))
}
