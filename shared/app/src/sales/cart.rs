//! The cart as the three cart routes answer it: its bouquets as they are now, and the total.

use crate::problem::ApiError;
use serde::Serialize;

use bouquet_domain::bouquet::BouquetView;
use bouquet_domain::money::MoneyError;
use bouquet_domain::{BouquetId, Cart, CustomerId, DomainError, Money, Timestamp, VendorId};
use bouquet_store::{CartRefusal, Store, StoreError};

use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum CartViewError {
    /// The bouquet to add does not exist (or is not available to add).
    #[error("bouquet {0} is not available")]
    Unavailable(BouquetId),
    /// The cart refuses it (another vendor's bouquet, full, not available).
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The items' prices do not add up (mixed currencies, overflow): a corrupt cart.
    #[error("the cart's total: {0}")]
    Total(#[from] MoneyError),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CartView {
    pub customer_id: CustomerId,
    pub vendor_id: Option<VendorId>,
    pub items: Vec<BouquetView>,
    /// Sum of the current prices; `null` for an empty cart.
    pub total: Option<Money>,
    pub version: u64,
}

/// The customer's cart, as it is now.
pub async fn current(
    app: &App,
    customer: &CustomerId,
    now: Timestamp,
) -> Result<CartView, CartViewError> {
    let cart = app.store.cart(customer).await?;
    view(&app.store, cart, now).await
}

/// Adds an available bouquet to the customer's cart: one conditional write on the cart, so
/// concurrent adds cannot mix vendors. Adding twice is a no-op.
pub async fn add(
    app: &App,
    customer: &CustomerId,
    bouquet_id: BouquetId,
    now: Timestamp,
) -> Result<CartView, CartViewError> {
    let bouquet = app
        .store
        .bouquet(bouquet_id, true)
        .await?
        .ok_or(CartViewError::Unavailable(bouquet_id))?;
    // Checked on the bouquet as read (a clear answer without a write); the write checks the
    // cart again, and the reservation the bouquet.
    Cart::empty(customer.clone()).add(&bouquet, now)?;
    let updated = app
        .store
        .add_to_cart(customer, &bouquet, now)
        .await
        .map_err(|refusal| match refusal {
            CartRefusal::Domain(error) => CartViewError::Domain(error),
            CartRefusal::Store(error) => CartViewError::Store(error),
        })?;
    view(&app.store, updated, now).await
}

/// Removes a bouquet from the customer's cart (a no-op when it is not there).
pub async fn remove(
    app: &App,
    customer: &CustomerId,
    bouquet_id: BouquetId,
    now: Timestamp,
) -> Result<CartView, CartViewError> {
    let updated = app.store.remove_from_cart(customer, bouquet_id).await?;
    view(&app.store, updated, now).await
}

/// Reads the cart's bouquets (one `BatchGetItem`) to show them as they are now.
async fn view(store: &Store, cart: Cart, now: Timestamp) -> Result<CartView, CartViewError> {
    let ids: Vec<BouquetId> = cart.bouquet_ids.iter().copied().collect();
    let bouquets = store.bouquets(&ids).await?;
    let items: Vec<BouquetView> = bouquets
        .into_iter()
        .flatten()
        .map(|b| b.view(now))
        .collect();
    let mut total: Option<Money> = None;
    for item in &items {
        total = Some(match total {
            None => item.price,
            Some(sum) => sum.checked_add(item.price)?,
        });
    }
    Ok(CartView {
        customer_id: cart.customer_id,
        vendor_id: cart.vendor_id,
        items,
        total,
        version: cart.version,
    })
}

impl From<CartViewError> for ApiError {
    fn from(error: CartViewError) -> Self {
        match error {
            CartViewError::Unavailable(id) => DomainError::BouquetUnavailable(vec![id]).into(),
            CartViewError::Domain(error) => error.into(),
            CartViewError::Store(error) => error.into(),
            error @ CartViewError::Total(_) => ApiError::internal(error),
        }
    }
}
