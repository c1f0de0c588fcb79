//! `GET /v1/orders/{orderId}/delivery-photo-uploads/{uploadId}`: how the shop's proof-of-delivery
//! upload stands: `pending` until the photo function has run, then `ready` (the order carries
//! it), `rejected` with the refusal's code and message, or `superseded` (a later upload was
//! shown first) ([`bouquet_app::proof_of_delivery::upload_status`]). Anyone but the order's
//! shop gets 404.

use bouquet_app::domain::{OrderId, UploadId};
use bouquet_app::{photos, proof_of_delivery};
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/orders/{orderId}/delivery-photo-uploads/{uploadId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let upload_id = ctx.path("uploadId", UploadId::parse)?;
    let caller = ctx.caller()?;
    let upload = proof_of_delivery::upload_status(&ctx.app, caller, order_id, upload_id).await?;
    let mut body = photos::status_view(&upload);
    body["orderId"] = serde_json::json!(order_id);
    Ok(Reply::ok(&body)?.header("cache-control", "no-store"))
}
