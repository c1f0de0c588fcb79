//! A customer's cart: bouquets of one vendor, at most [`MAX_CART_ITEMS`]. The store enforces
//! the same rules in the write's condition, so two concurrent adds cannot mix vendors.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::bouquet::Bouquet;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::ids::{BouquetId, CustomerId, VendorId};
use crate::order::MAX_BOUQUETS_PER_ORDER;

/// A cart becomes one reservation transaction: one update per bouquet plus the order, its
/// event, the idempotency record and the cart's delete, so 20 + 4 items, inside DynamoDB's 100.
pub const MAX_CART_ITEMS: usize = MAX_BOUQUETS_PER_ORDER;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cart {
    pub customer_id: CustomerId,
    /// The vendor of the bouquets in it; `None` while empty.
    pub vendor_id: Option<VendorId>,
    pub bouquet_ids: BTreeSet<BouquetId>,
    pub version: u64,
}

impl Cart {
    pub fn empty(customer_id: CustomerId) -> Self {
        Self {
            customer_id,
            vendor_id: None,
            bouquet_ids: BTreeSet::new(),
            version: 0,
        }
    }

    /// Adds an available bouquet of the cart's vendor (any vendor while empty). Adding one
    /// that is already in the cart changes nothing.
    pub fn add(&mut self, bouquet: &Bouquet, now: Timestamp) -> Result<(), DomainError> {
        if !bouquet.is_available(now) {
            return Err(DomainError::BouquetUnavailable(vec![bouquet.bouquet_id]));
        }
        if !self.bouquet_ids.is_empty() && self.vendor_id != Some(bouquet.vendor_id) {
            return Err(DomainError::CartVendorMismatch);
        }
        if !self.bouquet_ids.contains(&bouquet.bouquet_id)
            && self.bouquet_ids.len() >= MAX_CART_ITEMS
        {
            return Err(DomainError::CartFull);
        }
        self.vendor_id = Some(bouquet.vendor_id);
        self.bouquet_ids.insert(bouquet.bouquet_id);
        self.version += 1;
        Ok(())
    }

    pub fn remove(&mut self, bouquet_id: BouquetId) {
        if self.bouquet_ids.remove(&bouquet_id) {
            self.version += 1;
        }
        if self.bouquet_ids.is_empty() {
            self.vendor_id = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bouquet::tests::bouquet;
    use crate::ids::OrderId;

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

    #[test]
    fn holds_one_vendor_up_to_the_limit() {
        let (v1, v2) = (VendorId::generate(), VendorId::generate());
        let mut cart = Cart::empty(CustomerId::parse("c").unwrap());
        let first = bouquet(v1, 100, T0);
        cart.add(&first, T0).unwrap();
        cart.add(&first, T0).unwrap();
        assert_eq!(cart.bouquet_ids.len(), 1, "adding twice is one item");
        assert_eq!(
            cart.add(&bouquet(v2, 100, T0), T0),
            Err(DomainError::CartVendorMismatch)
        );
        for _ in 1..MAX_CART_ITEMS {
            cart.add(&bouquet(v1, 100, T0), T0).unwrap();
        }
        assert_eq!(
            cart.add(&bouquet(v1, 100, T0), T0),
            Err(DomainError::CartFull)
        );
        cart.add(&first, T0)
            .expect("re-adding an item of a full cart is fine");
        for id in cart.bouquet_ids.clone() {
            cart.remove(id);
        }
        assert_eq!(cart.vendor_id, None);
        cart.add(&bouquet(v2, 100, T0), T0)
            .expect("an emptied cart takes any vendor");
        let mut held = bouquet(v2, 100, T0);
        held.reserve(
            OrderId::generate(),
            T0.plus(std::time::Duration::from_secs(60)),
            T0,
        )
        .unwrap();
        assert!(matches!(
            cart.add(&held, T0),
            Err(DomainError::BouquetUnavailable(_))
        ));
    }
}
