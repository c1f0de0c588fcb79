//! `POST /v1/orders/{orderId}/delivery-photo-uploads` `{contentType}`: the shop of an order out
//! for delivery or delivered may upload one JPEG, PNG or WebP photo of the delivered bouquets
//! (up to 5 MiB, within 10 minutes) straight to the upload bucket (`Idempotency-Key`
//! honoured): 201 with the form's URL and fields. Anyone else gets 404; another state 409
//! `order.invalid_state`. The photo function processes it into private sizes under the order
//! ([`bouquet_app::proof_of_delivery`]); the order then carries it (`deliveryPhoto`, signed).

use bouquet_app::domain::OrderId;
use bouquet_app::photos::{UploadRequest, UploadTicket};
use bouquet_app::proof_of_delivery;
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};

bouquet_http::route!(POST "/v1/orders/{orderId}/delivery-photo-uploads" => handle, goes_on_while_suspended);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let signer = ctx.app.ports.photo_signer().await?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let caller = ctx.caller()?;
    let content_type = ctx.json::<UploadRequest>()?.image_type()?;
    let reply = move |ticket: &UploadTicket| {
        Reply::created(&ticket.view(), format!("/v1/orders/{order_id}"))
    };
    let key = ctx.idempotency(reply);
    let outcome = proof_of_delivery::request_upload(
        &ctx.app,
        signer,
        caller,
        order_id,
        content_type,
        key.as_ref().map(KeyedRequest::key),
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, reply)
}
