//! `DELETE /v1/vases/{vaseId}`: the vase's vendor decommissions it: 204, the vase item
//! deleted with its `VaseDecommissioned` event, then its IoT thing and certificates removed.
//! Refused with 409 `vase.in_use` while the bouquet standing in it is on sale (available or
//! reserved; a sold or withdrawn one does not keep it). Like every DELETE here it
//! takes no `Idempotency-Key`: a retry after it succeeded is 404.
//!
//! The table first: once the item is gone the vase cannot be used through the API, and
//! whatever of its IoT resources could not be removed (logged) has no vase, so the
//! reconciliation sweep (`reconcile-vase-things`) removes it later.

use bouquet_app::domain::VaseId;
use bouquet_app::vase_saga;
use bouquet_http::lambda_http::http::StatusCode;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(DELETE "/v1/vases/{vaseId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let registrar = ctx.app.ports.registrar().await?;
    let vase_id = ctx.path("vaseId", VaseId::parse)?;
    let caller = ctx.caller()?;
    vase_saga::decommission(
        &ctx.app,
        registrar,
        caller,
        vase_id,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}
