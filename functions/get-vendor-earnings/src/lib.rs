//! `GET /v1/vendors/{vendorId}/earnings?from=YYYY-MM-DD&to=YYYY-MM-DD`: what the shop earned per
//! day (gross, the marketplace's fees, refunds, fees refunded, net, the provider's payouts), for
//! its members (default: the last 30 days; at most 366). `Accept: text/csv` answers the same
//! period as a CSV file. One `Query` on the shop's analytics partition and one `GetItem` of the
//! shop, side by side, then the provider's payouts list.

use bouquet_app::domain::VendorId;
use bouquet_app::earnings;
use bouquet_http::{ApiError, Ctx, Reply};

bouquet_http::route!(GET "/v1/vendors/{vendorId}/earnings" => handle);

const MAX_DAYS: u64 = 366;

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    // Who may read is answered before the period is validated (403 before 400).
    let caller = ctx.caller()?;
    caller.require_vendor(vendor_id)?;
    let (from, to) = ctx.day_range(MAX_DAYS)?;
    let report = earnings::vendor_earnings(&ctx.app, caller, vendor_id, &from, &to).await?;
    if ctx.header("accept").is_some_and(|a| a.contains("text/csv")) {
        return Ok(
            Reply::document("text/csv; charset=utf-8", earnings::csv(&report)).header(
                "content-disposition",
                format!("attachment; filename=\"earnings-{vendor_id}-{from}-{to}.csv\""),
            ),
        );
    }
    Reply::ok(&report)
}
