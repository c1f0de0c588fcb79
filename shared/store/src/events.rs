//! Outbox items: each domain event is put in the same transaction as its change. The table's
//! stream carries them to the publisher (DESIGN.md section 2). Events of one aggregate share a
//! partition key, so the stream keeps them in order.

use std::time::Duration;

use serde::Serialize;

use bouquet_domain::events::DomainEvent;

use crate::error::{StoreError, Target};
use crate::items::to_item;
use crate::tx::{Expr, Tx};

/// Outbox items are deleted by TTL a week after they were written.
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventItem<'a> {
    pk: String,
    sk: String,
    entity: &'static str,
    event_id: String,
    event_name: &'static str,
    aggregate_id: &'a str,
    aggregate_version: u64,
    occurred_at: i64,
    correlation_id: &'a str,
    /// The EventBridge detail, exactly as it will be published.
    detail: String,
    expires_at: i64,
}

impl Tx {
    pub(crate) fn event(&mut self, table: &str, event: &DomainEvent) -> Result<(), StoreError> {
        let detail = serde_json::to_string(event).map_err(StoreError::corrupt)?;
        let item = to_item(&EventItem {
            pk: format!("OUTBOX#{}", event.aggregate_id),
            sk: format!("EVENT#{:020}#{}", event.aggregate_version, event.event_id),
            entity: "event",
            event_id: event.event_id.to_string(),
            event_name: event.name(),
            aggregate_id: &event.aggregate_id,
            aggregate_version: event.aggregate_version,
            occurred_at: event.occurred_at.as_millis(),
            correlation_id: &event.correlation_id,
            detail,
            expires_at: event.occurred_at.plus(RETENTION).as_epoch_seconds(),
        })?;
        self.put(
            Target::Event,
            table,
            item,
            Some(Expr::new("attribute_not_exists(pk)")),
        )
    }
}
