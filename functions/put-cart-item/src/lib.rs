//! `PUT /v1/cart/items/{bouquetId}`: adds an available bouquet to the caller's cart. A cart
//! holds one vendor's bouquets; the cart update's condition enforces it (409
//! `cart.vendor_mismatch`), so concurrent adds cannot mix vendors. Adding twice is a no-op
//! ([`bouquet_app::cart::add`]).

use bouquet_app::cart;
use bouquet_app::domain::BouquetId;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(PUT "/v1/cart/items/{bouquetId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    Reply::ok(&cart::add(&ctx.app, &caller.subject, bouquet_id, ctx.now).await?)
}
