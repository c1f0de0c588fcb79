//! An order's transition by a caller who may see it, under the request's idempotency key
//! (cancel, fulfil).

use bouquet_app::orders::Action;
use bouquet_domain::{Order, OrderId};

use crate::ctx::{Ctx, KeyedRequest};
use crate::problem::ApiError;
use crate::Reply;

/// `action` on `order_id` by the request's caller ([`bouquet_app::orders::transition`]): the
/// order it leads to, or the first answer to a retried request.
pub async fn order_transition(
    ctx: &Ctx,
    order_id: OrderId,
    action: Action<'_>,
) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let key = ctx.idempotency(|order: &Order| Reply::ok(order));
    let outcome = bouquet_app::orders::transition(
        &ctx.app,
        caller,
        order_id,
        action,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, Reply::ok)
}
