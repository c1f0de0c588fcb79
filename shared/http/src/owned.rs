//! Loading a vase for a change by its vendor, and an order's transition under the request's
//! idempotency key.

use bouquet_app::checkout::CheckoutError;
use bouquet_app::orders::{Action, TransitionError};
use bouquet_domain::vase::Vase;
use bouquet_domain::{Order, OrderId, VaseId};
use bouquet_store::StoreError;

use crate::ctx::Ctx;
use crate::problem::ApiError;

/// Reads `vase_id` (consistently) for a change by its vendor: 404 when there is none, 403
/// for another vendor.
pub async fn vendor_vase(ctx: &Ctx, vase_id: VaseId) -> Result<Vase, ApiError> {
    let caller = ctx.caller()?;
    let vase = ctx
        .app
        .store
        .vase(vase_id, true)
        .await?
        .ok_or(ApiError::NotFound("vase"))?;
    caller.require_vendor(vase.vendor_id)?;
    Ok(vase)
}

/// A transition of an order that `visible` says the caller may touch (others: 404), under
/// the request's `Idempotency-Key`: a retried request gets its first answer, the record is
/// written with the transition.
pub async fn order_transition(
    ctx: &Ctx,
    order_id: OrderId,
    visible: impl Fn(&Order) -> bool,
    action: Action,
) -> Result<crate::Reply, ApiError> {
    if let Some(replay) = ctx.stored_reply().await? {
        return Ok(replay);
    }
    let record_for = |order: &Order| {
        crate::Reply::ok(order)
            .ok()
            .and_then(|r| ctx.idempotency_record(&r))
    };
    let result = bouquet_app::orders::transition(
        &ctx.app.store,
        order_id,
        visible,
        action,
        &record_for,
        &ctx.correlation_id,
        ctx.now,
    )
    .await;
    match result {
        Ok(order) => crate::Reply::ok(&order),
        // A concurrent duplicate with the same key committed first.
        Err(TransitionError::Checkout(CheckoutError::Store(StoreError::IdempotencyReplay(
            record,
        )))) => Ok(crate::Reply::replay(*record)),
        Err(other) => Err(other.into()),
    }
}
