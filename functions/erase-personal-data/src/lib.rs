//! `POST /v1/me/erasure`: the signed-in customer asks for their personal data to be erased.
//! The delivery details of every one of their orders are redacted now, or, for an order the
//! vendor still has to deliver, as soon as it ends; the orders stay for the vendor's books
//! ([`bouquet_app::erasure::erase`]). Repeating it is harmless.

use bouquet_app::erasure;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(POST "/v1/me/erasure" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let erasure = erasure::erase(&ctx.app, caller, &ctx.correlation_id, ctx.now).await?;
    Reply::ok(&erasure)
}
