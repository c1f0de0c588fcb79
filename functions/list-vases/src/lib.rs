//! `GET /v1/vendors/{vendorId}/vases`: that vendor's vases with `connection` (`online`,
//! `offline`, `never_seen`), `lastHeartbeatAt` and the latest reading. A vase silent for
//! longer than the offline threshold reads as offline even before the sweeper ran.

use bouquet_app::domain::VendorId;
use bouquet_app::queries;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/vendors/{vendorId}/vases" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    // Who may act is answered before the request is validated (403 before 400).
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let limit = ctx.limit()?;
    let page = queries::vases(&ctx.app, caller, vendor_id, ctx.cursor(), limit).await?;
    let offline_after = ctx.app.config.offline_after;
    let items: Vec<_> = page
        .items
        .iter()
        .map(|v| v.view(ctx.now, offline_after))
        .collect();
    Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))
}
