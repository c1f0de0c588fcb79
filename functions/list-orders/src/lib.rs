//! `GET /v1/orders`: a customer's own orders, or a vendor's orders, newest first.

use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/orders");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let limit = ctx.limit()?;
    let store = &ctx.app.store;
    let page = match (caller.role, caller.vendor_id) {
        (Role::Customer, _) => {
            store
                .customer_orders(&caller.subject, ctx.cursor(), limit)
                .await?
        }
        (Role::Vendor, Some(vendor_id)) => {
            store.vendor_orders(vendor_id, ctx.cursor(), limit).await?
        }
        _ => return Err(ApiError::Forbidden),
    };
    let items: Vec<_> = page.items.iter().map(|o| o.as_seen_at(ctx.now)).collect();
    Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))
}
