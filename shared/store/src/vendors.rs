use bouquet_domain::events::DomainEvent;
use bouquet_domain::{Timestamp, Vendor, VendorId};

use crate::error::{StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::{to_item, VendorItem};
use crate::keys;
use crate::tx::{Expr, Tx};
use crate::Store;

impl Store {
    /// Puts a new vendor with its event (and idempotency record): one transaction.
    pub async fn create_vendor(
        &self,
        vendor: &Vendor,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        tx.idempotency(&self.table, idempotency, now)?;
        let item = to_item(&VendorItem::from_domain(vendor))?;
        tx.put(
            Target::Vendor(vendor.vendor_id),
            &self.table,
            item,
            Some(Expr::new("attribute_not_exists(pk)")),
        )?;
        tx.event(&self.table, event)?;
        tx.commit(self).await
    }

    /// Whether the vendor exists (a cheap check before work outside DynamoDB).
    pub async fn vendor_exists(&self, vendor_id: VendorId) -> Result<bool, StoreError> {
        let key = keys::key(keys::vendor_pk(&vendor_id.to_string()), keys::VENDOR_SK);
        Ok(self.get_item(key, false).await?.is_some())
    }
}
