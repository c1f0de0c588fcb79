//! `PATCH /v1/bouquets/{bouquetId}`: its vendor changes name, description or price while the
//! bouquet is available. Requires `If-Match` with the current version (412 on mismatch).

use bouquet_app::domain::bouquet::{BouquetChange, BouquetView};
use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::money::MoneyDto;
use bouquet_app::domain::BouquetId;
use bouquet_app::store::StoreError;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::owned::{refused_change, vendor_bouquet};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("PATCH", "/v1/bouquets/{bouquetId}");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    name: Option<String>,
    description: Option<String>,
    price: Option<MoneyDto>,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    ctx.caller()?;
    let if_match = ctx.if_match()?;
    let patch: Patch = ctx.json()?;
    let change = BouquetChange::validate(
        patch.name.as_deref(),
        patch.description.as_deref(),
        patch
            .price
            .as_ref()
            .map(|p| (p.amount.as_str(), p.currency.as_str())),
    )?;
    // Authorization first (403 for another vendor's bouquet), then the precondition.
    let read = vendor_bouquet(ctx, bouquet_id, if_match).await?;
    let expected = if_match.ok_or(ApiError::PreconditionRequired)?;
    let mut changed = read.clone();
    changed.change(change, ctx.now)?;
    let event = DomainEvent::new(
        bouquet_id,
        changed.version,
        ctx.now,
        &ctx.correlation_id,
        EventData::BouquetChanged {
            bouquet_id,
            vendor_id: changed.vendor_id,
            name: changed.name.clone(),
            description: changed.description.clone(),
            price: changed.price,
        },
    );
    match ctx
        .app
        .store
        .save_bouquet(&changed, read.version, &event, ctx.now)
        .await
    {
        Ok(()) => reply(changed.view(ctx.now)),
        Err(StoreError::ConditionFailed(conflicts)) => {
            refused_change(conflicts, ctx, Some(expected))?;
            Err(ApiError::PreconditionFailed(
                "the bouquet has changed since that version; fetch it again",
            ))
        }
        Err(other) => Err(other.into()),
    }
}

fn reply(view: BouquetView) -> Result<Reply, ApiError> {
    let etag = format!("\"{}\"", view.version);
    Ok(Reply::ok(&view)?.header("etag", etag))
}
