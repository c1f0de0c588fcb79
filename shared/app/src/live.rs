//! Live updates: subscribing a connection to channels, and broadcasting a bus event to the
//! subscribers of each channel it belongs to (`bouquet_domain::channels` decides both).
//!
//! The broadcast is planned, then pushed: [`broadcast`] turns each public channel of an event
//! into one unit of work per shard of its subscribers and queues them; workers ([`fan_out`])
//! read a shard each and push concurrently. Private channels are pushed by the planner
//! itself, on a path no crowd shares.
//!
//! One job per module: [`connections`] (connect, subscribe, unsubscribe, disconnect),
//! [`fan_out`] (the planner and its workers) and [`context`] (the authorizer's context); the
//! adapters they push through are [`crate::ports::LivePorts`], the per-container shard-count
//! cache [`crate::shard_counts`].

mod connections;
mod context;
mod fan_out;

pub use crate::ports::LivePorts;
#[cfg(feature = "fanout")]
pub use crate::ports::LivePortsError;
pub use crate::shard_counts::{ShardCounts, LEASE_RENEWAL, SHARD_COUNT_TTL};
pub use connections::{
    connect, disconnect, limit_for, subscribe, unsubscribe, Admitted, ConnectionLimit, LiveError,
    Subscription,
};
pub use context::{context_of, token_expiry_of, viewer_of};
pub use fan_out::{
    broadcast, fan_out, receive_work, Broadcast, BroadcastError, DigestFlush, FanOut, PushUnit,
    Pushes, ShardRef, UnitFrame, Work, CONCURRENT_PUSHES, DIGEST_WINDOW,
};
