//! `POST /v1/vases/{vaseId}/certificate`: the vase's vendor gets a new key pair and
//! certificate for it (200, the private key returned this once, as at registration); the
//! certificates it had are revoked. The remedy for a lost or leaked key.
//!
//! Order: the new certificate is attached beside the old one (`bouquet_iot::issue_certificate`,
//! undone if a step fails); the rotation is recorded (the vase's next version, its
//! `VaseCertificateRotated` event and the idempotency record, conditional on the version
//! read); only then are the other certificates revoked. Of two concurrent rotations only one
//! records; the other withdraws its certificate and answers 503 `service.busy`, so a
//! rotation never revokes the certificate another one returned.

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::VaseId;
use bouquet_app::store::{StoreError, Target};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{owned, run, ApiError, Ctx, Reply, Route};
use bouquet_iot::Registrar;
use serde::Deserialize;
use serde_json::json;

pub const ROUTE: Route = Route::new("POST", "/v1/vases/{vaseId}/certificate");

/// The body is optional; nothing is required to rotate.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rotation {}

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
    let vase = owned::vendor_vase(ctx, vase_id).await?;
    if ctx.has_body() {
        let Rotation {} = ctx.json()?;
    }
    // IoT resources are not undone by a DynamoDB condition: learn of a replay first.
    if let Some(replay) = ctx.stored_reply().await? {
        return Ok(replay);
    }

    let thing = vase_id.to_string();
    // Spawned, so that the request's deadline cannot drop the saga between a step and its
    // undo.
    let registry = registrar.registry.clone();
    let policy = registrar.policy.clone();
    let issued = tokio::spawn(async move {
        bouquet_iot::issue_certificate(registry.as_ref(), &thing, &policy).await
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;

    let next = vase.next_version();
    let event = DomainEvent::new(
        vase_id,
        next.version,
        ctx.now,
        &ctx.correlation_id,
        EventData::VaseCertificateRotated {
            vase_id,
            vendor_id: vase.vendor_id,
        },
    );
    let body = |private_key: Option<&str>| {
        json!({
            "vaseId": vase_id,
            "thingName": issued.thing_name,
            "certificateArn": issued.certificate.arn,
            "certificatePem": issued.certificate.pem,
            "privateKey": private_key,
            "iotEndpoint": issued.endpoint,
        })
    };
    let reply = Reply::ok(&body(Some(&issued.certificate.private_key)))?;
    let remembered = Reply::ok(&body(None))?;
    let recorded = ctx
        .app
        .store
        .rotate_vase_certificate(
            &vase,
            &next,
            &event,
            ctx.idempotency_record(&remembered).as_ref(),
            ctx.now,
        )
        .await;
    if let Err(error) = recorded {
        let leftovers =
            bouquet_iot::withdraw(registrar.registry.as_ref(), &issued, &registrar.policy).await;
        if !leftovers.is_empty() {
            bouquet_app::tracing::error!(
                ?leftovers,
                "rotation not recorded and its certificate not fully withdrawn"
            );
        }
        return match error {
            StoreError::IdempotencyReplay(record) => Ok(Reply::replay(*record)),
            StoreError::ConditionFailed(conflicts)
                if conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vase(_)) && c.item.is_none()) =>
            {
                Err(ApiError::NotFound("vase"))
            }
            // The vase changed since the read (a heartbeat, another rotation): try again.
            StoreError::ConditionFailed(_) => Err(ApiError::Busy),
            other => Err(other.into()),
        };
    }
    match bouquet_iot::revoke_all_but(
        registrar.registry.as_ref(),
        &issued.thing_name,
        &issued.certificate.arn,
        &registrar.policy,
    )
    .await
    {
        Ok(done) if done.leftovers.is_empty() => {}
        Ok(done) => bouquet_app::tracing::error!(
            leftovers = ?done.leftovers,
            "old certificates not fully revoked; revoke them by hand (docs/operations.md)"
        ),
        Err(error) => bouquet_app::tracing::error!(
            %error,
            "old certificates not listed for revocation; revoke them by hand (docs/operations.md)"
        ),
    }
    Ok(reply)
}
