//! Loading a bouquet for a change by its vendor: the read that a versioned conditional
//! write follows, and the interpretation of that write's failure.

use bouquet_domain::{Bouquet, BouquetId};
use bouquet_store::{bouquet_from_conflict, Conflict};

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
        .and_then(|c| bouquet_from_conflict(c.current));
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

/// A transition of an order that `visible` says the caller may touch (others: 404): read,
/// let `transition` decide and write, and on a lost race read again (at most three times) so
/// the answer reflects the order as it is now.
pub async fn order_transition<F>(
    ctx: &Ctx,
    order_id: bouquet_domain::OrderId,
    visible: impl Fn(&bouquet_domain::Order) -> bool,
    transition: F,
) -> Result<crate::Reply, ApiError>
where
    F: AsyncFn(
        &bouquet_store::Store,
        &bouquet_domain::Order,
        &str,
        bouquet_domain::Timestamp,
    ) -> Result<bouquet_domain::Order, bouquet_checkout::CheckoutError>,
{
    for _ in 0..3 {
        let order = ctx
            .app
            .store
            .order(order_id)
            .await?
            .filter(|o| visible(o))
            .ok_or(ApiError::NotFound("order"))?;
        match transition(&ctx.app.store, &order, &ctx.correlation_id, ctx.now).await {
            Ok(changed) => return crate::Reply::ok(&changed),
            Err(bouquet_checkout::CheckoutError::Changed) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
