//! The per-container cache of crowded shards' subscriber lists, for the fan-out workers
//! ([`crate::live::fan_out`]): a burst of events on a crowded channel reads each of its shards
//! at most once every [`AUDIENCE_TTL`], not once per event.
//!
//! Safe because the read it replaces is eventually consistent by design: a subscriber a moment
//! old may miss a frame either way, and the next snapshot or frame catches it up. A shard of
//! fewer than [`CACHED_AUDIENCE_MIN`] subscribers is read every time: its read costs one read
//! unit, and a visitor who has just subscribed to a quiet channel then sees the very next frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bouquet_domain::Timestamp;
use bouquet_store::{Store, StoreError};

/// How long a container reuses a crowded shard's subscriber list.
pub const AUDIENCE_TTL: Duration = Duration::from_secs(1);

/// The smallest audience worth caching (a page of a `Query` is far larger).
pub const CACHED_AUDIENCE_MIN: usize = 100;

/// (channel key, shard) -> (its subscribers, when they were read).
type ReadAudiences = HashMap<(String, u32), (Arc<Vec<String>>, Timestamp)>;

#[derive(Clone, Default)]
pub struct ShardAudiences {
    read: Arc<Mutex<ReadAudiences>>,
}

impl ShardAudiences {
    /// The subscribers of `channel`'s `shard` at `now`: the list read less than
    /// [`AUDIENCE_TTL`] ago when the shard is crowded, the table's otherwise.
    pub async fn of(
        &self,
        store: &Store,
        channel: &str,
        shard: u32,
        now: Timestamp,
    ) -> Result<Arc<Vec<String>>, StoreError> {
        let key = (channel.to_owned(), shard);
        if let Some((audience, read_at)) = self.lock().get(&key) {
            if now < read_at.plus(AUDIENCE_TTL) && now >= *read_at {
                return Ok(audience.clone());
            }
        }
        let audience = Arc::new(store.shard_subscribers(channel, shard, now).await?);
        let mut read = self.lock();
        if audience.len() >= CACHED_AUDIENCE_MIN {
            read.insert(key, (audience.clone(), now));
        } else {
            read.remove(&key);
        }
        Ok(audience)
    }

    /// Drops `gone` connections from every cached list (API Gateway answered 410 for them).
    pub fn forget(&self, gone: &[String]) {
        if gone.is_empty() {
            return;
        }
        for (audience, _) in self.lock().values_mut() {
            if audience.iter().any(|c| gone.contains(c)) {
                *audience = Arc::new(
                    audience
                        .iter()
                        .filter(|c| !gone.contains(c))
                        .cloned()
                        .collect(),
                );
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReadAudiences> {
        self.read.lock().unwrap_or_else(|e| e.into_inner())
    }
}
