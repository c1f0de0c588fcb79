//! `POST /v1/vendors/{vendorId}/bouquets`: a vendor lists a bouquet
//! `{name, description?, price, vaseId?}` → 201, status `available`.

use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::money::MoneyDto;
use bouquet_app::domain::{Bouquet, FieldError, VendorId};
use bouquet_app::store::{StoreError, Target};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
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
    let bouquet = Bouquet::list(vendor_id, new, ctx.now);
    let event = DomainEvent::new(
        bouquet.bouquet_id,
        bouquet.version,
        ctx.now,
        &ctx.correlation_id,
        EventData::BouquetListed {
            bouquet_id: bouquet.bouquet_id,
            vendor_id,
            name: bouquet.name.clone(),
            price: bouquet.price,
            vase_id: bouquet.vase_id,
        },
    );
    let reply = Reply::created(
        &bouquet.view(ctx.now),
        format!("/v1/bouquets/{}", bouquet.bouquet_id),
    )?
    .header("etag", format!("\"{}\"", bouquet.version));
    match ctx
        .app
        .store
        .create_bouquet(
            &bouquet,
            &event,
            ctx.idempotency_record(&reply).as_ref(),
            ctx.now,
        )
        .await
    {
        Ok(()) => Ok(reply),
        Err(StoreError::ConditionFailed(conflicts)) => Err(match conflicts[0].target {
            Target::Vendor(_) => ApiError::NotFound("vendor"),
            Target::Vase(_) => ApiError::Invalid(vec![FieldError::new(
                "vaseId",
                "is not a vase of this vendor",
            )]),
            _ => ApiError::Internal(format!("listing refused on {:?}", conflicts[0].target)),
        }),
        Err(StoreError::IdempotencyReplay(record)) => Ok(Reply::replay(*record)),
        Err(other) => Err(other.into()),
    }
}
