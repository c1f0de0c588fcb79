//! Transitions of one order by a caller who may see it (cancel, fulfil).

use bouquet_domain::{Order, OrderId, Timestamp};
use bouquet_store::{Store, StoreError};

use crate::checkout::{self, CheckoutError, RecordFor};
use bouquet_store::retry::Retry;

/// What a caller does to an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Its customer cancels a live reservation.
    Cancel,
    /// Its vendor fulfils a paid order.
    Fulfil,
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

/// Reads `order_id`; when `visible` says the caller may touch it, lets `transition` decide
/// and write (with the idempotency record `record_for` makes from the order it leads to). A lost race reads again (with backoff, a few times) so the answer reflects the
/// order as it is now.
pub async fn transition(
    store: &Store,
    order_id: OrderId,
    visible: impl Fn(&Order) -> bool,
    action: Action,
    record_for: RecordFor<'_>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Order, TransitionError> {
    let mut retry = Retry::optimistic();
    loop {
        let order = store
            .order(order_id)
            .await?
            .filter(|o| visible(o))
            .ok_or(TransitionError::NotFound)?;
        let result = match action {
            Action::Cancel => {
                checkout::cancel(store, &order, correlation_id, record_for, now).await
            }
            Action::Fulfil => {
                checkout::fulfil(store, &order, correlation_id, record_for, now).await
            }
        };
        match result {
            Ok(changed) => return Ok(changed),
            Err(CheckoutError::Changed) if retry.wait().await => continue,
            Err(CheckoutError::Changed) => return Err(TransitionError::Busy),
            Err(other) => return Err(other.into()),
        }
    }
}
