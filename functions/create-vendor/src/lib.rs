//! `POST /v1/vendors`: an admin onboards a vendor `{name}` → 201 with the vendor
//! ([`bouquet_app::listing::onboard_vendor`]).

use bouquet_app::domain::Vendor;
use bouquet_app::listing;
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply, Role};
use serde::Deserialize;

bouquet_http::route!(POST "/v1/vendors" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewVendor {
    name: String,
}

fn reply(vendor: &Vendor) -> Result<Reply, ApiError> {
    Reply::created(vendor, format!("/v1/vendors/{}", vendor.vendor_id))
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Admin)?;
    let body: NewVendor = ctx.json()?;
    let key = ctx.idempotency(reply);
    let outcome = listing::onboard_vendor(
        &ctx.app,
        &body.name,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, reply)
}
