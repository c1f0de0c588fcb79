//! `GET /v1/commission?from=YYYY-MM-DD&to=YYYY-MM-DD`: the marketplace's commission (fees less
//! fees refunded) per day and shop, for the administrators (default: the last 30 days; at most
//! 366). One `Query` on the marketplace's commission partition.

use bouquet_app::{earnings, App};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/commission");

const MAX_DAYS: u64 = 366;

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    caller.require(bouquet_app::domain::identity::Role::Admin)?;
    let (from, to) = ctx.day_range(MAX_DAYS)?;
    let days = earnings::marketplace_commission(&ctx.app, caller, &from, &to).await?;
    Reply::ok(&json!({ "from": from, "to": to, "days": days }))
}
