//! A customer's erasure of their personal data (issue 30, issue 51): every one of their orders
//! is redacted now or, while its shop still has to deliver it, when it ends; their reviews lose
//! their text and keep their stars; the delivery photos go with the order's details.

use futures::{StreamExt, TryStreamExt};
use serde::Serialize;

use bouquet_domain::identity::{Identity, NotAllowed, Role};
use bouquet_domain::{DomainError, Order, Timestamp};
use bouquet_store::StoreError;

use crate::checkout::{self, CheckoutError};
use crate::problem::ApiError;
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum ErasureError {
    #[error("the caller may not do this")]
    Forbidden(#[from] NotAllowed),
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
    /// Erasing a review's text failed (retried by repeating the erasure).
    #[error(transparent)]
    Reviews(Box<crate::reviews::ReviewsError>),
}

/// What an erasure did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Erasure {
    /// Ended orders whose delivery details were redacted now.
    pub redacted: usize,
    /// Open orders (the vendor still delivers them): redacted by the sweeper as each ends.
    pub when_ended: usize,
    /// Reviews whose text was erased now (their stars stay in the shop's rating).
    pub reviews: usize,
}

/// The signed-in customer asks for their personal data to be erased: every one of their
/// orders is redacted now, or, while the vendor still has to deliver it, as soon as it ends.
/// The orders stay (the vendor's books). Repeating it changes nothing more.
pub async fn erase(
    app: &App,
    caller: &Identity,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Erasure, ErasureError> {
    caller.require(Role::Customer)?;
    let mut erasure = Erasure::default();
    let mut cursor: Option<String> = None;
    loop {
        let page = app
            .store
            .customer_orders(&caller.subject, cursor.as_deref(), 100)
            .await?;
        // A page's orders a few at a time: each is its own reads and conditional writes
        // (and a photo folder), and a regular customer has many.
        let erased: Vec<Erasure> = futures::stream::iter(page.items)
            .map(|order| erase_order(app, order, correlation_id, now))
            .buffer_unordered(ERASURES_AT_ONCE)
            .try_collect()
            .await?;
        for one in erased {
            erasure.redacted += one.redacted;
            erasure.when_ended += one.when_ended;
            erasure.reviews += one.reviews;
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(erasure),
        }
    }
}

/// How many of a customer's orders are erased at once.
const ERASURES_AT_ONCE: usize = 8;

/// Erases one order and the text of its review.
async fn erase_order(
    app: &App,
    order: Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Erasure, ErasureError> {
    let order_id = order.order_id;
    let mut erasure = Erasure::default();
    erase_one(app, order, correlation_id, now, &mut erasure).await?;
    if crate::reviews::erase_text(app, order_id, correlation_id, now)
        .await
        .map_err(|e| ErasureError::Reviews(Box::new(e)))?
    {
        erasure.reviews += 1;
    }
    Ok(erasure)
}

/// Erases one order, reading it again if it changed under the write.
async fn erase_one(
    app: &App,
    mut order: Order,
    correlation_id: &str,
    now: Timestamp,
    erasure: &mut Erasure,
) -> Result<(), ErasureError> {
    let mut retry = bouquet_store::retry::Retry::optimistic();
    loop {
        let mut erased = order.clone();
        if !erased.erase_personal_data(now)? {
            return Ok(());
        }
        if erased.redacted_at.is_some() {
            checkout::remove_delivery_photos(app, &order).await?;
        }
        match checkout::write_unannounced(&app.store, &order, &erased, correlation_id, now).await {
            Ok(()) => {
                if erased.status.is_final() {
                    erasure.redacted += 1;
                } else {
                    erasure.when_ended += 1;
                }
                return Ok(());
            }
            Err(CheckoutError::Changed) if retry.wait().await => {
                match app.store.order(order.order_id).await? {
                    Some(current) => order = current,
                    None => return Ok(()),
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
}

impl From<ErasureError> for ApiError {
    fn from(error: ErasureError) -> Self {
        match error {
            ErasureError::Forbidden(_) => ApiError::forbidden(),
            ErasureError::Domain(error) => error.into(),
            ErasureError::Store(error) => error.into(),
            ErasureError::Checkout(error) => error.into(),
            ErasureError::Reviews(error) => (*error).into(),
        }
    }
}
