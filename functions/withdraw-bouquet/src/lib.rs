//! `DELETE /v1/bouquets/{bouquetId}`: its vendor withdraws a bouquet while it is available
//! (409 `bouquet.not_available_for_change` otherwise), taking it out of the vase that still
//! holds it in the same transaction. `If-Match` is honoured when sent
//! ([`bouquet_app::bouquets::withdraw`]).

use bouquet_app::bouquets;
use bouquet_app::domain::BouquetId;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(DELETE "/v1/bouquets/{bouquetId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let caller = ctx.caller()?;
    // Who may withdraw it first: a refusal is 403/404 whatever `If-Match` holds.
    let read = bouquets::editable(&ctx.app, caller, bouquet_id).await?;
    let if_match = ctx.if_match()?;
    let withdrawn = bouquets::withdraw(
        &ctx.app,
        caller,
        read,
        if_match,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&withdrawn.view(ctx.now))
}
