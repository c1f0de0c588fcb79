//! Idempotency records. A record is written in the same transaction as the change it guards,
//! holding the response that was given, so a replay is answered from it and a key can never
//! be "used" without its effect being committed (or the reverse).

use std::time::Duration;

use bouquet_domain::Timestamp;

use crate::error::{StoreError, Target};
use crate::items::{to_item, Item};
use crate::keys;
use crate::tx::{Expr, Tx};

/// How long a key is remembered (docs/contract.md: 24 h). DynamoDB TTL deletes the item some time after;
/// until then the condition below treats an expired record as absent.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

const SK: &str = "IDEMPOTENCY";

use crate::record::IdempotencyItem;
pub use crate::record::IdempotencyRecord;

/// A record to write with a change: `key_hash` identifies (caller, route, key).
#[derive(Clone, Debug)]
pub struct IdempotencyPut {
    pub key_hash: String,
    pub record: IdempotencyRecord,
}

impl IdempotencyPut {
    pub fn new(
        key_hash: String,
        fingerprint: String,
        status: u16,
        body: String,
        location: Option<String>,
        now: Timestamp,
    ) -> Self {
        let record = IdempotencyRecord {
            fingerprint,
            status,
            body,
            location,
            created_at: now.as_millis(),
            expires_at: now.plus(RETENTION).as_epoch_seconds(),
        };
        Self { key_hash, record }
    }
}

pub(crate) fn key(key_hash: &str) -> Item {
    keys::key(format!("IDEMPOTENCY#{key_hash}"), SK)
}

impl Tx {
    /// A transaction that starts with the request's idempotency record, if any
    /// ([`Self::idempotency`]).
    pub(crate) fn with_idempotency(
        table: &str,
        put: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<Self, StoreError> {
        let mut tx = Self::new();
        tx.idempotency(table, put, now)?;
        Ok(tx)
    }

    /// Adds the record as the transaction's first item: put only if the key is unused (or
    /// its record has expired). A failure here is reported as a replay, before anything else.
    pub(crate) fn idempotency(
        &mut self,
        table: &str,
        put: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let Some(put) = put else { return Ok(()) };
        let item = to_item(&IdempotencyItem {
            pk: format!("IDEMPOTENCY#{}", put.key_hash),
            sk: SK.into(),
            entity: "idempotency".into(),
            record: put.record.clone(),
        })?;
        let unused = Expr::new("attribute_not_exists(pk) OR expiresAt < :nowSeconds")
            .n(":nowSeconds", now.as_epoch_seconds());
        self.put(Target::Idempotency, table, item, Some(unused))
    }
}

impl crate::store::Store {
    /// The live record under `key_hash`, for routes that must know of a replay before doing
    /// work outside DynamoDB (vase registration creates IoT resources).
    pub async fn idempotency_record(
        &self,
        key_hash: &str,
        now: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        record_from(self.get_item(key(key_hash), true).await?, now)
    }
}

pub(crate) fn record_from(
    item: Option<Item>,
    now: Timestamp,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    match item {
        Some(item) => Ok(
            Some(IdempotencyRecord::from_item(item).map_err(StoreError::corrupt)?)
                .filter(|r| r.is_live(now)),
        ),
        None => Ok(None),
    }
}
