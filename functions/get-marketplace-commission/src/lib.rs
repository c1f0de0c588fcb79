//! `GET /v1/commission?from=YYYY-MM-DD&to=YYYY-MM-DD`: the marketplace's commission (fees less
//! fees refunded) per day and shop, for the administrators (default: the last 30 days; at most
//! 366). One `Query` on the marketplace's commission partition.

use bouquet_app::earnings;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/commission" => handle);

const MAX_DAYS: u64 = 366;

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    caller.require(bouquet_app::domain::identity::Role::Admin)?;
    let (from, to) = ctx.day_range(MAX_DAYS)?;
    let days = earnings::marketplace_commission(&ctx.app, caller, &from, &to).await?;
    Reply::ok(&json!({ "from": from, "to": to, "days": days }))
}
