//! Transitions of one order by a caller who may see it: its customer cancels; its vendor
//! accepts, dispatches, fulfils (delivered) or rejects (refunded).

use crate::problem::ApiError;
use bouquet_domain::identity::Identity;
use bouquet_domain::order::FulfilmentStep;
use bouquet_domain::{Order, OrderId, Timestamp};
use bouquet_store::StoreError;

use crate::checkout::{self, CheckoutError};
use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;
use bouquet_store::retry::Retry;

/// What a caller does to an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// Its customer cancels a live reservation.
    Cancel,
    /// Its vendor fulfils (delivers) a paid order.
    Fulfil,
    /// Its vendor accepts a paid order.
    Accept,
    /// Its vendor sends an accepted order out for delivery.
    Dispatch,
    /// Its vendor rejects a paid or accepted order, saying why: the customer is refunded; the
    /// bouquets go back on sale, or are withdrawn when `withdraw`.
    Reject { reason: &'a str, withdraw: bool },
}

#[derive(Debug, thiserror::Error)]
pub enum TransitionError {
    /// No such order, or not one the caller may see.
    #[error("no such order")]
    NotFound,
    /// The order kept changing under every attempt.
    #[error("the order kept changing; retry shortly")]
    Busy,
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
}

impl From<StoreError> for TransitionError {
    fn from(error: StoreError) -> Self {
        TransitionError::Checkout(CheckoutError::Store(error))
    }
}

/// The order as `caller` may know it: `None` when there is none or the caller may not read it
/// (so a stranger learns nothing from any order-scoped route: 404 whatever they asked). Every
/// order-scoped use case that reads its order first reads it through this.
pub async fn readable(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
) -> Result<Option<Order>, StoreError> {
    Ok(app
        .store
        .order(order_id)
        .await?
        .filter(|order| order.readable_by(caller)))
}

/// `caller` moves `order_id` by `action`: its customer cancels, its vendor fulfils; an order
/// the caller may not touch is `NotFound`. A request with a key that was used before gets the
/// stored answer (read first), and the record is written with the transition. A lost race
/// reads again (with backoff, a few times) so the answer reflects the order as it is now.
pub async fn transition(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    action: Action<'_>,
    key: Option<Idempotency<'_, Order>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Order>, TransitionError> {
    let store = &app.store;
    if let Some(key) = &key {
        if let Some(record) = store.idempotency_record(key.key_hash, now).await? {
            return Ok(Replayable::Replayed(record));
        }
    }
    let visible = |order: &Order| match action {
        Action::Cancel => order.customer_id == caller.subject,
        _ => caller.vendor_id == Some(order.vendor_id),
    };
    let record_for = |order: &Order| idempotency::record(key.as_ref(), order);
    let mut retry = Retry::optimistic();
    loop {
        let order = store
            .order(order_id)
            .await?
            .filter(|o| visible(o))
            .ok_or(TransitionError::NotFound)?;
        let result = match action {
            Action::Cancel => {
                checkout::cancel(store, &order, correlation_id, &record_for, now).await
            }
            Action::Fulfil => {
                checkout::fulfil(store, &order, correlation_id, &record_for, now).await
            }
            Action::Accept | Action::Dispatch => {
                let step = if action == Action::Accept {
                    FulfilmentStep::Accept
                } else {
                    FulfilmentStep::Dispatch
                };
                checkout::advance(store, &order, step, correlation_id, &record_for, now).await
            }
            Action::Reject { reason, withdraw } => {
                checkout::reject(
                    store,
                    app.payments.as_ref(),
                    &order,
                    checkout::Rejection { reason, withdraw },
                    correlation_id,
                    &record_for,
                    now,
                )
                .await
            }
        };
        match result {
            Ok(changed) => return Ok(Replayable::Done(changed)),
            // A concurrent duplicate with the same key committed first.
            Err(CheckoutError::Store(StoreError::IdempotencyReplay(record))) => {
                return Ok(Replayable::Replayed(*record))
            }
            Err(CheckoutError::Changed) if retry.wait().await => continue,
            Err(CheckoutError::Changed) => return Err(TransitionError::Busy),
            Err(other) => return Err(other.into()),
        }
    }
}

impl From<TransitionError> for ApiError {
    fn from(error: TransitionError) -> Self {
        match error {
            TransitionError::NotFound => ApiError::NotFound("order"),
            TransitionError::Busy => ApiError::busy(),
            TransitionError::Checkout(error) => error.into(),
        }
    }
}
