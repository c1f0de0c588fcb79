//! `GET /v1/bouquets/{bouquetId}/photo-uploads/{uploadId}`: how its vendor's upload stands:
//! `pending` until the photo function has run, then `ready` (the bouquet shows it),
//! `rejected` with the refusal's code and message (the bouquet keeps its photo), or
//! `superseded` (a later upload was shown first) ([`bouquet_app::photos::upload_status`]).

use bouquet_app::domain::{BouquetId, UploadId};
use bouquet_app::photos;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/bouquets/{bouquetId}/photo-uploads/{uploadId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let upload_id = ctx.path("uploadId", UploadId::parse)?;
    let caller = ctx.caller()?;
    let upload = photos::upload_status(&ctx.app, caller, bouquet_id, upload_id).await?;
    let mut body = photos::status_view(&upload);
    body["bouquetId"] = serde_json::json!(bouquet_id);
    Ok(Reply::ok(&body)?.header("cache-control", "no-store"))
}
