//! `GET /v1/vendors/{vendorId}/analytics?from=YYYY-MM-DD&to=YYYY-MM-DD`: that vendor's sales,
//! revenue per currency, average freshness at sale (one decimal; `null` when no sold bouquet
//! had a score), cancellations, expiries and fulfilments per day (default: the last
//! 30 days; at most 366). One `Query` on the vendor's partition.

use std::time::Duration;

use bouquet_app::domain::money::Money;
use bouquet_app::domain::{Currency, FieldError, Timestamp, VendorId};
use bouquet_app::queries;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/vendors/{vendorId}/analytics");

const MAX_DAYS: u64 = 366;

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

fn day(ctx: &Ctx, name: &str, default: Timestamp) -> Result<Timestamp, ApiError> {
    match ctx.query(name) {
        None => Ok(default),
        Some(text) => Timestamp::parse_rfc3339(&format!("{text}T00:00:00Z"))
            .filter(|_| text.len() == 10)
            .ok_or_else(|| {
                ApiError::Invalid(vec![FieldError::new(
                    format!("query/{name}"),
                    "must be a date, YYYY-MM-DD",
                )])
            }),
    }
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    // Who may act is answered before the request is validated (403 before 400).
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let to = day(ctx, "to", ctx.now)?;
    let from = day(ctx, "from", to.minus(Duration::from_secs(29 * 86_400)))?;
    let span = (to.as_millis() - from.as_millis()) / 86_400_000;
    if span < 0 || span as u64 >= MAX_DAYS {
        return Err(ApiError::Invalid(vec![FieldError::new(
            "query/from",
            format!("must be on or before `to` and at most {MAX_DAYS} days before it"),
        )]));
    }
    let (from_day, to_day) = (
        from.to_rfc3339()[..10].to_owned(),
        to.to_rfc3339()[..10].to_owned(),
    );
    let days = queries::sales_by_day(&ctx.app, caller, vendor_id, &from_day, &to_day).await?;
    let days: Vec<_> = days
        .into_iter()
        .map(|d| {
            let revenue: Vec<_> = d.revenue.iter().filter_map(|(c, minor)| Currency::parse(c).ok().map(|c| Money::from_minor(*minor, c))).collect();
            json!({ "date": d.day, "sales": d.sales, "revenue": revenue, "averageFreshness": d.average_freshness().map(|f| (f * 10.0).round() / 10.0), "cancellations": d.cancellations, "expiries": d.expiries, "fulfilled": d.fulfilled })
        })
        .collect();
    Reply::ok(&json!({ "vendorId": vendor_id, "from": from_day, "to": to_day, "days": days }))
}
