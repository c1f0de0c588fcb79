//! `GET /v1/vases/{vaseId}/telemetry?since=&limit=&cursor=`: the vase's readings sent at or
//! after `since` (RFC 3339; default: the last 24 hours), oldest first, for its vendor only.
//! Raw readings are kept 48 hours; the first page also carries `buckets`, the 15-minute
//! summaries (min, max, mean) since `since`, kept 30 days. Another vendor's vase is a 404:
//! vase ids are not public.

use std::time::Duration;

use bouquet_app::domain::{FieldError, Timestamp, VaseId};
use bouquet_app::{care, queries};
use bouquet_http::{ApiError, Ctx, Reply, Role};
use serde_json::json;

bouquet_http::route!(GET "/v1/vases/{vaseId}/telemetry" => handle);

const DEFAULT_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vase_id = ctx.path("vaseId", VaseId::parse)?;
    // Who may act is answered before the request is validated (403 before 400).
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
    let cursor = ctx.cursor();
    let page = queries::readings(&ctx.app, caller, vase_id, since, cursor, limit).await?;
    // Read only once the vase is known to be the caller's (the readings' query checked it).
    let buckets = match cursor {
        None => care::buckets(&ctx.app, vase_id, since)
            .await?
            .iter()
            .map(|b| b.view())
            .collect(),
        Some(_) => Vec::new(),
    };
    Reply::ok(&json!({
        "vaseId": vase_id,
        "items": page.items,
        "buckets": buckets,
        "nextCursor": page.next_cursor,
    }))
}
