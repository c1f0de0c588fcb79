//! Loading a bouquet for a change by its vendor: the read that a versioned conditional
//! write follows, and the interpretation of that write's failure.

use bouquet_domain::{Bouquet, BouquetId};
use bouquet_store::Conflict;

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
