//! `PUT /v1/vendors/{vendorId}/delivery-settings`: its vendor sets its delivery area
//! (countries, postcode prefixes), days, horizon and same-day cut-off in its time zone. Once
//! set, a change needs `If-Match` with the version (`DeliverySettingsChanged`).

use bouquet_app::delivery::{self, SettingsReader};
use bouquet_app::domain::delivery::DeliverySettings;
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(PUT "/v1/vendors/{vendorId}/delivery-settings" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    // Who may change them first: a refusal is 403 whatever the request holds.
    caller.require_vendor(vendor_id)?;
    let if_match = ctx.if_match()?;
    let settings: DeliverySettings = ctx.json()?;
    let saved = delivery::change_settings(
        &ctx.app,
        caller,
        vendor_id,
        settings,
        if_match,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    let view = delivery::settings_view(vendor_id, &saved, SettingsReader::Shop, ctx.now)
        .map_err(ApiError::internal)?;
    Ok(Reply::ok(&view)?.header("etag", format!("\"{}\"", saved.version)))
}
