//! The DynamoDB adapter: one table (docs/architecture.md), conditional writes for every state
//! change, and the reservation as one `TransactWriteItems`.
//!
//! Conditions here restate the domain's rules for DynamoDB (for example "available, or held
//! by an expired reservation"), so that a lost race is refused by the database, not by a read
//! that happened before the write.

mod analytics;
mod backfill;
mod batch;
mod bouquets;
mod carts;
mod connections;
mod cursor;
mod error;
mod events;
mod idempotency;
mod import;
mod items;
mod keys;
mod limits;
mod orders;
mod photos;
mod processed;
mod query;
mod record;
mod reviews;
mod tx;
mod vases;
mod vendors;

use aws_sdk_dynamodb::Client;

pub use analytics::{CommissionDay, CounterDelta, DayCounters};
pub use backfill::BackfillPage;
pub use bouquet_aws::describe;
/// The one retry policy, re-exported for the store's callers.
pub use bouquet_retry as retry;
pub use bouquets::{CatalogueFilter, CatalogueSort};
pub use carts::CartRefusal;
pub use connections::{
    initial_shards, placement, Admitted, ChannelShards, ConnectionLimit, Digested, LiveConnection,
    Subscribed, CATALOGUE_SUBSCRIPTION_SHARDS, CONNECTION_RETENTION, DIGEST_FROM_SHARDS,
    MAX_CHANNELS_PER_CONNECTION, MAX_SUBSCRIPTION_SHARDS, SHARD_SUBSCRIBERS,
};
pub use cursor::Page;
pub use error::{BackendError, BackendKind, Conflict, StoreError, Target};
pub use idempotency::{IdempotencyPut, IdempotencyRecord};
pub use import::Imported;
/// A bouquet's place in the catalogue's rating order (the auditor checks each against its shop's rating).
pub use keys::rating_sort;
pub use keys::CATALOGUE_SHARDS;
pub use limits::Counter;
pub use orders::{BouquetEffect, DueCursor, OrderWrite, Reservation, ReservationRead};
pub use photos::PhotoShown;
pub use processed::{Processed, PROCESSED_RETENTION};
pub use tx::Tx;
pub use vases::{BouquetScore, ReadingWrite, HEARTBEAT_SHARDS, READING_RETENTION};
pub use vendors::{MemberClaim, VersionedSettings};

/// The marketplace table, and the table of live connections. Cheap to clone: the SDK client
/// is reference-counted.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: String,
    /// Live connections, subscriptions, channel shard counts and connection counters: churn,
    /// not domain state, kept off the marketplace table's stream (the outbox) so that a crowd
    /// connecting never delays an event. The marketplace table itself unless set.
    live_table: String,
}

impl Store {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        let table = table.into();
        Self {
            client,
            live_table: table.clone(),
            table,
        }
    }

    /// Keeps live connections in `live_table` (the template's `LiveTable`).
    pub fn with_live_table(mut self, live_table: impl Into<String>) -> Self {
        self.live_table = live_table.into();
        self
    }

    /// One item by key; `consistent` when a conditional write will follow the read.
    pub(crate) async fn get_item(
        &self,
        key: items::Item,
        consistent: bool,
    ) -> Result<Option<items::Item>, StoreError> {
        self.get_item_in(&self.table, key, consistent).await
    }

    pub(crate) async fn get_item_in(
        &self,
        table: &str,
        key: items::Item,
        consistent: bool,
    ) -> Result<Option<items::Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(table)
            .set_key(Some(key))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(output.item)
    }
}
