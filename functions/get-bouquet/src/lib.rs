//! `GET /v1/bouquets/{bouquetId}`: one bouquet with its effective status and freshness.
//! `ETag` is the version; `If-None-Match` with it answers 304.

use bouquet_app::bouquets;
use bouquet_app::domain::BouquetId;
use bouquet_http::lambda_http::http::StatusCode;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/bouquets/{bouquetId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let bouquet = bouquets::bouquet(&ctx.app, bouquet_id).await?;
    let etag = format!("\"{}\"", bouquet.version);
    // The edge may hold an anonymous reader's copy as long as the catalogue's: live frames
    // carry what changes meanwhile.
    let cache = ctx.public_cache(5);
    if ctx.header("if-none-match") == Some(etag.as_str()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED)
            .header("etag", etag)
            .header("cache-control", cache.clone()));
    }
    Ok(Reply::ok(&bouquet.view(ctx.now))?
        .header("etag", etag)
        .header("cache-control", cache))
}
