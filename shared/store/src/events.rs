//! Outbox items ([`bouquet_events::OutboxItem`]): each domain event is put in the same
//! transaction as its change. The table's stream carries them to the publisher (docs/architecture.md
//! section 2).

use bouquet_domain::events::DomainEvent;
use bouquet_events::OutboxItem;

use crate::error::{StoreError, Target};
use crate::items::{to_item, Item};
use crate::store::Store;
use crate::tx::{Expr, Tx};

impl Tx {
    pub(crate) fn event(&mut self, table: &str, event: &DomainEvent) -> Result<(), StoreError> {
        let item = to_item(&OutboxItem::new(event).map_err(StoreError::corrupt)?)?;
        self.put_new(Target::Event, table, item)
    }

    /// Puts `event` (when there is one) beside the change and commits: how every change
    /// with an event ends.
    pub(crate) async fn commit_with_event(
        mut self,
        store: &Store,
        event: Option<&DomainEvent>,
    ) -> Result<(), StoreError> {
        if let Some(event) = event {
            self.event(&store.table, event)?;
        }
        self.commit(store).await
    }
}

impl Store {
    /// Puts `item` (of `target`) where none is yet, with its event, as the last items of
    /// `tx`, and commits: how an entity is created.
    pub(crate) async fn create_with_event(
        &self,
        mut tx: Tx,
        target: Target,
        item: Item,
        event: &DomainEvent,
    ) -> Result<(), StoreError> {
        tx.put_new(target, &self.table, item)?;
        tx.commit_with_event(self, Some(event)).await
    }

    /// Puts `item` (of `target`) on `condition` (usually [`Expr::at_version`]) with its event,
    /// if any, in one transaction: the shape of every versioned change of a whole item.
    pub(crate) async fn put_with_event(
        &self,
        target: Target,
        item: Item,
        condition: Expr,
        event: Option<&DomainEvent>,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        tx.put(target, &self.table, item, Some(condition))?;
        tx.commit_with_event(self, event).await
    }
}
