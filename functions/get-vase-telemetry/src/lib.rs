//! `GET /v1/vases/{vaseId}/telemetry?since=&limit=&cursor=`: the vase's readings sent at or
//! after `since` (RFC 3339; default: the last 24 hours), oldest first, for its vendor only.
//! Another vendor's vase is a 404: vase ids are not public.

use std::time::Duration;

use bouquet_app::domain::{FieldError, Timestamp, VaseId};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/vases/{vaseId}/telemetry");

const DEFAULT_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vase_id = ctx.path("vaseId", VaseId::parse)?;
    let caller = ctx.caller()?.require(Role::Vendor)?;
    let since = match ctx.query("since") {
        None => ctx.now.minus(DEFAULT_WINDOW),
        Some(text) => Timestamp::parse_rfc3339(text).ok_or_else(|| {
            ApiError::Invalid(vec![FieldError::new(
                "query/since",
                "must be an RFC 3339 timestamp",
            )])
        })?,
    };
    let limit = ctx.limit()?;
    let store = &ctx.app.store;
    // Both reads at once: one round trip of latency; the page is dropped unless the vase is
    // the caller's.
    let (vase, page) = tokio::join!(
        store.vase(vase_id, false),
        store.readings(vase_id, since, ctx.cursor(), limit)
    );
    if vase?.is_none_or(|v| Some(v.vendor_id) != caller.vendor_id) {
        return Err(ApiError::NotFound("vase"));
    }
    let page = page?;
    Reply::ok(&json!({ "vaseId": vase_id, "items": page.items, "nextCursor": page.next_cursor }))
}
