//! `POST /v1/vendors/{vendorId}/vases`: the vendor registers a smart vase. Answers 201 with
//! the vase, its certificate and private key (returned this once: IoT Core keeps no copy
//! and neither do we), the IoT data endpoint and its topics.
//!
//! IoT Core first (see `bouquet_iot::register`: every step undone if a later one fails),
//! then the vase item, its `VaseRegistered` event and the idempotency record in one
//! transaction; if that fails, the IoT registration is undone too. A replay is answered from
//! the idempotency record before anything is created, without the private key.

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::vase::Vase;
use bouquet_app::domain::{VaseId, VendorId};
use bouquet_app::store::{StoreError, Target};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use bouquet_iot::NewThing;
use serde::Deserialize;
use serde_json::json;

pub const ROUTE: Route = Route::new("POST", "/v1/vendors/{vendorId}/vases");

/// What registration needs besides the app: IoT Core and the vase policy's name.
pub use bouquet_iot::Registrar;

/// The body is optional; nothing is required to register a vase.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Registration {}

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
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    ctx.caller()?.require_vendor(vendor_id)?;
    if ctx.has_body() {
        let Registration {} = ctx.json()?;
    }
    let store = &ctx.app.store;
    // IoT resources are not undone by a DynamoDB condition: learn of a replay first.
    if let Some(replay) = ctx.stored_reply().await? {
        return Ok(replay);
    }
    if !store.vendor_exists(vendor_id).await? {
        return Err(ApiError::NotFound("vendor"));
    }

    let vase = Vase::register(VaseId::generate(), vendor_id, ctx.now);
    let thing = vase.vase_id.to_string();
    // Spawned, so that the request's deadline cannot drop the saga between a step and its
    // undo: it always runs to its end.
    let registry = registrar.registry.clone();
    let policy = registrar.policy.clone();
    let vendor = vendor_id.to_string();
    let registered_at = ctx.now.as_millis() / 1000;
    let registration = tokio::spawn(async move {
        let new = NewThing {
            name: &thing,
            vendor_id: &vendor,
            policy: &policy,
            registered_at,
        };
        bouquet_iot::register(registry.as_ref(), &new).await
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;

    let event = DomainEvent::new(
        vase.vase_id,
        vase.version,
        ctx.now,
        &ctx.correlation_id,
        EventData::VaseRegistered {
            vase_id: vase.vase_id,
            vendor_id,
        },
    );
    let location = format!("/v1/vendors/{vendor_id}/vases/{}", vase.vase_id);
    let body = |private_key: Option<&str>| {
        json!({
            "vase": vase.view(ctx.now, ctx.app.config.offline_after),
            "thingName": registration.thing_name,
            "certificateArn": registration.certificate.arn,
            "certificatePem": registration.certificate.pem,
            "privateKey": private_key,
            "iotEndpoint": registration.endpoint,
            "topics": Vase::topics(vase.vase_id),
        })
    };
    let reply = Reply::created(
        &body(Some(&registration.certificate.private_key)),
        location.clone(),
    )?;
    // The replay's copy: everything but the key.
    let remembered = Reply::created(&body(None), location)?;
    let stored = store
        .create_vase(
            &vase,
            &event,
            ctx.idempotency_record(&remembered).as_ref(),
            ctx.now,
        )
        .await;
    if let Err(error) = stored {
        let leftovers = bouquet_iot::deregister(
            registrar.registry.as_ref(),
            &registration,
            &registrar.policy,
        )
        .await;
        if !leftovers.is_empty() {
            bouquet_app::tracing::error!(
                ?leftovers,
                "vase not stored and its IoT registration not fully undone"
            );
        }
        return match error {
            // A concurrent registration with the same key won: answer as it did.
            StoreError::IdempotencyReplay(record) => Ok(Reply::replay(*record)),
            StoreError::ConditionFailed(conflicts)
                if conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vendor(_))) =>
            {
                Err(ApiError::NotFound("vendor"))
            }
            other => Err(other.into()),
        };
    }
    Ok(reply)
}
