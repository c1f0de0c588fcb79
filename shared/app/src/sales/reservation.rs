//! Reserving bouquets: the bouquets a customer names, or the cart's, held for the configured
//! duration in one transaction.
//!
//! DynamoDB calls: one consistent `BatchGetItem` (the bouquets, or the cart, and the
//! idempotency record), for the cart a second one for its bouquets, then one
//! `TransactWriteItems` that reserves every bouquet under a condition, puts the order, its
//! `OrderReserved` event and the idempotency record (and deletes the cart at the version
//! read). A replay is answered from the first read: one call.

use crate::problem::{ApiError, Refusal};
use bouquet_domain::events::DomainEvent;
use bouquet_domain::{Bouquet, BouquetId, CustomerId, DomainError, Order, Timestamp};
use bouquet_metrics as metrics;
use bouquet_store::retry::Retry;
use bouquet_store::{Counter, Reservation, StoreError, Target};

use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

/// Which bouquets to reserve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReserveFrom {
    /// These, in this order (already parsed: distinct, at most the order's limit).
    Bouquets(Vec<BouquetId>),
    /// The customer's cart, which the same transaction empties.
    Cart,
}

#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    /// The cart is empty, the bouquets are of several vendors, and the like.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// These bouquets do not exist, or another order holds them.
    #[error("bouquets are not available: {0:?}")]
    Unavailable(Vec<BouquetId>),
    /// The customer already holds bouquets with this many orders.
    #[error("the customer holds bouquets with {0} orders already")]
    Limit(u32),
    /// The customer made its reservations for this minute.
    #[error("too many reservations; try again in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    /// Lost every optimistic retry to concurrent changes of the cart.
    #[error("the cart kept changing; retry shortly")]
    Busy,
    /// The shop's payout account cannot take charges yet (or it has none): its bouquets are
    /// visible but cannot be reserved.
    #[error("the shop cannot take payments yet")]
    PayoutsNotReady,
    /// A rule of the domain broke (a bug): never the client's fault.
    #[error("{0}")]
    Unexpected(&'static str),
    #[error("the reservation was refused on {0:?}, which it does not write")]
    UnexpectedConflict(Target),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reserves `from` for `customer`. Counts each attempt that reached the bouquets: won (held)
/// or lost (one was taken).
pub async fn reserve(
    app: &App,
    customer: &CustomerId,
    from: &ReserveFrom,
    key: Option<Idempotency<'_, Order>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Order>, ReserveError> {
    let result = attempt(app, customer, from, key.as_ref(), correlation_id, now).await;
    match &result {
        Ok(Replayable::Done(_)) => metrics::count(metrics::RESERVATIONS, "won", 1),
        Err(ReserveError::Unavailable(_)) => metrics::count(metrics::RESERVATIONS, "lost", 1),
        _ => {}
    }
    result
}

/// [`reserve`] without the counting.
async fn attempt(
    app: &App,
    customer: &CustomerId,
    from: &ReserveFrom,
    key: Option<&Idempotency<'_, Order>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Order>, ReserveError> {
    let store = &app.store;
    let key_hash = key.map(|k| k.key_hash);
    let mut retry = Retry::optimistic();
    while retry.next().await {
        // Which bouquets, and (from the cart) which cart version to delete.
        let (bouquet_ids, cart, read) = match from {
            ReserveFrom::Bouquets(ids) => (
                ids.clone(),
                None,
                store.read_for_reservation(ids, key_hash, now).await?,
            ),
            ReserveFrom::Cart => {
                let (cart, record) = store
                    .read_cart_for_reservation(customer, key_hash, now)
                    .await?;
                if let Some(record) = record {
                    return Ok(Replayable::Replayed(record));
                }
                if cart.bouquet_ids.is_empty() {
                    return Err(DomainError::CartEmpty.into());
                }
                let ids: Vec<BouquetId> = cart.bouquet_ids.iter().copied().collect();
                let read = store.read_for_reservation(&ids, None, now).await?;
                (ids, Some(cart), read)
            }
        };
        if let Some(record) = read.idempotency {
            return Ok(Replayable::Replayed(record));
        }
        let missing: Vec<BouquetId> = bouquet_ids
            .iter()
            .zip(&read.bouquets)
            .filter(|(_, b)| b.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !missing.is_empty() {
            return Err(ReserveError::Unavailable(missing));
        }
        let bouquets: Vec<Bouquet> = read.bouquets.into_iter().flatten().collect();
        let mut order = match Order::reserve(customer.clone(), &bouquets, app.config.hold, now) {
            Err(DomainError::BouquetUnavailable(ids)) => {
                return Err(ReserveError::Unavailable(ids))
            }
            other => other?,
        };
        order.personal_data_days = app.config.personal_data_days;
        let mut held = bouquets;
        for bouquet in &mut held {
            bouquet.reserve(order.order_id, order.reserved_until, now)?;
        }
        let event = order
            .lifecycle_event()
            .map(|data| DomainEvent::new(order.order_id, order.version, now, correlation_id, data))
            .ok_or(ReserveError::Unexpected("a new order announces no event"))?;
        let record = idempotency::record(key, &order);
        let reservation = Reservation {
            order: &order,
            bouquets: &held,
            event: &event,
            idempotency: record.as_ref(),
            cart: cart.as_ref(),
            max_holds: app.config.max_holds_per_customer,
            rate: Counter {
                limit: app.config.reservation_limit(),
                subject: customer.as_str(),
            },
            payee_required: app.config.payouts_required,
        };
        match store.reserve(&reservation, now).await {
            Ok(()) => return Ok(Replayable::Done(order)),
            Err(StoreError::ConditionFailed(conflicts)) => {
                // Name exactly the bouquets that were taken, from the cancellation reasons.
                let mut taken = Vec::new();
                for conflict in conflicts {
                    match conflict.target {
                        Target::Bouquet(id) => match conflict.bouquet() {
                            Some(current) if current.is_available(now) => {}
                            _ => taken.push(id),
                        },
                        // The cart changed since it was read: read it again.
                        Target::Cart => {}
                        Target::Vendor(_) => return Err(ReserveError::PayoutsNotReady),
                        Target::Holds => {
                            return Err(ReserveError::Limit(app.config.max_holds_per_customer))
                        }
                        Target::Limit(_) => {
                            let reached = app.config.reservation_limit().reached(now);
                            return Err(ReserveError::RateLimited {
                                retry_after_secs: reached.retry_after_secs,
                            });
                        }
                        other => return Err(ReserveError::UnexpectedConflict(other)),
                    }
                }
                if !taken.is_empty() {
                    return Err(ReserveError::Unavailable(taken));
                }
            }
            Err(StoreError::IdempotencyReplay(record)) => return Ok(Replayable::Replayed(*record)),
            Err(other) => return Err(other.into()),
        }
    }
    Err(ReserveError::Busy)
}

impl From<ReserveError> for ApiError {
    fn from(error: ReserveError) -> Self {
        match error {
            ReserveError::Domain(error) => error.into(),
            ReserveError::Unavailable(ids) => DomainError::BouquetUnavailable(ids).into(),
            ReserveError::Limit(holds) => ApiError::Conflict(Refusal::new(
                "reservation.limit",
                "Reservation limit reached",
                format!("you already hold bouquets with {holds} orders; pay, cancel or let one expire first"),
            )),
            ReserveError::RateLimited { retry_after_secs } => {
                ApiError::rate_limited(retry_after_secs)
            }
            ReserveError::Busy => ApiError::busy(),
            ReserveError::PayoutsNotReady => ApiError::payouts_not_ready(),
            ReserveError::Store(error) => error.into(),
            error @ (ReserveError::Unexpected(_) | ReserveError::UnexpectedConflict(_)) => {
                ApiError::internal(error)
            }
        }
    }
}
