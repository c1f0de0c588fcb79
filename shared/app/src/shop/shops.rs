//! Shops as administrators see them (issue 31): every shop listed, and a shop suspended or
//! reinstated. A suspended shop's bouquets leave the catalogue and cannot be reserved or
//! changed, and it cannot list new ones; orders already placed go on (their bouquets are
//! held or sold, which a suspension does not undo).
//!
//! Suspending takes the shop's bouquets off sale (each off the catalogue index, on the version
//! read), then marks the shop (with `VendorSuspended`, which the storefront follows live: from
//! then on it cannot list), then takes off what was listed meanwhile (a bouquet costs one
//! conditional write on the index's copy, read again only when that copy was stale): so no bouquet listed
//! before the suspension can be reserved after it. Reinstating marks the shop, then puts its
//! bouquets back. The request is idempotent as a whole: if it fails part-way the administrator
//! sends it again, and what the first attempt left is done then.

use std::collections::HashSet;

use crate::problem::{ApiError, Refusal};
use bouquet_domain::commission::CommissionRate;
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed, Role};
use bouquet_domain::{Bouquet, BouquetId, Timestamp, Vendor, VendorId};
use bouquet_store::retry::Retry;
use bouquet_store::{Page, StoreError};
use futures::{StreamExt, TryStreamExt};

use crate::App;

/// How many of a shop's bouquets are read per page while suspending or reinstating it.
const SWEEP_PAGE: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum ShopError {
    #[error("no such shop")]
    NotFound,
    #[error("only an administrator may do this")]
    Forbidden(#[from] NotAllowed),
    #[error("the shop kept changing; retry shortly")]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a shop may not write.
#[derive(Debug, thiserror::Error)]
pub enum NotTrading {
    #[error("the shop is suspended")]
    Suspended,
    #[error("no such shop")]
    Unknown,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a route does on a shop's behalf, as its crate declares it (`bouquet_http::Route`).
/// The HTTP pipeline reads it before the handler runs ([`require_standing`]), so the rule
/// holds for every route, present and future: a suspended shop may accept, dispatch, deliver
/// (with its proof-of-delivery photo) and reject the orders it already has, and nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShopStanding {
    /// Every route unless it says otherwise: a shop member's write (any method but `GET`) is
    /// refused while the member's shop is suspended.
    #[default]
    MembersWrites,
    /// Also an administrator's write to the shop in the path (`{vendorId}`): adding a member.
    ShopInPath,
    /// A step of the shop's open orders: it goes on while the shop is suspended.
    OpenOrders,
}

impl ShopStanding {
    /// The shop whose standing decides this request, if any: `write` is whether the request
    /// changes anything, `path_shop` the route's `{vendorId}`.
    pub fn shop_to_check(
        self,
        write: bool,
        caller: Option<&Identity>,
        path_shop: Option<VendorId>,
    ) -> Option<VendorId> {
        if !write || self == ShopStanding::OpenOrders {
            return None;
        }
        let caller = caller?;
        match (self, caller.role) {
            (_, Role::Vendor) => caller.vendor_id,
            (ShopStanding::ShopInPath, Role::Admin) => path_shop,
            _ => None,
        }
    }
}

/// The one check of a shop's standing, for every request ([`ShopStanding`]): the shop is read
/// consistently, so a write that starts after the suspension's stamp is refused. A write that
/// is one transaction also conditions on the shop (listing does), and a bouquet photo
/// processed after a suspension is not shown (`photos`).
pub async fn require_standing(
    app: &App,
    standing: ShopStanding,
    write: bool,
    caller: Option<&Identity>,
    path_shop: Option<VendorId>,
) -> Result<(), NotTrading> {
    match standing.shop_to_check(write, caller, path_shop) {
        // Only a suspension refuses here; an unknown shop is the use case's to answer.
        Some(shop) => match require_trading(app, shop).await {
            Err(NotTrading::Unknown) => Ok(()),
            other => other.map(drop),
        },
        None => Ok(()),
    }
}

/// The shop, if it trades: its item read consistently.
pub async fn require_trading(app: &App, vendor_id: VendorId) -> Result<Vendor, NotTrading> {
    let vendor = app
        .store
        .vendor(vendor_id, true)
        .await?
        .ok_or(NotTrading::Unknown)?;
    if vendor.is_suspended() {
        return Err(NotTrading::Suspended);
    }
    Ok(vendor)
}

/// A page of every shop, oldest first (administrators only).
pub async fn list(
    app: &App,
    caller: &Identity,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Vendor>, ShopError> {
    caller.require(Role::Admin)?;
    Ok(app.store.vendors(cursor, limit).await?)
}

/// What a suspension or a reinstatement did.
#[derive(Debug)]
pub struct ShopChange {
    pub vendor: Vendor,
    /// Bouquets taken off or put back on sale by this request.
    pub bouquets_moved: usize,
}

/// Suspends the shop (`VendorSuspended`) and takes its bouquets off sale. Suspending a
/// suspended shop changes nothing more than the bouquets still listed (a retry).
pub async fn suspend(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    correlation_id: &str,
    now: Timestamp,
) -> Result<ShopChange, ShopError> {
    set_suspended(app, caller, vendor_id, true, correlation_id, now).await
}

/// Reinstates the shop (`VendorReinstated`) and puts its bouquets back on sale.
pub async fn reinstate(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    correlation_id: &str,
    now: Timestamp,
) -> Result<ShopChange, ShopError> {
    set_suspended(app, caller, vendor_id, false, correlation_id, now).await
}

async fn set_suspended(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    suspended: bool,
    correlation_id: &str,
    now: Timestamp,
) -> Result<ShopChange, ShopError> {
    caller.require(Role::Admin)?;
    if app.store.vendor(vendor_id, false).await?.is_none() {
        return Err(ShopError::NotFound);
    }
    let mut bouquets_moved = 0;
    // The bouquets already marked by this request: the pass after the shop's mark only
    // looks for those listed meanwhile.
    let mut marked = HashSet::new();
    if suspended {
        bouquets_moved += mark_bouquets(app, vendor_id, true, now, &mut marked).await?;
    }
    let vendor = mark_shop(app, vendor_id, suspended, correlation_id, now).await?;
    bouquets_moved += mark_bouquets(app, vendor_id, suspended, now, &mut marked).await?;
    Ok(ShopChange {
        vendor,
        bouquets_moved,
    })
}

/// How many of a shop's bouquets are marked at once: each is a read and a conditional write
/// of its own item (no hot key), so an administrator's suspension of a shop of a hundred
/// bouquets waits on about ten round trips, not forty (its p99 under the shop load was 1.1 s
/// at 8).
const MARKS_AT_ONCE: usize = 32;

/// Every bouquet of the shop off sale (or back on), but those in `marked`, which gains them;
/// how many moved.
async fn mark_bouquets(
    app: &App,
    vendor_id: VendorId,
    suspended: bool,
    now: Timestamp,
    marked: &mut HashSet<BouquetId>,
) -> Result<usize, ShopError> {
    let mut moved = 0;
    let mut cursor = None;
    loop {
        let page = app
            .store
            .vendor_bouquets(vendor_id, cursor.as_deref(), SWEEP_PAGE)
            .await?;
        let unmarked: Vec<Bouquet> = page
            .items
            .into_iter()
            .filter(|bouquet| marked.insert(bouquet.bouquet_id))
            .collect();
        // A page's bouquets at once, a few at a time: each is its own conditional write.
        let outcomes: Vec<bool> = futures::stream::iter(unmarked)
            .map(|bouquet| mark_bouquet(app, bouquet, suspended, now))
            .buffer_unordered(MARKS_AT_ONCE)
            .try_collect()
            .await?;
        moved += outcomes.into_iter().filter(|moved| *moved).count();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(moved),
        }
    }
}

/// An administrator sets the shop's commission (`None`: the marketplace's again), with
/// `VendorCommissionChanged`; the change joins the shop's history. Orders claimed for payment
/// from then on are split at it. Setting what it is already changes nothing.
pub async fn set_commission(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    rate: Option<CommissionRate>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Vendor, ShopError> {
    caller.require(Role::Admin)?;
    change_shop(app, vendor_id, correlation_id, |shop| {
        shop.set_commission(rate, caller.subject.as_str(), now)
            .then_some((
                EventData::VendorCommissionChanged {
                    vendor_id,
                    commission_basis_points: rate.map(CommissionRate::basis_points),
                },
                now,
            ))
    })
    .await
}

/// The shop's own item suspended or reinstated, with its event when it changed.
async fn mark_shop(
    app: &App,
    vendor_id: VendorId,
    suspended: bool,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Vendor, ShopError> {
    change_shop(app, vendor_id, correlation_id, |shop| {
        // The stamp is when the mark is decided, not when the request began: a shop keeps
        // trading while its bouquets are taken off sale, and the auditor holds it to this
        // stamp (nothing of its own written after it).
        let stamp = app.clock.now().max(now);
        if suspended {
            shop.suspend(stamp)
                .then_some((EventData::VendorSuspended { vendor_id }, stamp))
        } else {
            shop.reinstate()
                .then_some((EventData::VendorReinstated { vendor_id }, stamp))
        }
    })
    .await
}

/// Reads the shop, applies `change` (which gives the event and its time, or `None` when it
/// changed nothing) and saves it at the version read, again from a fresh read when it moved
/// meanwhile.
async fn change_shop(
    app: &App,
    vendor_id: VendorId,
    correlation_id: &str,
    mut change: impl FnMut(&mut Vendor) -> Option<(EventData, Timestamp)>,
) -> Result<Vendor, ShopError> {
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let read = app
            .store
            .vendor(vendor_id, true)
            .await?
            .ok_or(ShopError::NotFound)?;
        let mut changed = read.clone();
        let Some((data, at)) = change(&mut changed) else {
            return Ok(read);
        };
        let event = DomainEvent::new(vendor_id, changed.version, at, correlation_id, data);
        match app
            .store
            .save_vendor(&changed, read.version, Some(&event))
            .await
        {
            Ok(()) => return Ok(changed),
            Err(StoreError::ConditionFailed(_)) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(ShopError::Busy)
}

/// One bouquet off or back on sale, on the version read; `false` when it already was. The
/// page's copy is tried first, so a bouquet usually costs one write, not a read and a write:
/// the index may lag, and then the write's condition fails and the bouquet is read again, as
/// is a copy that seems to need no change before it is believed.
async fn mark_bouquet(
    app: &App,
    listed: Bouquet,
    suspended: bool,
    now: Timestamp,
) -> Result<bool, ShopError> {
    if mark(app, &listed, suspended, now).await? == Marked::Written {
        return Ok(true);
    }
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let Some(read) = app.store.bouquet(listed.bouquet_id, true).await? else {
            return Ok(false);
        };
        match mark(app, &read, suspended, now).await? {
            Marked::Written => return Ok(true),
            Marked::AlreadySo => return Ok(false),
            // A sale, an edit or a reading moved it meanwhile: read it again.
            Marked::Moved => continue,
        }
    }
    Err(ShopError::Busy)
}

#[derive(Debug, PartialEq, Eq)]
enum Marked {
    Written,
    AlreadySo,
    Moved,
}

/// `read` marked and written at its version.
async fn mark(
    app: &App,
    read: &Bouquet,
    suspended: bool,
    now: Timestamp,
) -> Result<Marked, ShopError> {
    let mut changed = read.clone();
    // Stamped after the read, not at the request's start: every order holding the bouquet
    // committed before this read (else the write below fails and reads again), so no order
    // created after `suspendedAt` can hold it (the auditor checks this).
    let now = now.max(app.clock.now());
    if !changed.set_suspended(suspended, now) {
        return Ok(Marked::AlreadySo);
    }
    match app.store.save_bouquet_as_read(&changed, read.version).await {
        Ok(()) => Ok(Marked::Written),
        Err(StoreError::ConditionFailed(_)) => Ok(Marked::Moved),
        Err(other) => Err(other.into()),
    }
}

/// A suspended shop's write, refused (on every route but those that go on while suspended).
pub fn suspended() -> ApiError {
    ApiError::Conflict(Refusal::new(
        "vendor.suspended",
        "Shop suspended",
        "the shop is suspended: it changes nothing until an administrator reinstates it (its open orders go on)",
    ))
}

impl From<NotTrading> for ApiError {
    fn from(error: NotTrading) -> Self {
        match error {
            NotTrading::Suspended => suspended(),
            NotTrading::Unknown => ApiError::NotFound("vendor"),
            NotTrading::Store(error) => error.into(),
        }
    }
}

impl From<ShopError> for ApiError {
    fn from(error: ShopError) -> Self {
        match error {
            ShopError::NotFound => ApiError::NotFound("vendor"),
            ShopError::Forbidden(_) => ApiError::forbidden(),
            ShopError::Busy => ApiError::busy(),
            ShopError::Store(error) => error.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bouquet_domain::CustomerId;

    fn caller(role: Role, shop: Option<VendorId>) -> Identity {
        Identity {
            subject: CustomerId::parse("sub-1").unwrap(),
            role,
            vendor_id: shop,
            email: None,
        }
    }

    #[test]
    fn a_members_writes_are_checked_against_its_own_shop_unless_they_are_open_order_steps() {
        let (own, other) = (VendorId::generate(), VendorId::generate());
        let member = caller(Role::Vendor, Some(own));
        for standing in [ShopStanding::MembersWrites, ShopStanding::ShopInPath] {
            assert_eq!(
                standing.shop_to_check(true, Some(&member), Some(other)),
                Some(own),
                "{standing:?}: the member acts for its own shop, whatever the path names"
            );
            assert_eq!(standing.shop_to_check(false, Some(&member), None), None);
        }
        assert_eq!(
            ShopStanding::OpenOrders.shop_to_check(true, Some(&member), Some(own)),
            None
        );
    }

    #[test]
    fn an_administrators_write_is_checked_only_where_it_acts_for_the_shop_in_the_path() {
        let shop = VendorId::generate();
        let admin = caller(Role::Admin, None);
        assert_eq!(
            ShopStanding::ShopInPath.shop_to_check(true, Some(&admin), Some(shop)),
            Some(shop)
        );
        for standing in [ShopStanding::MembersWrites, ShopStanding::OpenOrders] {
            assert_eq!(standing.shop_to_check(true, Some(&admin), Some(shop)), None);
        }
        let customer = caller(Role::Customer, None);
        assert_eq!(
            ShopStanding::ShopInPath.shop_to_check(true, Some(&customer), Some(shop)),
            None
        );
        assert_eq!(
            ShopStanding::MembersWrites.shop_to_check(true, None, Some(shop)),
            None
        );
    }
}
