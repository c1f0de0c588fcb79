//! `PUT /v1/vendors/{vendorId}/suspension`: an administrator suspends the shop
//! (`VendorSuspended`): its bouquets leave the catalogue and cannot be reserved, it cannot list
//! new ones; its open orders go on. Idempotent: sending it again changes nothing more than
//! what a failed first attempt left undone ([`bouquet_app::shops::suspend`]).

use bouquet_app::domain::VendorId;
use bouquet_app::shops;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(PUT "/v1/vendors/{vendorId}/suspension" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    let changed = shops::suspend(&ctx.app, caller, vendor_id, &ctx.correlation_id, ctx.now).await?;
    Reply::ok(&json!({ "vendor": changed.vendor, "bouquetsMoved": changed.bouquets_moved }))
}
