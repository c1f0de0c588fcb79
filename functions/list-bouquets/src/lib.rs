//! `GET /v1/bouquets`: the public catalogue of bouquets available now, newest first or
//! freshest first (`?sort=freshness`), by price (`?sort=price`, `?sort=-price`) or by its
//! shop's rating (`?sort=rating`), each with its shop's name and rating, or one
//! vendor's newest first (`?vendorId=`), in a
//! price range (`?minPrice=&maxPrice=`) or at least this fresh (`?minFreshness=`).
//! Paginated with `?limit=` and `?cursor=`.

use bouquet_app::bouquets;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/bouquets" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let limit = ctx.limit()?;
    let (scope, filter) = bouquets::parse_browse(
        ctx.query("vendorId"),
        ctx.query("sort"),
        ctx.query("minPrice"),
        ctx.query("maxPrice"),
        ctx.query("minFreshness"),
        &ctx.app.config.catalogue_indexes,
    )?;
    let page = bouquets::catalogue(&ctx.app, scope, &filter, ctx.cursor(), limit, ctx.now).await?;
    let items = bouquets::with_shops(&ctx.app, &page.items, ctx.now).await?;
    // The edge may hold an anonymous page briefly; availability is re-checked at reservation.
    let cache = ctx.public_cache(5);
    Ok(
        Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))?
            .header("cache-control", cache),
    )
}
