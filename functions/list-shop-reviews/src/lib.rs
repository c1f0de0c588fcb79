//! `GET /v1/vendors/{vendorId}/reviews?limit=&cursor=`: a shop's name, its rating (average,
//! count, count by stars) and a page of its visible reviews, newest first: public; 404 for an
//! unknown shop. Each review has its own `reviewId`; `orderId` only for its shop's members and
//! administrators. One `BatchGetItem` (the shop and its rating) and one `Query` of
//! `VendorIndex`, side by side.

use bouquet_app::domain::VendorId;
use bouquet_app::reviews;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::json;

bouquet_http::route!(GET "/v1/vendors/{vendorId}/reviews" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let limit = ctx.limit()?;
    // Public: a signed-in caller is read only to name the orders it may read.
    let caller = ctx.signed_in_caller().await;
    let shop =
        reviews::shop_reviews(&ctx.app, caller.as_ref(), vendor_id, ctx.cursor(), limit).await?;
    Reply::ok(&json!({
        "vendorId": vendor_id,
        "name": shop.name,
        "rating": shop.rating,
        "items": shop.page.items,
        "nextCursor": shop.page.next_cursor,
    }))
}
