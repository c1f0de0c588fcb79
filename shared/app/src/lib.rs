//! The application layer: every use case the functions run, and the composition root
//! ([`App`]) that builds the clients once per container.
//!
//! Function crates parse their trigger, call one use case here and map the result; the
//! HTTP pipeline (`bouquet-http`) sits above this crate, event-driven functions use it
//! directly. Below it: the pure domain, the DynamoDB store and the adapters.

// Rooms by the business they serve; each keeps its use cases, and its modules are named at
// the root too, as every caller knows them (`bouquet_app::checkout`).
pub mod catalogue;
pub mod money;
pub mod sales;
pub mod shop;
pub mod vase;

pub use catalogue::{bouquets, listing, photos};
pub use money::{analytics, earnings};
pub use sales::{
    cart, checkout, delivery, expiry, invoice, notifications, orders, payment, proof_of_delivery,
    queries, reservation,
};
pub use shop::{members, payouts, shops};
pub use vase::care;
#[cfg(feature = "iot")]
pub use vase::vase_saga;
pub use vase::vases;

// Across the rooms.
pub mod erasure;
pub mod idempotency;
pub mod live;
pub mod maintenance;
pub mod ports;
pub mod problem;
pub mod reviews;
mod root;
mod runner;
pub mod scheduled;
pub mod shard_audiences;
pub mod shard_counts;

#[doc(hidden)]
pub use bouquet_runtime::__runner;
pub use idempotency::{Idempotency, Replayable};
pub use root::{
    aws_sdk_config, App, CatalogueIndexes, Config, ConfigError, DEFAULT_COMMISSION_BASIS_POINTS,
};

/// The span an EventBridge consumer handles `bus_event` in: every line it logs then carries
/// the event's correlation id (the request that caused it), its id and type.
pub fn event_span(bus_event: &serde_json::Value) -> tracing::Span {
    let detail = &bus_event["detail"];
    tracing::info_span!(
        "event",
        correlation_id = detail["correlationId"].as_str().unwrap_or_default(),
        event_id = detail["eventId"].as_str().unwrap_or_default(),
        detail_type = bus_event["detail-type"].as_str().unwrap_or_default(),
    )
}

/// Re-exported so function crates need no direct dependency on these.
pub use bouquet_aws as aws;
pub use bouquet_directory as directory;
pub use bouquet_domain as domain;
#[cfg(feature = "iot")]
pub use bouquet_iot as iot;
pub use bouquet_mail as mail;
pub use bouquet_metrics as metrics;
pub use bouquet_payments as payments;
pub use bouquet_photos as photo_storage;
pub use bouquet_realtime as realtime;
pub use bouquet_store as store;
pub use bouquet_store::retry;
pub use tracing;
