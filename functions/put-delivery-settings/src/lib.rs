//! `PUT /v1/vendors/{vendorId}/delivery-settings`: its vendor sets its delivery area
//! (countries, postcode prefixes), days, horizon and same-day cut-off in its time zone. Once
//! set, a change needs `If-Match` with the version (`DeliverySettingsChanged`).

use bouquet_app::delivery::{self, SettingsReader};
use bouquet_app::domain::delivery::DeliverySettings;
use bouquet_app::domain::VendorId;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};

pub const ROUTE: Route = Route::new("PUT", "/v1/vendors/{vendorId}/delivery-settings");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

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
