//! `GET /v1/orders`: a customer's own orders, or a vendor's orders, newest first; a vendor's
//! by `status` and delivery day (`deliveryFrom`, `deliveryTo`) in delivery order.

use bouquet_app::queries;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/orders");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let limit = ctx.limit()?;
    let filter = queries::OrderFilter::parse(
        ctx.query("status"),
        ctx.query("deliveryFrom"),
        ctx.query("deliveryTo"),
    )?;
    let page = queries::orders(&ctx.app, caller, &filter, ctx.cursor(), limit).await?;
    let items: Vec<_> = page.items.iter().map(|o| o.as_seen_at(ctx.now)).collect();
    Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))
}
