use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

use bouquet_domain::{BouquetId, OrderId, VaseId, VendorId};

use crate::idempotency::IdempotencyRecord;

/// The item of a transaction that a cancellation reason refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Idempotency,
    Vendor(VendorId),
    Bouquet(BouquetId),
    Vase(VaseId),
    Order(OrderId),
    Cart,
    /// A vase reading (its key is the vase and the time it was sent).
    Reading,
    /// A consumer's dedupe record.
    Processed,
    Event,
}

/// One item whose condition failed, with the item as it was (when it existed).
#[derive(Clone, Debug)]
pub struct Conflict {
    pub target: Target,
    pub current: Option<HashMap<String, AttributeValue>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The idempotency key was used before: here is what was answered then.
    #[error("the idempotency key was already used")]
    IdempotencyReplay(Box<IdempotencyRecord>),
    /// Another request with the same idempotency key is being written right now.
    #[error("a request with this idempotency key is in progress")]
    IdempotencyInProgress,
    /// Conditions failed on these items; the caller decides what that means.
    #[error("conditions failed on {} item(s)", .0.len())]
    ConditionFailed(Vec<Conflict>),
    /// Other transactions kept touching the same items, even after retries.
    #[error("the items are busy; try again")]
    Contention(Vec<Target>),
    #[error("the pagination cursor is not valid here")]
    InvalidCursor,
    #[error("an item could not be read: {0}")]
    Corrupt(String),
    #[error("DynamoDB: {0}")]
    Backend(String),
}

impl StoreError {
    pub(crate) fn backend(error: impl std::error::Error) -> Self {
        StoreError::Backend(describe(&error))
    }

    pub(crate) fn corrupt(error: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(error.to_string())
    }
}

/// An error with its whole source chain: the SDK's own message is terse, the causes say what
/// happened.
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
