//! The answer stored under an idempotency key: a value of its own, so that errors (a replay is
//! one) can carry it without depending on how it is stored.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::Timestamp;

/// The response given to the first request with a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyRecord {
    /// Hash of the request (route, caller, body) that used the key first.
    pub fingerprint: String,
    pub status: u16,
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub created_at: i64,
    /// Epoch seconds (the TTL attribute).
    pub expires_at: i64,
}

/// The record as the table holds it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IdempotencyItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    #[serde(flatten)]
    pub record: IdempotencyRecord,
}

impl IdempotencyRecord {
    pub(crate) fn from_item(
        item: HashMap<String, AttributeValue>,
    ) -> Result<Self, serde_dynamo::Error> {
        serde_dynamo::from_item::<_, IdempotencyItem>(item).map(|i| i.record)
    }

    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires_at > now.as_epoch_seconds()
    }
}
