//! What a shop sets for its vases and what they tell it (issue 53): its vase rules (the
//! markdown rule and the care thresholds), its alerts, and their acknowledgement.

use bouquet_domain::care::{CareThresholds, VaseAlert};
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::history::Bucket;
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::markdown::MarkdownRule;
use bouquet_domain::{FieldError, Timestamp, VaseId, VendorId};
use bouquet_store::{Page, StoreError, VaseRules};
use serde::Deserialize;

use crate::idempotency::{self, Idempotency, Replayable};
use crate::problem::{ApiError, Refusal};
use crate::App;

/// The most buckets one read returns: 30 days of 15-minute buckets.
pub const MAX_BUCKETS: usize = 30 * 96;

#[derive(Debug, thiserror::Error)]
pub enum CareError {
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error("the caller may not do this")]
    Forbidden(#[from] NotAllowed),
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error("this change needs the version it was made to")]
    VersionRequired,
    #[error("it has changed since that version")]
    Changed,
    #[error("the alert was already acknowledged")]
    AlreadyAcknowledged,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CareError> for ApiError {
    fn from(error: CareError) -> Self {
        match error {
            CareError::NotFound(what) => ApiError::NotFound(what),
            CareError::Forbidden(_) => ApiError::forbidden(),
            CareError::Invalid(errors) => ApiError::Invalid(errors),
            CareError::VersionRequired => ApiError::PreconditionRequired,
            CareError::Changed => {
                ApiError::PreconditionFailed("it has changed since that version; fetch it again")
            }
            CareError::AlreadyAcknowledged => ApiError::Conflict(Refusal::new(
                "alert.already_acknowledged",
                "Already acknowledged",
                "a member of the shop already acknowledged this alert",
            )),
            CareError::Store(error) => error.into(),
        }
    }
}

/// The body of `PUT /v1/vendors/{vendorId}/vase-rules`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesChange {
    pub markdown: MarkdownRule,
    pub care: CareThresholds,
}

/// The shop's vase rules (the defaults at version 0 when it set none), for its members.
pub async fn rules(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
) -> Result<VaseRules, CareError> {
    caller.require_vendor(vendor_id)?;
    Ok(app
        .store
        .vase_rules(vendor_id, false)
        .await?
        .unwrap_or_default())
}

/// Its vendor saves `change` (validated here). Once saved, a change needs `if_match`.
pub async fn change_rules(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    change: RulesChange,
    if_match: Option<u64>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<VaseRules, CareError> {
    caller.require_vendor(vendor_id)?;
    let mut errors = Vec::new();
    let markdown = change.markdown.validate().map_err(|e| {
        errors.extend(e.into_iter().map(|f| f.prefixed("markdown")));
    });
    let care = change.care.validate().map_err(|e| {
        errors.extend(e.into_iter().map(|f| f.prefixed("care")));
    });
    let (Ok(markdown), Ok(care)) = (markdown, care) else {
        return Err(CareError::Invalid(errors));
    };
    let read_version = app
        .store
        .vase_rules(vendor_id, true)
        .await?
        .map_or(0, |r| r.version);
    match if_match {
        None if read_version > 0 => return Err(CareError::VersionRequired),
        Some(expected) if expected != read_version => return Err(CareError::Changed),
        _ => {}
    }
    let saved = VaseRules {
        markdown,
        care,
        version: read_version + 1,
    };
    let event = DomainEvent::new(
        vendor_id,
        saved.version,
        now,
        correlation_id,
        EventData::VaseRulesChanged {
            vendor_id,
            version: saved.version,
        },
    );
    match app
        .store
        .save_vase_rules(vendor_id, &saved, read_version, &event, now)
        .await
    {
        Ok(()) => Ok(saved),
        Err(StoreError::ConditionFailed(_)) => Err(CareError::Changed),
        Err(other) => Err(other.into()),
    }
}

/// A page of the shop's alerts, newest first, for its members.
pub async fn alerts(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<VaseAlert>, CareError> {
    caller.require_vendor(vendor_id)?;
    Ok(app.store.vendor_alerts(vendor_id, cursor, limit).await?)
}

/// A member of the shop acknowledges one of its alerts (`VaseAlertAcknowledged`), once. With
/// a key, a repeat of the same request is its first answer again, not a refusal.
pub async fn acknowledge(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    alert_id: &str,
    key: Option<Idempotency<'_, VaseAlert>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<VaseAlert>, CareError> {
    caller.require_vendor(vendor_id)?;
    if let Some(key) = &key {
        if let Some(record) = app.store.idempotency_record(key.key_hash, now).await? {
            return Ok(Replayable::Replayed(record));
        }
    }
    // A closing may move the alert's version between the read and the write: read again.
    let mut retry = bouquet_store::retry::Retry::attempts(3);
    loop {
        let alert = app
            .store
            .alert(alert_id)
            .await?
            .filter(|a| a.vendor_id == vendor_id)
            // Another shop's alert is not found: alert ids are not public.
            .ok_or(CareError::NotFound("alert"))?;
        let read_version = alert.version;
        let mut acknowledged = alert;
        if !acknowledged.acknowledge(&caller.subject.to_string(), now) {
            return Err(CareError::AlreadyAcknowledged);
        }
        let event = DomainEvent::new(
            &acknowledged.alert_id,
            acknowledged.version,
            now,
            correlation_id,
            EventData::VaseAlertAcknowledged {
                alert_id: acknowledged.alert_id.clone(),
                vase_id: acknowledged.vase_id,
                vendor_id,
                condition: acknowledged.condition,
                acknowledged_by: caller.subject.to_string(),
                acknowledged_at: now,
            },
        );
        let record = idempotency::record(key.as_ref(), &acknowledged);
        match app
            .store
            .acknowledge_alert(&acknowledged, read_version, &event, record.as_ref(), now)
            .await
        {
            Ok(()) => return Ok(Replayable::Done(acknowledged)),
            Err(StoreError::IdempotencyReplay(record)) => return Ok(Replayable::Replayed(*record)),
            Err(StoreError::ConditionFailed(_)) if retry.wait().await => {}
            Err(StoreError::ConditionFailed(_)) => return Err(CareError::Changed),
            Err(other) => return Err(other.into()),
        }
    }
}

/// A vase's finished 15-minute buckets since `since` (at most 30 days of them).
pub async fn buckets(
    app: &App,
    vase_id: VaseId,
    since: Timestamp,
) -> Result<Vec<Bucket>, StoreError> {
    app.store.buckets(vase_id, since, MAX_BUCKETS).await
}
