//! `DELETE /v1/vases/{vaseId}`: the vase's vendor decommissions it: 204, the vase item
//! deleted with its `VaseDecommissioned` event, then its IoT thing and certificates removed.
//! Refused with 409 `vase.in_use` while a bouquet stands in it. Like every DELETE here it
//! takes no `Idempotency-Key`: a retry after it succeeded is 404.
//!
//! The table first: once the item is gone the vase cannot be used through the API, and
//! whatever of its IoT resources could not be removed (logged) has no vase, so the
//! reconciliation sweep (`reconcile-vase-things`) removes it later.

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::VaseId;
use bouquet_app::store::retry::Retry;
use bouquet_app::store::{StoreError, Target};
use bouquet_app::App;
use bouquet_http::lambda_http::http::StatusCode;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{owned, run, ApiError, Ctx, Reply, Route};
use bouquet_iot::Registrar;

pub const ROUTE: Route = Route::new("DELETE", "/v1/vases/{vaseId}");

pub async fn handler(
    app: &App,
    registrar: &Registrar,
    request: Request,
) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, async |ctx: &Ctx| {
        handle(ctx, registrar).await
    })
    .await
}

async fn handle(ctx: &Ctx, registrar: &Registrar) -> Result<Reply, ApiError> {
    let vase_id = ctx.path("vaseId", VaseId::parse)?;
    let reply = Reply::empty(StatusCode::NO_CONTENT);
    let mut retry = Retry::optimistic();
    loop {
        let vase = owned::vendor_vase(ctx, vase_id).await?;
        vase.decommission().map_err(ApiError::VaseInUse)?;
        let event = DomainEvent::new(
            vase_id,
            vase.next_version().version,
            ctx.now,
            &ctx.correlation_id,
            EventData::VaseDecommissioned {
                vase_id,
                vendor_id: vase.vendor_id,
            },
        );
        match ctx.app.store.decommission_vase(&vase, &event).await {
            Ok(()) => break,
            // Changed since the read (a heartbeat, a bouquet placed, a concurrent
            // decommission): read and decide again.
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vase(_))) =>
            {
                if !retry.wait().await {
                    return Err(ApiError::Busy);
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
    let thing = vase_id.to_string();
    let registry = registrar.registry.clone();
    let policy = registrar.policy.clone();
    // Spawned: the request's deadline must not cut the removal between two steps.
    let retired =
        tokio::spawn(async move { bouquet_iot::retire(registry.as_ref(), &thing, &policy).await })
            .await;
    match retired {
        Ok(Ok(leftovers)) if leftovers.is_empty() => {}
        Ok(Ok(leftovers)) => bouquet_app::tracing::error!(
            ?leftovers,
            "vase decommissioned; IoT resources left for the reconciliation sweep"
        ),
        Ok(Err(error)) => bouquet_app::tracing::error!(
            %error,
            "vase decommissioned; IoT resources left for the reconciliation sweep"
        ),
        Err(error) => bouquet_app::tracing::error!(
            %error,
            "vase decommissioned; IoT removal task failed, left for the reconciliation sweep"
        ),
    }
    Ok(reply)
}
