//! Abuse limits' counters ([`bouquet_domain::limits`]): one item per subject and window,
//! `LIMIT#{counted}#{subject}#{windowStart}`, expiring (TTL) a day after its window. A counted
//! action adds to it in its own transaction, conditioned on room (so concurrent actions
//! cannot pass the limit together), or unconditionally where the action has happened already
//! (a decline) and only the next attempt is refused.

use std::collections::HashMap;

use bouquet_domain::limits::RateLimit;
use bouquet_domain::Timestamp;

use crate::error::{StoreError, Target};
use crate::items::Item;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// How long a counter outlives its window (the TTL deletes it later, at leisure).
const RETENTION_MS: i64 = 86_400_000;

/// One limit as it applies to one subject (an order id, a customer id).
#[derive(Clone, Copy, Debug)]
pub struct Counter<'a> {
    pub limit: RateLimit,
    pub subject: &'a str,
}

impl Counter<'_> {
    fn pk(&self, now: Timestamp) -> String {
        let window = self.limit.window(now);
        format!(
            "LIMIT#{}#{}#{}",
            self.limit.counted.name(),
            self.subject,
            window.start.as_millis()
        )
    }

    fn key(&self, now: Timestamp) -> Item {
        crate::keys::key(self.pk(now), "LIMIT")
    }

    fn add(&self, now: Timestamp) -> Expr {
        let expires = (self.limit.window(now).end.as_millis() + RETENTION_MS) / 1000;
        Expr::new("ADD #count :one SET entity = :entity, expiresAt = :expiresAt")
            .name("#count", "count")
            .n(":one", 1)
            .s(":entity", "limit")
            .n(":expiresAt", expires)
    }
}

impl Tx {
    /// Counts one action against `counter` with the transaction, which fails on
    /// [`Target::Limit`] when the window is full.
    pub fn count_within(
        &mut self,
        table: &str,
        counter: Counter<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let condition = Expr::new("attribute_not_exists(#count) OR #count < :max")
            .name("#count", "count")
            .n(":max", counter.limit.max);
        self.update(
            Target::Limit(counter.limit.counted),
            table,
            counter.key(now),
            counter.add(now),
            condition,
        )
    }
}

/// The keys of `counters` in `now`'s window, for the caller's consistent `BatchGetItem`.
pub(crate) fn keys(counters: &[Counter<'_>], now: Timestamp) -> Vec<Item> {
    counters.iter().map(|c| c.key(now)).collect()
}

/// What `counter` holds in `now`'s window among the items `found` (by partition key); 0 for
/// none.
pub(crate) fn count_in(
    found: &HashMap<String, Item>,
    counter: &Counter<'_>,
    now: Timestamp,
) -> u32 {
    found
        .get(&counter.pk(now))
        .and_then(|item| item.get("count"))
        .and_then(|count| count.as_n().ok())
        .and_then(|count| count.parse().ok())
        .unwrap_or(0)
}

impl Store {
    /// Counts one action that has happened against each of `counters` (no condition: the
    /// next attempt is the one refused). One `TransactWriteItems`.
    pub async fn count(&self, counters: &[Counter<'_>], now: Timestamp) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        for counter in counters {
            tx.upsert(
                Target::Limit(counter.limit.counted),
                &self.table,
                counter.key(now),
                counter.add(now),
            )?;
        }
        tx.commit(self).await
    }
}
