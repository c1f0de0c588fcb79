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
mod care;
mod carts;
mod connections;
mod coverage;
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
mod store;
mod tx;
mod vases;
mod vendors;

pub use analytics::{CommissionDay, CounterDelta, DayCounters};
pub use backfill::BackfillPage;
pub use bouquet_aws::describe;
/// The one retry policy, re-exported for the store's callers.
pub use bouquet_retry as retry;
pub use bouquets::{CatalogueFilter, CatalogueSort, MAX_FILTER_SHOPS};
pub use care::{AlertWrites, VaseRules};
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
pub use store::Store;
pub use tx::Tx;
pub use vases::{BouquetScore, LatestReading, ReadingWrite, HEARTBEAT_SHARDS, READING_RETENTION};
pub use vendors::{MemberClaim, VersionedSettings};
