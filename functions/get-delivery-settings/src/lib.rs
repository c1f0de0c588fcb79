//! `GET /v1/vendors/{vendorId}/delivery-settings`: where, on which days and how far ahead a
//! shop delivers, and its same-day cut-off: public, so the checkout shows them before the
//! customer types. A shop that never set them has the defaults at version 0. The shop's
//! contact address is not shown (only whether one is set).

use bouquet_app::delivery::{self, SettingsReader};
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/vendors/{vendorId}/delivery-settings" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let saved = delivery::settings(&ctx.app, vendor_id).await?;
    let view = delivery::settings_view(vendor_id, &saved, SettingsReader::Public, ctx.now)
        .map_err(ApiError::internal)?;
    Ok(Reply::ok(&view)?
        .header("etag", format!("\"{}\"", saved.version))
        .header("cache-control", "public, max-age=60"))
}
