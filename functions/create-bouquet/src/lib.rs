//! `POST /v1/vendors/{vendorId}/bouquets`: a vendor lists a bouquet
//! `{name, description?, price, vaseId?, occasions?}` → 201, status `available`
//! ([`bouquet_app::listing::list_bouquet`]).

use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::money::MoneyDto;
use bouquet_app::domain::search::occasions as occasions_of;
use bouquet_app::domain::{Bouquet, VendorId};
use bouquet_app::listing;
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};
use serde::Deserialize;

bouquet_http::route!(POST "/v1/vendors/{vendorId}/bouquets" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Listing {
    name: String,
    description: Option<String>,
    price: MoneyDto,
    vase_id: Option<String>,
    occasions: Option<Vec<String>>,
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    ctx.caller()?.require_vendor(vendor_id)?;
    let body: Listing = ctx.json()?;
    let mut new = NewBouquet::validate(
        &body.name,
        body.description.as_deref(),
        (&body.price.amount, &body.price.currency),
        body.vase_id.as_deref(),
    )?;
    if let Some(occasions) = &body.occasions {
        new.occasions = occasions_of(occasions).map_err(|e| ApiError::Invalid(vec![e]))?;
    }
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
