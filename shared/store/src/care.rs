//! What the vases act on (issue 53): a shop's vase rules (its markdown rule and care
//! thresholds), the care alerts its vases opened, and the 15-minute buckets of their history.
//!
//! - Vase rules: one item beside the shop's (`VENDOR#{id}`, `VASE_RULES`), versioned like the
//!   delivery settings.
//! - An alert: its own item (`ALERT#{alertId}`), in `VendorIndex` under `VENDOR#{id}#ALERT`
//!   sorted by when it opened, so a shop lists its alerts newest first without a scan. Its
//!   opening is written with the reading (or the sweep) that opened it, beside the vase's
//!   `alerts` list, and only if the item does not exist: one alert per opening. It expires 30
//!   days after it closed.
//! - A bucket: `VASE#{id}`, `BUCKET#{start}`, written once when the window is finished.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::care::{CareThresholds, Condition, VaseAlert, ALERT_RETENTION};
use bouquet_domain::events::DomainEvent;
use bouquet_domain::history::{Bucket, BUCKET_RETENTION};
use bouquet_domain::markdown::MarkdownRule;
use bouquet_domain::{Timestamp, VaseId, VendorId};

use crate::cursor::{self, Page};
use crate::error::{StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::{from_item, to_item, Item, ReadingFields};
use crate::keys;
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

const VASE_RULES_SK: &str = "VASE_RULES";
const ALERT_SK: &str = "ALERT";

/// A shop's vase rules: what it set, or the defaults at version 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VaseRules {
    pub markdown: MarkdownRule,
    pub care: CareThresholds,
    pub version: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VaseRulesItem {
    pk: String,
    sk: String,
    entity: String,
    vendor_id: String,
    #[serde(flatten)]
    rules: VaseRules,
    updated_at: i64,
}

fn vase_rules_key(vendor_id: VendorId) -> Item {
    keys::key(keys::vendor_pk(&vendor_id.to_string()), VASE_RULES_SK)
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlertItem {
    pk: String,
    sk: String,
    entity: String,
    alert_id: String,
    vase_id: String,
    vendor_id: String,
    condition: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reading: Option<ReadingFields>,
    opened_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    closed_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    acknowledged_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    acknowledged_by: Option<String>,
    version: u64,
    /// Set when it closes: 30 days on, DynamoDB's TTL deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    vendor_key: String,
    vendor_sort: String,
}

crate::items::stored!(AlertItem => VaseAlert);

fn alert_key(alert_id: &str) -> Item {
    keys::key(format!("ALERT#{alert_id}"), ALERT_SK)
}

fn vendor_alerts_key(vendor_id: VendorId) -> String {
    format!("VENDOR#{vendor_id}#ALERT")
}

/// Alerts sort by opening time, then id (unique).
fn alert_sort(opened_at: Timestamp, alert_id: &str) -> String {
    format!("{:015}#{alert_id}", opened_at.as_millis().max(0))
}

fn closed_expiry(closed_at: Timestamp) -> i64 {
    closed_at.plus(ALERT_RETENTION).as_epoch_seconds()
}

impl AlertItem {
    fn from_domain(a: &VaseAlert) -> Self {
        Self {
            pk: format!("ALERT#{}", a.alert_id),
            sk: ALERT_SK.into(),
            entity: "vaseAlert".into(),
            alert_id: a.alert_id.clone(),
            vase_id: a.vase_id.to_string(),
            vendor_id: a.vendor_id.to_string(),
            condition: a.condition.name().into(),
            reading: a.reading.as_ref().map(ReadingFields::from_domain),
            opened_at: a.opened_at.as_millis(),
            closed_at: a.closed_at.map(Timestamp::as_millis),
            acknowledged_at: a.acknowledged_at.map(Timestamp::as_millis),
            acknowledged_by: a.acknowledged_by.clone(),
            version: a.version,
            expires_at: a.closed_at.map(closed_expiry),
            vendor_key: vendor_alerts_key(a.vendor_id),
            vendor_sort: alert_sort(a.opened_at, &a.alert_id),
        }
    }

    fn into_domain(self) -> Result<VaseAlert, StoreError> {
        Ok(VaseAlert {
            vase_id: VaseId::parse(&self.vase_id).map_err(StoreError::corrupt)?,
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            condition: Condition::parse(&self.condition).ok_or_else(|| {
                StoreError::corrupt(format!("alert condition {:?}", self.condition))
            })?,
            reading: self.reading.map(ReadingFields::into_domain),
            opened_at: Timestamp::from_millis(self.opened_at),
            closed_at: self.closed_at.map(Timestamp::from_millis),
            acknowledged_at: self.acknowledged_at.map(Timestamp::from_millis),
            acknowledged_by: self.acknowledged_by,
            version: self.version,
            alert_id: self.alert_id,
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BucketItem {
    pk: String,
    sk: String,
    entity: String,
    #[serde(flatten)]
    bucket: Bucket,
    expires_at: i64,
}

fn bucket_sk(start: Timestamp) -> String {
    format!("BUCKET#{:015}", start.as_millis().max(0))
}

/// What a vase's reading or connection change does to its alerts, written with it.
#[derive(Clone, Debug, Default)]
pub struct AlertWrites {
    pub opened: Vec<VaseAlert>,
    /// Alert ids, when each closed, and the version each was read at.
    pub closed: Vec<(String, Timestamp, u64)>,
}

impl AlertWrites {
    /// Adds the writes to `tx`: each opening a new item (refused if it exists), each closing
    /// an update of an item still open.
    pub(crate) fn add_to(&self, tx: &mut Tx, table: &str) -> Result<(), StoreError> {
        for alert in &self.opened {
            tx.put_new(
                Target::Alert,
                table,
                to_item(&AlertItem::from_domain(alert))?,
            )?;
        }
        for (alert_id, closed_at, read_version) in &self.closed {
            tx.update(
                Target::Alert,
                table,
                alert_key(alert_id),
                Expr::new("SET closedAt = :closedAt, expiresAt = :expiresAt, version = :next")
                    .n(":closedAt", closed_at.as_millis())
                    .n(":expiresAt", closed_expiry(*closed_at))
                    .n(":next", read_version + 1),
                Expr::new("attribute_not_exists(closedAt)")
                    .append(" AND version = :readVersion")
                    .n(":readVersion", *read_version),
            )?;
        }
        Ok(())
    }
}

/// A finished bucket's put (a redelivery that finishes it again finds it written).
pub(crate) fn bucket_put(
    tx: &mut Tx,
    table: &str,
    vase_id: VaseId,
    bucket: &Bucket,
) -> Result<(), StoreError> {
    tx.put(
        Target::Reading,
        table,
        to_item(&BucketItem {
            pk: keys::vase_pk(&vase_id.to_string()),
            sk: bucket_sk(bucket.start),
            entity: "readingBucket".into(),
            bucket: *bucket,
            expires_at: bucket.start.plus(BUCKET_RETENTION).as_epoch_seconds(),
        })?,
        None,
    )
}

impl Store {
    /// The shop's vase rules as saved (`None`: never set).
    pub async fn vase_rules(
        &self,
        vendor_id: VendorId,
        consistent: bool,
    ) -> Result<Option<VaseRules>, StoreError> {
        let Some(item) = self.get_item(vase_rules_key(vendor_id), consistent).await? else {
            return Ok(None);
        };
        Ok(Some(from_item::<VaseRulesItem>(item)?.rules))
    }

    /// Saves the shop's vase rules at `saved.version` if the stored ones are still at
    /// `read_version` (0: none yet), with their event.
    pub async fn save_vase_rules(
        &self,
        vendor_id: VendorId,
        saved: &VaseRules,
        read_version: u64,
        event: &DomainEvent,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let item = to_item(&VaseRulesItem {
            pk: keys::vendor_pk(&vendor_id.to_string()),
            sk: VASE_RULES_SK.into(),
            entity: "vaseRules".into(),
            vendor_id: vendor_id.to_string(),
            rules: saved.clone(),
            updated_at: now.as_millis(),
        })?;
        let condition = Expr::at_version_or_new(read_version);
        self.put_with_event(Target::Vendor(vendor_id), item, condition, Some(event))
            .await
    }

    /// One alert.
    pub async fn alert(&self, alert_id: &str) -> Result<Option<VaseAlert>, StoreError> {
        self.get_stored::<AlertItem>(alert_key(alert_id), true)
            .await
    }

    /// A shop's alerts, newest first (open and closed; closed ones expire after 30 days).
    pub async fn vendor_alerts(
        &self,
        vendor_id: VendorId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<VaseAlert>, StoreError> {
        let after: Option<String> = cursor.map(cursor::decode).transpose()?;
        let mut query =
            IndexQuery::vendor_index(vendor_alerts_key(vendor_id), after.as_deref(), limit);
        query.newest_first = true;
        self.query_index(query, |sort| {
            let id = sort.split_once('#').map_or(sort, |(_, id)| id);
            alert_key(id)
        })
        .await?
        .into_page::<AlertItem>()
    }

    /// Writes `acknowledged` (read at `read_version`) with its event.
    pub async fn acknowledge_alert(
        &self,
        acknowledged: &VaseAlert,
        read_version: u64,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        tx.update(
            Target::Alert,
            &self.table,
            alert_key(&acknowledged.alert_id),
            Expr::new("SET acknowledgedAt = :at, acknowledgedBy = :by, version = :next")
                .n(
                    ":at",
                    acknowledged.acknowledged_at.map_or(0, Timestamp::as_millis),
                )
                .s(
                    ":by",
                    acknowledged.acknowledged_by.clone().unwrap_or_default(),
                )
                .n(":next", acknowledged.version),
            Expr::at_version(read_version),
        )?;
        tx.commit_with_event(self, Some(event)).await
    }

    /// A vase's finished buckets that started at or after `since`, oldest first.
    pub async fn buckets(
        &self,
        vase_id: VaseId,
        since: Timestamp,
        limit: usize,
    ) -> Result<Vec<Bucket>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(
                ":pk",
                AttributeValue::S(keys::vase_pk(&vase_id.to_string())),
            )
            .expression_attribute_values(":from", AttributeValue::S(bucket_sk(since)))
            .expression_attribute_values(":to", AttributeValue::S("BUCKET#~".into()))
            .limit(limit as i32)
            .send()
            .await
            .map_err(StoreError::backend)?;
        output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| from_item::<BucketItem>(item).map(|b| b.bucket))
            .collect()
    }
}
