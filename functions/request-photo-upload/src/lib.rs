//! `POST /v1/bouquets/{bouquetId}/photo-uploads` `{contentType}`: the bouquet's vendor may
//! upload one JPEG, PNG or WebP photo (up to 5 MiB, within 10 minutes) straight to the upload
//! bucket (`Idempotency-Key` honoured: a retry gets the same upload): 201 with the form's URL and fields (a POST policy signed by this function's role;
//! no S3 call). The photo function takes it from there
//! ([`bouquet_app::photos::request_upload`]).

use bouquet_app::domain::photo::ImageType;
use bouquet_app::domain::{BouquetId, FieldError};
use bouquet_app::photos;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, KeyedRequest, Reply, Route};
use serde::Deserialize;
use serde_json::json;

pub const ROUTE: Route = Route::new("POST", "/v1/bouquets/{bouquetId}/photo-uploads");

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NewUpload {
    content_type: String,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let signer = ctx.app.ports.photo_signer().await?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let caller = ctx.caller()?;
    let body: NewUpload = ctx.json()?;
    let content_type = ImageType::parse(&body.content_type)
        .map_err(|e| ApiError::Invalid(vec![FieldError::new("contentType", e)]))?;
    let reply = move |ticket: &photos::UploadTicket| {
        let upload = &ticket.upload;
        Reply::created(
            &json!({
                "uploadId": upload.upload_id,
                "status": upload.status.name(),
                "url": ticket.post.url,
                "fields": ticket.post.fields,
                "maxBytes": ticket.max_bytes,
                "contentType": upload.content_type.mime(),
                "expiresAt": upload.deadline(),
            }),
            format!(
                "/v1/bouquets/{bouquet_id}/photo-uploads/{}",
                upload.upload_id
            ),
        )
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
