//! What callers read: their orders, a vendor's vases and their readings, a vendor's sales by
//! day. Each read checks who may see it; what the caller may not see reads as absent (an id
//! must not reveal that something exists).

use bouquet_domain::identity::{Identity, NotAllowed, Role};
use bouquet_domain::vase::Vase;
use bouquet_domain::{Order, OrderId, Reading, Timestamp, VaseId, VendorId};
use bouquet_store::{DayCounters, Page, StoreError};

use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// No such thing, or not one the caller may see.
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error("the caller may not read this")]
    Forbidden(#[from] NotAllowed),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One order, for its customer, its vendor or an administrator.
pub async fn order(app: &App, caller: &Identity, order_id: OrderId) -> Result<Order, QueryError> {
    let order = app
        .store
        .order(order_id)
        .await?
        .ok_or(QueryError::NotFound("order"))?;
    let visible = match caller.role {
        Role::Customer => order.customer_id == caller.subject,
        Role::Vendor => caller.vendor_id == Some(order.vendor_id),
        Role::Admin => true,
    };
    visible
        .then_some(order)
        .ok_or(QueryError::NotFound("order"))
}

/// A page of the caller's orders: a customer's own, or a vendor's shop's.
pub async fn orders(
    app: &App,
    caller: &Identity,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Order>, QueryError> {
    Ok(match (caller.role, caller.vendor_id) {
        (Role::Customer, _) => {
            app.store
                .customer_orders(&caller.subject, cursor, limit)
                .await?
        }
        (Role::Vendor, Some(vendor_id)) => {
            app.store.vendor_orders(vendor_id, cursor, limit).await?
        }
        _ => return Err(NotAllowed.into()),
    })
}

/// A page of a vendor's vases, for that vendor.
pub async fn vases(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Vase>, QueryError> {
    caller.require_vendor(vendor_id)?;
    Ok(app.store.vendor_vases(vendor_id, cursor, limit).await?)
}

/// A page of a vase's readings sent at or after `since`, for its vendor. Both reads at once
/// (one round trip of latency); the page is dropped unless the vase is the caller's.
pub async fn readings(
    app: &App,
    caller: &Identity,
    vase_id: VaseId,
    since: Timestamp,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Reading>, QueryError> {
    caller.require(Role::Vendor)?;
    let (vase, page) = tokio::join!(
        app.store.vase(vase_id, false),
        app.store.readings(vase_id, since, cursor, limit)
    );
    if vase?.is_none_or(|v| Some(v.vendor_id) != caller.vendor_id) {
        return Err(QueryError::NotFound("vase"));
    }
    Ok(page?)
}

/// A vendor's counters for the days `from..=to` (`YYYY-MM-DD`), for that vendor.
pub async fn sales_by_day(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    from: &str,
    to: &str,
) -> Result<Vec<DayCounters>, QueryError> {
    caller.require_vendor(vendor_id)?;
    Ok(app.store.vendor_days(vendor_id, from, to).await?)
}
