//! The cart as the three cart routes answer it: its bouquets as they are now, and the total.

use serde::Serialize;

use bouquet_domain::bouquet::BouquetView;
use bouquet_domain::money::MoneyError;
use bouquet_domain::{BouquetId, Cart, CustomerId, Money, Timestamp, VendorId};
use bouquet_store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum CartViewError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The items' prices do not add up (mixed currencies, overflow): a corrupt cart.
    #[error("the cart's total: {0}")]
    Total(#[from] MoneyError),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CartView {
    pub customer_id: CustomerId,
    pub vendor_id: Option<VendorId>,
    pub items: Vec<BouquetView>,
    /// Sum of the current prices; `null` for an empty cart.
    pub total: Option<Money>,
    pub version: u64,
}

/// Reads the cart's bouquets (one `BatchGetItem`) to show them as they are now.
pub async fn view(store: &Store, cart: Cart, now: Timestamp) -> Result<CartView, CartViewError> {
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
