//! The per-container cache of live channels' subscription shard counts, and the shard leases
//! this container wrote: what `App` keeps between invocations for [`crate::live::subscribe`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bouquet_domain::channels::Channel;
use bouquet_domain::Timestamp;
use bouquet_store::StoreError;

/// Channels' subscription shard counts, cached per container for [`SHARD_COUNT_TTL`]: every
/// storefront visitor subscribes to `catalogue`, and one read of its count per visitor would
/// make that item the hottest key of the table. A stale count is safe for placing a
/// subscriber (counts only grow); the broadcaster never uses the cache. Also the shard
/// leases this container wrote, so that a crowd joining one shard renews its lease once
/// every [`LEASE_RENEWAL`], not once per visitor.
#[derive(Clone, Default)]
pub struct ShardCounts {
    counts: Arc<Mutex<HashMap<String, (u32, Timestamp)>>>,
    leases: Arc<Mutex<HashMap<(String, u32), Timestamp>>>,
}

/// How long a container trusts a shard count it read.
pub const SHARD_COUNT_TTL: Duration = Duration::from_secs(30);

/// A shard's lease is renewed when less than a connection's life (2 h) plus this is left:
/// a subscriber placed now is covered for as long as its connection can live.
pub const LEASE_RENEWAL: Duration = Duration::from_secs(10 * 60);

impl ShardCounts {
    /// Leases the shards `connection_id`'s subscriptions to the public `channels` go to, for
    /// a subscription's retention, unless this container's lease on a shard still covers a
    /// connection opened now. Before the subscription is written: a lease without its
    /// subscription costs work, a subscription without a lease would lose frames.
    pub(crate) async fn occupy(
        &self,
        store: &bouquet_store::Store,
        connection_id: &str,
        channels: &[Channel],
        counts: &HashMap<String, u32>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let covered = now.plus(bouquet_store::CONNECTION_RETENTION - LEASE_RENEWAL);
        let until = now.plus(bouquet_store::CONNECTION_RETENTION);
        for channel in channels.iter().filter(|c| c.is_public()) {
            let key = channel.key();
            let count = counts
                .get(&key)
                .copied()
                .unwrap_or_else(|| bouquet_store::initial_shards(&key));
            let shard = bouquet_store::placement(connection_id, count);
            let lease = (key, shard);
            let known = self
                .leases
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&lease)
                .copied();
            if known.is_some_and(|known| known >= covered) {
                continue;
            }
            store.occupy_shard(&lease.0, shard, until).await?;
            self.leases
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(lease, until);
        }
        Ok(())
    }

    pub(crate) async fn of(
        &self,
        store: &bouquet_store::Store,
        keys: &[String],
        now: Timestamp,
    ) -> Result<HashMap<String, u32>, StoreError> {
        let mut known = HashMap::new();
        let mut missing = Vec::new();
        {
            let cache = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            for key in keys {
                match cache.get(key) {
                    Some((count, until)) if *until > now => {
                        known.insert(key.clone(), *count);
                    }
                    _ => missing.push(key.clone()),
                }
            }
        }
        if !missing.is_empty() {
            let read = store.subscription_shards(&missing).await?;
            let mut cache = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            for (key, count) in read {
                cache.insert(key.clone(), (count, now.plus(SHARD_COUNT_TTL)));
                known.insert(key, count);
            }
        }
        Ok(known)
    }
}
