//! `POST /v1/bouquets/{bouquetId}/photo-uploads` `{contentType}`: the bouquet's vendor may
//! upload one JPEG, PNG or WebP photo (up to 5 MiB, within 10 minutes) straight to the upload
//! bucket (`Idempotency-Key` honoured: a retry gets the same upload): 201 with the form's URL and fields (a POST policy signed by this function's role;
//! no S3 call). The photo function takes it from there
//! ([`bouquet_app::photos::request_upload`]).

use bouquet_app::domain::BouquetId;
use bouquet_app::photos::{self, UploadRequest};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply};

bouquet_http::route!(POST "/v1/bouquets/{bouquetId}/photo-uploads" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let signer = ctx.app.ports.photo_signer().await?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let caller = ctx.caller()?;
    let content_type = ctx.json::<UploadRequest>()?.image_type()?;
    let reply = move |ticket: &photos::UploadTicket| {
        let location = format!(
            "/v1/bouquets/{bouquet_id}/photo-uploads/{}",
            ticket.upload.upload_id
        );
        Reply::created(&ticket.view(), location)
    };
    let key = ctx.idempotency(reply);
    let outcome = photos::request_upload(
        &ctx.app,
        signer,
        caller,
        bouquet_id,
        content_type,
        key.as_ref().map(KeyedRequest::key),
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, reply)
}
