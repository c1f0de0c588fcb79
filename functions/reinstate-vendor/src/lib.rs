//! `DELETE /v1/vendors/{vendorId}/suspension`: an administrator reinstates the shop
//! (`VendorReinstated`): its bouquets that were on sale are on the catalogue again. Idempotent
//! ([`bouquet_app::shops::reinstate`]).

use bouquet_app::domain::VendorId;
use bouquet_app::shops;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(DELETE "/v1/vendors/{vendorId}/suspension" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    let changed =
        shops::reinstate(&ctx.app, caller, vendor_id, &ctx.correlation_id, ctx.now).await?;
    Reply::ok(&json!({ "vendor": changed.vendor, "bouquetsMoved": changed.bouquets_moved }))
}
