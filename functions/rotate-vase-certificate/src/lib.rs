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

use bouquet_app::domain::VaseId;
use bouquet_app::vase_saga::{self, Rotated};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};
use serde::Deserialize;
use serde_json::json;

bouquet_http::route!(POST "/v1/vases/{vaseId}/certificate" => handle);

/// The body is optional; nothing is required to rotate.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rotation {}

/// The new credentials; the stored copy for replays is the same without the key.
fn reply(rotated: &Rotated, with_key: bool) -> Result<Reply, ApiError> {
    let credentials = &rotated.credentials;
    let private_key = with_key.then_some(credentials.certificate.private_key.as_str());
    Reply::ok(&json!({
        "vaseId": rotated.vase_id,
        "thingName": credentials.thing_name,
        "certificateArn": credentials.certificate.arn,
        "certificatePem": credentials.certificate.pem,
        "privateKey": private_key,
        "iotEndpoint": credentials.endpoint,
    }))
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let registrar = ctx.app.ports.registrar().await?;
    let vase_id = ctx.path("vaseId", VaseId::parse)?;
    let caller = ctx.caller()?;
    if ctx.has_body() {
        let Rotation {} = ctx.json()?;
    }
    let key = ctx.idempotency(|rotated: &Rotated| reply(rotated, false));
    let outcome = vase_saga::rotate(
        &ctx.app,
        registrar,
        caller,
        vase_id,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, |rotated| reply(rotated, true))
}
