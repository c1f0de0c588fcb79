//! `GET /v1/vendors?limit=&cursor=`: every shop, oldest first, with whether it is suspended
//! (administrators only; [`bouquet_app::shops::list`]).

use bouquet_app::shops;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/vendors" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let limit = ctx.limit()?;
    let page = shops::list(&ctx.app, caller, ctx.cursor(), limit).await?;
    Ok(
        Reply::ok(&json!({ "items": page.items, "nextCursor": page.next_cursor }))?
            .header("cache-control", "private, no-store"),
    )
}
