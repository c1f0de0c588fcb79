//! `GET /v1/vendors/{vendorId}/analytics?from=YYYY-MM-DD&to=YYYY-MM-DD`: that vendor's sales,
//! revenue per currency, average freshness at sale (one decimal; `null` when no sold bouquet
//! had a score), cancellations, expiries and fulfilments per day (default: the last
//! 30 days; at most 366). One `Query` on the vendor's partition.

use bouquet_app::domain::money::Money;
use bouquet_app::domain::{Currency, VendorId};
use bouquet_app::queries;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/vendors/{vendorId}/analytics" => handle);

const MAX_DAYS: u64 = 366;

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    // Who may act is answered before the request is validated (403 before 400).
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let (from_day, to_day) = ctx.day_range(MAX_DAYS)?;
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
