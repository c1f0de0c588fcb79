//! `GET /v1/vendors/{vendorId}/vase-rules`: the shop's markdown rule and care thresholds (the
//! defaults at version 0 when it set none), for its members, with the version as `ETag`.

use bouquet_app::care;
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/vendors/{vendorId}/vase-rules" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let rules = care::rules(&ctx.app, caller, vendor_id).await?;
    Ok(Reply::ok(&rules)?.header("etag", format!("\"{}\"", rules.version)))
}
