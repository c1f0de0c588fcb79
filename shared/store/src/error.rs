use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

use bouquet_domain::{BouquetId, OrderId, VaseId, VendorId};

use crate::record::IdempotencyRecord;

/// The item of a transaction that a cancellation reason refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Idempotency,
    Vendor(VendorId),
    Bouquet(BouquetId),
    Vase(VaseId),
    Order(OrderId),
    Cart,
    /// The count of a customer's orders that hold bouquets (the reservation cap).
    Holds,
    /// A vase reading (its key is the vase and the time it was sent).
    Reading,
    /// A consumer's dedupe record.
    Processed,
    /// A vendor's photo upload.
    PhotoUpload,
    Event,
    /// A live-update (WebSocket) connection.
    Connection,
    /// The count of live connections one source IP or user holds.
    ConnectionLimit,
    /// A shop's invoice sequence (its last number).
    InvoiceSequence,
    /// An order's review.
    Review,
    /// A vase's care alert.
    Alert,
    /// A shop's delivery coverage of a place (`coverage`).
    Coverage,
    /// An abuse limit's counter ([`crate::limits`]).
    Limit(bouquet_domain::limits::Counted),
}

/// One item whose condition failed, with the item as it was (when it existed). Its typed
/// reading lives with the entity (e.g. `Conflict::bouquet` in `bouquets`).
#[derive(Clone, Debug)]
pub struct Conflict {
    pub target: Target,
    pub item: Option<HashMap<String, AttributeValue>>,
}

impl Conflict {
    pub(crate) fn new(target: Target, item: Option<HashMap<String, AttributeValue>>) -> Self {
        Self { target, item }
    }
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
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// What kind of failure DynamoDB (or the way to it) reported: callers retry the transient
/// kinds, and a log line says which it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// Throughput or request-rate limits: retry with backoff.
    Throttled,
    /// The request was malformed for DynamoDB: a bug, never retried.
    Validation,
    /// Another transaction held the items (outside of a cancellation).
    TransactionConflict,
    /// No answer (timeout, connection) or a server error: retry.
    Unavailable,
    Other,
}

impl BackendKind {
    /// From DynamoDB's error code (or a cancellation reason's code).
    pub fn from_code(code: Option<&str>) -> Self {
        match code.unwrap_or_default() {
            "ThrottlingException"
            | "ThrottlingError"
            | "ProvisionedThroughputExceededException"
            | "ProvisionedThroughputExceeded"
            | "RequestLimitExceeded" => BackendKind::Throttled,
            "ValidationException" | "ValidationError" => BackendKind::Validation,
            "TransactionConflictException" => BackendKind::TransactionConflict,
            "InternalServerError" | "ServiceUnavailable" => BackendKind::Unavailable,
            _ => BackendKind::Other,
        }
    }

    pub fn is_transient(self) -> bool {
        matches!(
            self,
            BackendKind::Throttled | BackendKind::TransactionConflict | BackendKind::Unavailable
        )
    }
}

/// A DynamoDB call that failed, with its kind and the SDK's own error as the source.
#[derive(Debug, thiserror::Error)]
#[error("DynamoDB ({kind:?})")]
pub struct BackendError {
    pub kind: BackendKind,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// A transaction cancelled for a reason other than a condition or a conflict.
#[derive(Debug, thiserror::Error)]
#[error("transaction cancelled on {target}: {code} {message}")]
pub struct Cancelled {
    pub target: String,
    pub code: String,
    pub message: String,
}

/// Whether a single conditional write took effect: `Ok(false)` when its condition failed
/// (another writer got there first, or there was nothing to do), the error otherwise.
pub(crate) fn applied<O, E, R>(result: Result<O, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(service))
            if service.err().code() == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(error) => Err(StoreError::backend(error)),
    }
}

impl StoreError {
    /// A failed SDK call, classified by what went wrong.
    pub(crate) fn backend<E, R>(error: SdkError<E, R>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        let kind = match &error {
            SdkError::ServiceError(service) => BackendKind::from_code(service.err().code()),
            SdkError::TimeoutError(_)
            | SdkError::DispatchFailure(_)
            | SdkError::ResponseError(_) => BackendKind::Unavailable,
            _ => BackendKind::Other,
        };
        Self::with_kind(kind, error)
    }

    /// A modelled service error (after `into_service_error`), classified by its code.
    pub(crate) fn service<E>(error: E) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        Self::with_kind(BackendKind::from_code(error.code()), error)
    }

    /// A request the SDK refused to build (a required field missing): a bug here.
    pub(crate) fn request(error: aws_sdk_dynamodb::error::BuildError) -> Self {
        Self::with_kind(BackendKind::Validation, error)
    }

    pub(crate) fn with_kind(
        kind: BackendKind,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Backend(BackendError {
            kind,
            source: Box::new(error),
        })
    }

    pub(crate) fn corrupt(error: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(error.to_string())
    }
}
