//! `POST /v1/vendors`: an admin onboards a vendor `{name}` → 201 with the vendor
//! ([`bouquet_app::listing::onboard_vendor`]).

use bouquet_app::domain::Vendor;
use bouquet_app::listing;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, KeyedRequest, Reply, Role, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("POST", "/v1/vendors");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewVendor {
    name: String,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
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
