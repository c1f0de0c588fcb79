//! Transitions of one order by a caller who may see it (cancel, fulfil).

use bouquet_domain::{Order, OrderId, Timestamp};
use bouquet_store::{Store, StoreError};

use crate::checkout::CheckoutError;
use bouquet_store::retry::Retry;

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
/// and write. A lost race reads again (with backoff, a few times) so the answer reflects the
/// order as it is now.
pub async fn transition<F>(
    store: &Store,
    order_id: OrderId,
    visible: impl Fn(&Order) -> bool,
    transition: F,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Order, TransitionError>
where
    F: AsyncFn(&Store, &Order, &str, Timestamp) -> Result<Order, CheckoutError>,
{
    let mut retry = Retry::optimistic();
    loop {
        let order = store
            .order(order_id)
            .await?
            .filter(|o| visible(o))
            .ok_or(TransitionError::NotFound)?;
        match transition(store, &order, correlation_id, now).await {
            Ok(changed) => return Ok(changed),
            Err(CheckoutError::Changed) if retry.wait().await => continue,
            Err(CheckoutError::Changed) => return Err(TransitionError::Busy),
            Err(other) => return Err(other.into()),
        }
    }
}
