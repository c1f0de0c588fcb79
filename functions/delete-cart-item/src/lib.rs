//! `DELETE /v1/cart/items/{bouquetId}`: removes a bouquet from the caller's cart; removing
//! one that is not there answers the cart unchanged.

use bouquet_app::cart;
use bouquet_app::domain::BouquetId;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(DELETE "/v1/cart/items/{bouquetId}" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    Reply::ok(&cart::remove(&ctx.app, &caller.subject, bouquet_id, ctx.now).await?)
}
