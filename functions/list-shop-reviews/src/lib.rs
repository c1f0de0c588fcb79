//! `GET /v1/vendors/{vendorId}/reviews?limit=&cursor=`: a shop's rating (average, count, count
//! by stars) and a page of its visible reviews, newest first: public. One `GetItem` (the
//! rating) and one `Query` of `VendorIndex`, side by side.

use bouquet_app::domain::VendorId;
use bouquet_app::{reviews, App};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Route};
use serde_json::json;

pub const ROUTE: Route = Route::new("GET", "/v1/vendors/{vendorId}/reviews");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let limit = ctx.limit()?;
    let (rating, page) = reviews::shop_reviews(&ctx.app, vendor_id, ctx.cursor(), limit).await?;
    Reply::ok(&json!({
        "vendorId": vendor_id,
        "rating": {
            "average": rating.average(),
            "count": rating.count(),
            "byStars": rating.by_stars,
        },
        "items": page.items,
        "nextCursor": page.next_cursor,
    }))
}
