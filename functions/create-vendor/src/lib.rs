//! `POST /v1/vendors`: an admin onboards a vendor `{name}` → 201 with the vendor.

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::Vendor;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};
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

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Admin)?;
    let body: NewVendor = ctx.json()?;
    let vendor = Vendor::onboard(&body.name, ctx.now)?;
    let event = DomainEvent::new(
        vendor.vendor_id,
        vendor.version,
        ctx.now,
        &ctx.correlation_id,
        EventData::VendorOnboarded {
            vendor_id: vendor.vendor_id,
            name: vendor.name.clone(),
        },
    );
    let reply = Reply::created(&vendor, format!("/v1/vendors/{}", vendor.vendor_id))?;
    let record = ctx.idempotency_record(&reply);
    let created = ctx
        .app
        .store
        .create_vendor(&vendor, &event, record.as_ref(), ctx.now)
        .await;
    Ok(match Reply::or_replay(created)? {
        Ok(()) => reply,
        Err(replay) => replay,
    })
}
