//! `GET /v1/cart`: the caller's cart with its bouquets as they are now
//! ([`bouquet_app::cart::current`]).

use bouquet_app::cart;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(GET "/v1/cart" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    Reply::ok(&cart::current(&ctx.app, &caller.subject, ctx.now).await?)
}
