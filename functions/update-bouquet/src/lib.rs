//! `PATCH /v1/bouquets/{bouquetId}`: its vendor changes name, description or price (the new
//! list price: a markdown starts again from it), or opts it out of markdowns, or tags its occasions, while the
//! bouquet is available. Requires `If-Match` with the current version (412 on mismatch)
//! ([`bouquet_app::bouquets::change`]).

use bouquet_app::bouquets;
use bouquet_app::domain::bouquet::BouquetChange;
use bouquet_app::domain::money::MoneyDto;
use bouquet_app::domain::{Bouquet, BouquetId};
use bouquet_http::{ApiError, Ctx, Reply};
use serde::Deserialize;

bouquet_http::route!(PATCH "/v1/bouquets/{bouquetId}" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    name: Option<String>,
    description: Option<String>,
    price: Option<MoneyDto>,
    #[serde(rename = "markdownOptOut")]
    markdown_opt_out: Option<bool>,
    occasions: Option<Vec<String>>,
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let caller = ctx.caller()?;
    // Who may change it first: a refusal is 403/404 whatever the request holds.
    let read = bouquets::editable(&ctx.app, caller, bouquet_id).await?;
    let if_match = ctx.if_match()?;
    let patch: Patch = ctx.json()?;
    let change = BouquetChange::validate(
        patch.name.as_deref(),
        patch.description.as_deref(),
        patch
            .price
            .as_ref()
            .map(|p| (p.amount.as_str(), p.currency.as_str())),
        patch.markdown_opt_out,
        patch.occasions.as_deref(),
    )?;
    let changed = bouquets::change(
        &ctx.app,
        read,
        if_match,
        change,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    reply(ctx, &changed)
}

fn reply(ctx: &Ctx, bouquet: &Bouquet) -> Result<Reply, ApiError> {
    let etag = format!("\"{}\"", bouquet.version);
    Ok(Reply::ok(&bouquet.view(ctx.now))?.header("etag", etag))
}
