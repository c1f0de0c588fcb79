//! `PUT /v1/vendors/{vendorId}/suspension`: an administrator suspends the shop
//! (`VendorSuspended`): its bouquets leave the catalogue and cannot be reserved, it cannot list
//! new ones; its open orders go on. Idempotent: sending it again changes nothing more than
//! what a failed first attempt left undone ([`bouquet_app::shops::suspend`]).

use bouquet_app::domain::VendorId;
use bouquet_app::shops;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("PUT", "/v1/vendors/{vendorId}/suspension");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    let changed = shops::suspend(&ctx.app, caller, vendor_id, &ctx.correlation_id, ctx.now).await?;
    Reply::ok(&json!({ "vendor": changed.vendor, "bouquetsMoved": changed.bouquets_moved }))
}
