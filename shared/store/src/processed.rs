//! Exactly-once effects for at-least-once consumers. EventBridge may deliver an event more
//! than once; a consumer puts `PROCESSED#{consumer}#{eventId}` (only if absent) in the same
//! transaction as its own writes, so a redelivery commits nothing and is reported as such.
//!
//! A consumer's store method builds its writes in a [`Tx`] and hands it to
//! [`Store::commit_once`]; the dedupe record and the outcome mapping are done here, once.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;

use bouquet_domain::Timestamp;

use crate::error::{StoreError, Target};
use crate::store::Store;
use crate::tx::Tx;

/// Dedupe records outlive any redelivery (EventBridge retries for up to 24 h).
pub const PROCESSED_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Whether a consumer's transaction took effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Processed {
    Applied,
    /// This consumer had processed the event before: nothing was written.
    Duplicate,
}

fn processed_key(consumer: &str, event_id: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            "pk".to_owned(),
            AttributeValue::S(format!("PROCESSED#{consumer}#{event_id}")),
        ),
        ("sk".to_owned(), AttributeValue::S("PROCESSED".into())),
    ])
}

impl Store {
    /// Whether `consumer` recorded `event_id` as processed (a consistent read): for effects
    /// outside the table (an email), checked before and recorded after.
    pub async fn was_processed(&self, consumer: &str, event_id: &str) -> Result<bool, StoreError> {
        Ok(self
            .get_item(processed_key(consumer, event_id), true)
            .await?
            .is_some())
    }

    /// Commits `tx` together with the dedupe record of (`consumer`, `event_id`).
    pub async fn commit_once(
        &self,
        consumer: &str,
        event_id: &str,
        mut tx: Tx,
        now: Timestamp,
    ) -> Result<Processed, StoreError> {
        let mut record = processed_key(consumer, event_id);
        record.extend([
            ("entity".to_owned(), AttributeValue::S("processed".into())),
            (
                "expiresAt".to_owned(),
                AttributeValue::N(now.plus(PROCESSED_RETENTION).as_epoch_seconds().to_string()),
            ),
        ]);
        tx.put_new(Target::Processed, &self.table, record)?;
        match tx.commit(self).await {
            Ok(()) => Ok(Processed::Applied),
            // Its dedupe record exists: the event was applied before, whatever else moved
            // since (another event's write to the same item fails its condition too).
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts.iter().any(|c| c.target == Target::Processed) =>
            {
                Ok(Processed::Duplicate)
            }
            Err(other) => Err(other),
        }
    }
}
