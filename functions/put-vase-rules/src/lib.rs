//! `PUT /v1/vendors/{vendorId}/vase-rules`: its vendor sets its markdown rule (steps, floor,
//! withdrawal score) and its care thresholds. Once set, a change needs `If-Match` with the
//! version (`VaseRulesChanged`). The next reading of each vase applies them.

use bouquet_app::care::{self, RulesChange};
use bouquet_app::domain::VendorId;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(PUT "/v1/vendors/{vendorId}/vase-rules" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    // Who may change them first: a refusal is 403 whatever the request holds.
    caller.require_vendor(vendor_id)?;
    let if_match = ctx.if_match()?;
    let change: RulesChange = ctx.json()?;
    let saved = care::change_rules(
        &ctx.app,
        caller,
        vendor_id,
        change,
        if_match,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Ok(Reply::ok(&saved)?.header("etag", format!("\"{}\"", saved.version)))
}
