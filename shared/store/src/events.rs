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
