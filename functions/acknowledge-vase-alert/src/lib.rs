//! `POST /v1/vendors/{vendorId}/alerts/{alertId}/acknowledge`: a member of the shop says it
//! saw the alert (`VaseAlertAcknowledged`), once: a second acknowledgement is a 409
//! `alert.already_acknowledged` (with the same `Idempotency-Key`, the first answer again).
//! Acknowledging does not close it: the vase's readings do.

use bouquet_app::care;
use bouquet_app::domain::care::parse_alert_id;
use bouquet_app::domain::care::VaseAlert;
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};

bouquet_http::route!(POST "/v1/vendors/{vendorId}/alerts/{alertId}/acknowledge" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let alert_id = ctx.path("alertId", parse_alert_id)?;
    let key = ctx.idempotency(|alert: &VaseAlert| Reply::ok(alert));
    let outcome = care::acknowledge(
        &ctx.app,
        caller,
        vendor_id,
        &alert_id,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, |alert: &VaseAlert| Reply::ok(alert))
}
