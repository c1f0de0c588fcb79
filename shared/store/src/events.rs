//! Outbox items ([`bouquet_events::OutboxItem`]): each domain event is put in the same
//! transaction as its change. The table's stream carries them to the publisher (docs/architecture.md
//! section 2).

use bouquet_domain::events::DomainEvent;
use bouquet_events::OutboxItem;

use crate::error::{StoreError, Target};
use crate::items::to_item;
use crate::tx::{Expr, Tx};

impl Tx {
    pub(crate) fn event(&mut self, table: &str, event: &DomainEvent) -> Result<(), StoreError> {
        let item = to_item(&OutboxItem::new(event).map_err(StoreError::corrupt)?)?;
        self.put(
            Target::Event,
            table,
            item,
            Some(Expr::new("attribute_not_exists(pk)")),
        )
    }
}

impl crate::store::Store {
    /// Puts `item` (of `target`) on `condition` (usually [`Expr::at_version`]) with its event,
    /// if any, in one transaction: the shape of every versioned change of a whole item.
    pub(crate) async fn put_with_event(
        &self,
        target: Target,
        item: crate::items::Item,
        condition: Expr,
        event: Option<&DomainEvent>,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        tx.put(target, &self.table, item, Some(condition))?;
        if let Some(event) = event {
            tx.event(&self.table, event)?;
        }
        tx.commit(self).await
    }
}
