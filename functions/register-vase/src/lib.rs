//! `POST /v1/vendors/{vendorId}/vases`: the vendor registers a smart vase. Answers 201 with
//! the vase, its certificate and private key (returned this once: IoT Core keeps no copy
//! and neither do we), the IoT data endpoint and its topics.
//!
//! The saga is [`bouquet_app::vase_saga::register`]. A replay is answered from the
//! idempotency record before anything is created, without the private key.

use bouquet_app::domain::vase::Vase;
use bouquet_app::domain::VendorId;
use bouquet_app::vase_saga::{self, Registered};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};
use serde::Deserialize;
use serde_json::json;

bouquet_http::route!(POST "/v1/vendors/{vendorId}/vases" => handle);

/// What registration needs besides the app: IoT Core and the vase policy's name.
pub use bouquet_app::iot::Registrar;

/// The body is optional; nothing is required to register a vase.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Registration {}

/// The answer: the vase, its certificate and (this once) private key, the IoT data endpoint
/// and its topics. The stored copy for replays is the same without the key.
fn reply(ctx: &Ctx, registered: &Registered, with_key: bool) -> Result<Reply, ApiError> {
    let (vase, credentials) = (&registered.vase, &registered.credentials);
    let private_key = with_key.then_some(credentials.certificate.private_key.as_str());
    Reply::created(
        &json!({
            "vase": vase.view(ctx.now, ctx.app.config.offline_after),
            "thingName": credentials.thing_name,
            "certificateArn": credentials.certificate.arn,
            "certificatePem": credentials.certificate.pem,
            "privateKey": private_key,
            "iotEndpoint": credentials.endpoint,
            "topics": Vase::topics(vase.vase_id),
        }),
        format!("/v1/vendors/{}/vases/{}", vase.vendor_id, vase.vase_id),
    )
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let registrar = ctx.app.ports.registrar().await?;
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    if ctx.has_body() {
        let Registration {} = ctx.json()?;
    }
    let key = ctx.idempotency(|registered: &Registered| reply(ctx, registered, false));
    let outcome = vase_saga::register(
        &ctx.app,
        registrar,
        caller,
        vendor_id,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, |registered| reply(ctx, registered, true))
}
