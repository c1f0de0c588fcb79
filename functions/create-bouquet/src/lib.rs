//! `POST /v1/vendors/{vendorId}/bouquets`: a vendor lists a bouquet
//! `{name, description?, price, vaseId?}` → 201, status `available`
//! ([`bouquet_app::listing::list_bouquet`]).

use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::money::MoneyDto;
use bouquet_app::domain::{Bouquet, VendorId};
use bouquet_app::listing;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, KeyedRequest, Reply, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("POST", "/v1/vendors/{vendorId}/bouquets");

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Listing {
    name: String,
    description: Option<String>,
    price: MoneyDto,
    vase_id: Option<String>,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    ctx.caller()?.require_vendor(vendor_id)?;
    let body: Listing = ctx.json()?;
    let new = NewBouquet::validate(
        &body.name,
        body.description.as_deref(),
        (&body.price.amount, &body.price.currency),
        body.vase_id.as_deref(),
    )?;
    let now = ctx.now;
    let reply = move |bouquet: &Bouquet| {
        Ok(Reply::created(
            &bouquet.view(now),
            format!("/v1/bouquets/{}", bouquet.bouquet_id),
        )?
        .header("etag", format!("\"{}\"", bouquet.version)))
    };
    let key = ctx.idempotency(reply);
    let outcome = listing::list_bouquet(
        &ctx.app,
        vendor_id,
        new,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        now,
    )
    .await?;
    Reply::from_outcome(outcome, reply)
}
