//! `GET /v1/vendors?limit=&cursor=`: every shop, oldest first, with whether it is suspended
//! (administrators only; [`bouquet_app::shops::list`]).

use bouquet_app::shops;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/vendors");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let limit = ctx.limit()?;
    let page = shops::list(&ctx.app, caller, ctx.cursor(), limit).await?;
    Ok(
        Reply::ok(&json!({ "items": page.items, "nextCursor": page.next_cursor }))?
            .header("cache-control", "private, no-store"),
    )
}
