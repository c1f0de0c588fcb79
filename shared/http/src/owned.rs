//! Loading a bouquet (or a vase) for a change by its vendor: the read that a versioned
//! conditional write follows, and the interpretation of that write's failure.

use bouquet_app::checkout::CheckoutError;
use bouquet_app::orders::{Action, TransitionError};
use bouquet_domain::vase::Vase;
use bouquet_domain::{Bouquet, BouquetId};
use bouquet_domain::{Order, OrderId, VaseId};
use bouquet_store::{Conflict, StoreError};

use crate::ctx::Ctx;
use crate::problem::ApiError;

/// Reads `bouquet_id` (consistently) for a change by its vendor, checking `If-Match`.
pub async fn vendor_bouquet(
    ctx: &Ctx,
    bouquet_id: BouquetId,
    if_match: Option<u64>,
) -> Result<Bouquet, ApiError> {
    let caller = ctx.caller()?;
    let bouquet = ctx
        .app
        .store
        .bouquet(bouquet_id, true)
        .await?
        .ok_or(ApiError::NotFound("bouquet"))?;
    caller.require_vendor(bouquet.vendor_id)?;
    if let Some(expected) = if_match {
        if expected != bouquet.version {
            return Err(ApiError::PreconditionFailed(
                "the bouquet has changed since that version; fetch it again",
            ));
        }
    }
    Ok(bouquet)
}

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

/// Why a versioned write of a bouquet was refused: it changed (412 when the client asked
/// for a version, else the caller may retry) or it is no longer available (409).
pub fn refused_change(
    conflicts: Vec<Conflict>,
    ctx: &Ctx,
    if_match: Option<u64>,
) -> Result<(), ApiError> {
    let current = conflicts
        .into_iter()
        .next()
        .and_then(|c| c.bouquet().cloned());
    match current {
        Some(bouquet) if bouquet.is_available(ctx.now) && if_match.is_some() => {
            Err(ApiError::PreconditionFailed(
                "the bouquet has changed since that version; fetch it again",
            ))
        }
        // Still available, only the version moved: read again and retry.
        Some(bouquet) if bouquet.is_available(ctx.now) => Ok(()),
        Some(_) => Err(ApiError::BouquetNotAvailableForChange),
        None => Err(ApiError::NotFound("bouquet")),
    }
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
