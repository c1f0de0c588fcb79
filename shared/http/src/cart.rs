//! The cart as the three cart routes answer it: its bouquets as they are now, and the total.

use serde::Serialize;

use bouquet_domain::bouquet::BouquetView;
use bouquet_domain::{BouquetId, Cart, CustomerId, Money, VendorId};

use crate::ctx::Ctx;
use crate::problem::ApiError;

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
pub async fn view(ctx: &Ctx, cart: Cart) -> Result<CartView, ApiError> {
    let ids: Vec<BouquetId> = cart.bouquet_ids.iter().copied().collect();
    let bouquets = ctx.app.store.bouquets(&ids).await?;
    let items: Vec<BouquetView> = bouquets
        .into_iter()
        .flatten()
        .map(|b| b.view(ctx.now))
        .collect();
    let mut total: Option<Money> = None;
    for item in &items {
        total = Some(match total {
            None => item.price,
            Some(sum) => sum
                .checked_add(item.price)
                .map_err(|e| ApiError::Internal(e.to_string()))?,
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
