//! Checkout's decisions: for each transition of an order, the order after it and what it does
//! to the order's bouquets. The checkout use cases (`bouquet-app`) write each decision in one
//! transaction, every bouquet effect conditioned on the bouquet still being held by the order;
//! [`BouquetEffect::apply`] is that same effect and condition in memory, so the lifecycle
//! property test drives exactly these decisions.

use crate::bouquet::{Bouquet, BouquetStatus};
use crate::commission::CommissionRate;
use crate::error::DomainError;
use crate::ids::{BouquetId, OrderId};
use crate::order::Order;
use crate::Timestamp;

/// What a transition does to one bouquet the order holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BouquetEffect {
    /// Keep the hold, until `until` (a payment attempt extends it; a decline restores it).
    Hold {
        until: Timestamp,
    },
    Sell,
    Release,
    /// Sold to the order, back on sale (a rejected order): with `Withdraw`, the effects whose
    /// condition is the bouquet `sold` to the order, not held by it.
    Return,
    /// Sold to the order, withdrawn (a rejected order whose vendor will not sell it again).
    Withdraw,
}

impl BouquetEffect {
    /// Applies the effect to `bouquet` under the condition the store writes it with (the
    /// bouquet is `reserved` by `order_id`, whatever its hold's end): `false`, and no change,
    /// when it is not.
    pub fn apply(self, bouquet: &mut Bouquet, order_id: OrderId, now: Timestamp) -> bool {
        match self {
            BouquetEffect::Return => return bouquet.return_to_sale(order_id, now),
            BouquetEffect::Withdraw => return bouquet.withdraw_sold(order_id, now),
            _ => {}
        }
        if !matches!(bouquet.status, BouquetStatus::Reserved { order_id: holder, .. } if holder == order_id)
        {
            return false;
        }
        match self {
            BouquetEffect::Hold { until } => bouquet.hold(order_id, until, now),
            BouquetEffect::Sell => bouquet.sell(order_id, now).is_ok(),
            BouquetEffect::Release => bouquet.release(order_id, now),
            BouquetEffect::Return | BouquetEffect::Withdraw => false,
        }
    }
}

/// A checkout decision: the transition, or why the order cannot make it.
pub type Decision = Result<Transition, DomainError>;

/// An order transition: the order after it, and the effects on its bouquets, all or nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub order: Order,
    pub effects: Vec<(BouquetId, BouquetEffect)>,
}

impl Transition {
    fn on(order: Order, ids: impl IntoIterator<Item = BouquetId>, effect: BouquetEffect) -> Self {
        let effects = ids.into_iter().map(|id| (id, effect)).collect();
        Self { order, effects }
    }

    fn on_all(order: Order, effect: BouquetEffect) -> Self {
        let ids: Vec<BouquetId> = order.bouquet_ids().collect();
        Self::on(order, ids, effect)
    }

    /// A move of the order alone: its bouquets stay as they are.
    fn order_only(order: Order) -> Self {
        Self {
            order,
            effects: Vec::new(),
        }
    }
}

/// The order's bouquets that it still holds, of those read (a lapsed hold may be taken).
pub fn held_by(order: &Order, bouquets: &[Bouquet]) -> Vec<BouquetId> {
    bouquets
        .iter()
        .filter(|b| matches!(b.status, BouquetStatus::Reserved { order_id, .. } if order_id == order.order_id))
        .filter(|b| order.bouquet_ids().any(|id| id == b.bouquet_id))
        .map(|b| b.bouquet_id)
        .collect()
}

/// A payment attempt claims the order: `payment_pending`, its bouquets held over the
/// attempt's lease, its split fixed at `commission` to `payee` ([`Order::settle`]). `None` when it is
/// already paid.
pub fn claim(
    order: &Order,
    commission: CommissionRate,
    payee: Option<&str>,
    now: Timestamp,
) -> Result<Option<Transition>, DomainError> {
    let mut claimed = order.clone();
    if !claimed.begin_payment(now)? {
        return Ok(None);
    }
    claimed.settle(commission, payee);
    let until = claimed.payment_hold_until(now);
    Ok(Some(Transition::on_all(
        claimed,
        BouquetEffect::Hold { until },
    )))
}

/// The gateway approved: `paid`, every bouquet sold.
pub fn charged(order: &Order, charge_id: String, now: Timestamp) -> Decision {
    let mut paid = order.clone();
    paid.payment_succeeded(charge_id, now)?;
    // The effects are on the bouquets as the claimed order named them.
    let ids: Vec<BouquetId> = order.bouquet_ids().collect();
    Ok(Transition::on(paid, ids, BouquetEffect::Sell))
}

/// An approved charge whose bouquets were lost (an interrupted attempt outlived its lease):
/// refunded, and the bouquets it still holds released.
pub fn refunded(order: &Order, held: &[BouquetId], now: Timestamp) -> Decision {
    releasing(order, held, |refunded| refunded.payment_refunded(now))
}

/// The gateway gave no definite answer: still `payment_pending`, the lease given up.
pub fn interrupted(order: &Order, now: Timestamp) -> Decision {
    let mut pending = order.clone();
    pending.payment_interrupted(now)?;
    Ok(Transition::order_only(pending))
}

/// The gateway asks the customer to authenticate: still `payment_pending`, the bouquets held
/// over the authentication window (bounded).
pub fn awaiting_authentication(order: &Order, now: Timestamp) -> Decision {
    let mut pending = order.clone();
    let until = pending.awaiting_authentication(now)?;
    Ok(Transition::on_all(pending, BouquetEffect::Hold { until }))
}

/// The gateway declined: `reserved` again, the bouquets still held back to the original hold.
pub fn declined(order: &Order, held: &[BouquetId], now: Timestamp) -> Decision {
    let mut reserved = order.clone();
    reserved.payment_declined(now)?;
    let until = order.reserved_until;
    Ok(Transition::on(
        reserved,
        held.iter().copied(),
        BouquetEffect::Hold { until },
    ))
}

/// Its customer cancels a live reservation: `cancelled`, every bouquet available again.
pub fn cancelled(order: &Order, now: Timestamp) -> Decision {
    let mut cancelled = order.clone();
    cancelled.cancel(now)?;
    Ok(Transition::on_all(cancelled, BouquetEffect::Release))
}

/// Its vendor fulfils a paid order; the bouquets stay sold.
pub fn fulfilled(order: &Order, now: Timestamp) -> Decision {
    let mut fulfilled = order.clone();
    fulfilled.fulfil(now)?;
    Ok(Transition::order_only(fulfilled))
}

/// A vendor's step on a paid order that leaves its bouquets as they are (accept, dispatch).
pub fn stepped(order: &Order, step: crate::order::FulfilmentStep, now: Timestamp) -> Decision {
    let mut next = order.clone();
    next.step(step, now)?;
    Ok(Transition::order_only(next))
}

/// The vendor rejects a paid order: its bouquets go back on sale, or are withdrawn when the
/// vendor says so (the refund is the caller's, after this is written).
pub fn rejected(order: &Order, reason: &str, withdraw: bool, now: Timestamp) -> Decision {
    let mut rejected = order.clone();
    rejected.reject(reason, withdraw, now)?;
    let effect = if withdraw {
        BouquetEffect::Withdraw
    } else {
        BouquetEffect::Return
    };
    Ok(Transition::on_all(rejected, effect))
}

/// A lapsed reservation expires, releasing only the bouquets it still holds.
pub fn expired(order: &Order, held: &[BouquetId], now: Timestamp) -> Decision {
    releasing(order, held, |expired| expired.expire(now))
}

/// `order` after `step` (on a copy), releasing the bouquets of `held`: the end of a hold
/// that did not become a sale.
fn releasing(
    order: &Order,
    held: &[BouquetId],
    step: impl FnOnce(&mut Order) -> Result<(), DomainError>,
) -> Decision {
    let mut next = order.clone();
    step(&mut next)?;
    Ok(Transition::on(
        next,
        held.iter().copied(),
        BouquetEffect::Release,
    ))
}
