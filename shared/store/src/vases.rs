//! Smart vases and their readings.
//!
//! The vase item is the vase's state (connection, last heartbeat, latest reading, the bouquet
//! standing in it and that bouquet's last score). Every write is conditioned on what was read,
//! so a duplicate, an out-of-order message or a racing sweep is refused by DynamoDB:
//! - a heartbeat of an online vase: `lastHeartbeatAt < :sentAt` (one `UpdateItem`);
//! - a connection change: the vase's `version` (the sweeper also re-checks `lastHeartbeatAt`);
//! - a new latest reading: `latestSentAt` as read (compare and set), in one transaction with
//!   the reading, the bouquet's score and the `BouquetFreshnessChanged` event.
//!
//! Online vases carry `heartbeatShard` and so appear in the sparse `VaseHeartbeatIndex`
//! (sorted by `lastHeartbeatAt`): the offline sweep queries it, no Scan.

use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::care::OpenAlert;
use bouquet_domain::events::DomainEvent;
use bouquet_domain::history::{Bucket, RAW_RETENTION};
use bouquet_domain::vase::{Connection, Reading, Vase, VaseBouquet};
use bouquet_domain::{Bouquet, BouquetId, Timestamp, VaseId, VendorId};

use crate::care::{bucket_put, AlertWrites};
use crate::cursor::{self, Page};
use crate::error::{Conflict, StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::{from_item, to_item, Item, ReadingFields};
use crate::keys;
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// Raw readings are deleted by TTL 48 hours after they were sent; 15-minute buckets keep
/// 30 days (`bouquet_domain::history`).
pub const READING_RETENTION: Duration = RAW_RETENTION;

/// Online vases are spread over this many heartbeat-index partitions: every heartbeat of
/// every vase rewrites its index entry (a fleet of 50,000 vases beating each minute is
/// about 830 writes/s), so four shards keep each partition well under its 1,000 writes/s.
pub const HEARTBEAT_SHARDS: u32 = 4;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VaseItem {
    pk: String,
    sk: String,
    entity: String,
    vase_id: String,
    vendor_id: String,
    connection: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_heartbeat_at: Option<i64>,
    /// Present while online: the vase is then in the heartbeat index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    heartbeat_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latest: Option<ReadingFields>,
    /// `latest.sentAt`, flat so conditions can compare it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latest_sent_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bouquet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bouquet_listed_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    freshness: Option<u8>,
    registered_at: i64,
    version: u64,
    vendor_key: String,
    vendor_sort: String,
    /// Its open care alerts (absent: none).
    #[serde(default, rename = "openAlerts", skip_serializing_if = "Vec::is_empty")]
    alerts: Vec<OpenAlert>,
    /// The history bucket its latest readings fold into.
    #[serde(
        default,
        rename = "historyBucket",
        skip_serializing_if = "Option::is_none"
    )]
    bucket: Option<Bucket>,
}

/// A bouquet's new score, written with the vase's latest reading.
#[derive(Clone, Debug)]
pub struct BouquetScore {
    pub bouquet_id: BouquetId,
    pub score: u8,
    /// For a score that is news: the bouquet's version as read, which the write moves on.
    pub read_version: Option<u64>,
    /// The bouquet as the score leaves it when it also moved its price or took it off the
    /// storefront: written whole (at `read_version`), not only its score.
    pub repriced: Option<Bouquet>,
}

/// Everything a vase's new latest reading writes, in one transaction.
pub struct LatestReading<'a> {
    pub read: &'a Vase,
    pub changed: &'a Vase,
    pub received_at: Timestamp,
    pub bouquet_score: Option<BouquetScore>,
    pub events: Vec<DomainEvent>,
    pub alerts: AlertWrites,
    pub finished: Option<Bucket>,
}

crate::items::stored!(VaseItem => Vase);

impl VaseItem {
    fn from_domain(v: &Vase) -> Self {
        let id = v.vase_id.to_string();
        Self {
            pk: keys::vase_pk(&id),
            sk: keys::VASE_SK.into(),
            entity: "vase".into(),
            vendor_id: v.vendor_id.to_string(),
            connection: v.connection.name().into(),
            last_heartbeat_at: v.last_heartbeat_at.map(Timestamp::as_millis),
            heartbeat_shard: (v.connection == Connection::Online).then(|| heartbeat_shard(&id)),
            latest: v.latest.as_ref().map(ReadingFields::from_domain),
            latest_sent_at: v.latest.map(|r| r.sent_at.as_millis()),
            bouquet_id: v.bouquet.map(|b| b.bouquet_id.to_string()),
            bouquet_listed_at: v.bouquet.map(|b| b.listed_at.as_millis()),
            freshness: v.bouquet.and_then(|b| b.freshness),
            registered_at: v.registered_at.as_millis(),
            version: v.version,
            vendor_key: vendor_vases_key(v.vendor_id),
            vendor_sort: id.clone(),
            vase_id: id,
            alerts: v.alerts.clone(),
            bucket: v.bucket,
        }
    }

    fn into_domain(self) -> Result<Vase, StoreError> {
        let bouquet = match (self.bouquet_id, self.bouquet_listed_at) {
            (Some(id), Some(listed_at)) => Some(VaseBouquet {
                bouquet_id: BouquetId::parse(&id).map_err(StoreError::corrupt)?,
                listed_at: Timestamp::from_millis(listed_at),
                freshness: self.freshness,
            }),
            _ => None,
        };
        Ok(Vase {
            vase_id: VaseId::parse(&self.vase_id).map_err(StoreError::corrupt)?,
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            connection: Connection::parse(&self.connection).ok_or_else(|| {
                StoreError::corrupt(format!("vase connection {:?}", self.connection))
            })?,
            last_heartbeat_at: self.last_heartbeat_at.map(Timestamp::from_millis),
            latest: self.latest.map(ReadingFields::into_domain),
            bouquet,
            registered_at: Timestamp::from_millis(self.registered_at),
            version: self.version,
            alerts: self.alerts,
            bucket: self.bucket,
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadingItem {
    pk: String,
    sk: String,
    entity: String,
    #[serde(flatten)]
    reading: ReadingFields,
    received_at: i64,
    expires_at: i64,
}

fn vendor_vases_key(vendor_id: VendorId) -> String {
    format!("VENDOR#{vendor_id}#VASE")
}

fn heartbeat_shard(vase_id: &str) -> String {
    heartbeat_shard_key(keys::shard_of(vase_id, HEARTBEAT_SHARDS))
}

fn heartbeat_shard_key(shard: u32) -> String {
    format!("HEARTBEAT#{shard}")
}

/// Readings sort by the time they were sent (15 digits of epoch ms: until the year 33658).
fn reading_sk(sent_at: Timestamp) -> String {
    format!("READING#{:015}", sent_at.as_millis().max(0))
}

/// How a reading was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadingWrite {
    Stored,
    /// The reading was already stored: a redelivery.
    Duplicate,
}

impl Store {
    /// Registers a vase of an existing vendor with its `VaseRegistered` event.
    pub async fn create_vase(
        &self,
        vase: &Vase,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        tx.check(
            Target::Vendor(vase.vendor_id),
            &self.table,
            keys::vendor_key(vase.vendor_id),
            Expr::new("attribute_exists(pk)"),
        )?;
        self.create_with_event(
            tx,
            Target::Vase(vase.vase_id),
            to_item(&VaseItem::from_domain(vase))?,
            event,
        )
        .await
    }

    /// Records a certificate rotation: the vase moves to `next.version` with its event, if
    /// it is still at `read.version`.
    pub async fn rotate_vase_certificate(
        &self,
        read: &Vase,
        next: &Vase,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        tx.update(
            Target::Vase(read.vase_id),
            &self.table,
            keys::vase_key(read.vase_id),
            Expr::new("SET version = :next").n(":next", next.version),
            Expr::new("version = :read").n(":read", read.version),
        )?;
        tx.commit_with_event(self, Some(event)).await
    }

    /// Deletes a vase with its `VaseDecommissioned` event, if it is still at `read.version`
    /// and still holds the bouquet it was read with (none, or that one), and that bouquet is
    /// off sale (`Vase::decommission`: sold or withdrawn, or its item gone). Of a bouquet
    /// listed in the vase since the read, or one back on sale, the transaction fails on
    /// `Target::Vase` or `Target::Bouquet`.
    pub async fn decommission_vase(
        &self,
        read: &Vase,
        event: &DomainEvent,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        let held = match read.bouquet {
            Some(held) => {
                tx.check(
                    Target::Bouquet(held.bouquet_id),
                    &self.table,
                    crate::bouquets::bouquet_key(&held.bouquet_id.to_string()),
                    Expr::new("attribute_not_exists(pk) OR #status IN (:sold, :withdrawn)")
                        .name("#status", "status")
                        .s(":sold", "sold")
                        .s(":withdrawn", "withdrawn"),
                )?;
                Expr::new("bouquetId = :heldBouquet").s(":heldBouquet", held.bouquet_id.to_string())
            }
            None => Expr::new("attribute_not_exists(bouquetId)"),
        };
        tx.delete(
            Target::Vase(read.vase_id),
            &self.table,
            keys::vase_key(read.vase_id),
            Expr {
                text: format!("version = :read AND {}", held.text),
                ..held
            }
            .n(":read", read.version),
        )?;
        tx.commit_with_event(self, Some(event)).await
    }

    /// Takes `bouquet_id` out of `vase_id` if the vase still holds it (one conditional
    /// `UpdateItem`: nothing else changes with it). `false` when it did not: the vase holds
    /// another bouquet, none, or is gone.
    pub async fn vacate_vase(
        &self,
        vase_id: VaseId,
        bouquet_id: BouquetId,
    ) -> Result<bool, StoreError> {
        let (update, condition) = crate::bouquets::vacate(bouquet_id);
        let mut values = update.values;
        values.extend(condition.values);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(keys::vase_key(vase_id)))
            .update_expression(update.text)
            .condition_expression(condition.text)
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        crate::error::applied(result)
    }

    pub async fn vase(
        &self,
        vase_id: VaseId,
        consistent: bool,
    ) -> Result<Option<Vase>, StoreError> {
        self.get_stored::<VaseItem>(keys::vase_key(vase_id), consistent)
            .await
    }

    /// A vendor's vases, by id (registration order).
    pub async fn vendor_vases(
        &self,
        vendor_id: VendorId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Vase>, StoreError> {
        let after = crate::bouquets::decode_id_cursor(cursor)?;
        self.query_index(
            IndexQuery::vendor_index(vendor_vases_key(vendor_id), after.as_deref(), limit),
            |id| keys::key(keys::vase_pk(id), keys::VASE_SK),
        )
        .await?
        .into_page::<VaseItem>()
    }

    /// A vase's readings sent at or after `since`, oldest first.
    pub async fn readings(
        &self,
        vase_id: VaseId,
        since: Timestamp,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Reading>, StoreError> {
        let after: Option<String> = cursor.map(cursor::decode).transpose()?;
        if after.as_deref().is_some_and(|a| !a.starts_with("READING#")) {
            return Err(StoreError::InvalidCursor);
        }
        let pk = keys::vase_pk(&vase_id.to_string());
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
            .expression_attribute_values(":from", AttributeValue::S(reading_sk(since)))
            .expression_attribute_values(":to", AttributeValue::S("READING#~".into()))
            .limit(limit as i32);
        if let Some(after) = &after {
            query = query.set_exclusive_start_key(Some(keys::key(pk, after)));
        }
        let output = query.send().await.map_err(StoreError::backend)?;
        let items = output.items.unwrap_or_default();
        let more = output.last_evaluated_key.is_some() && items.len() == limit;
        let readings = items
            .into_iter()
            .map(|item| from_item::<ReadingItem>(item).map(|r| r.reading.into_domain()))
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = more
            .then(|| {
                readings
                    .last()
                    .map(|r| cursor::encode(&reading_sk(r.sent_at)))
            })
            .flatten();
        Ok(Page {
            items: readings,
            next_cursor,
        })
    }

    /// Moves an online vase's `lastHeartbeatAt` forward (no event: nothing but time changed).
    /// `ConditionFailed` when the vase is no longer online or already has a newer heartbeat.
    pub async fn touch_heartbeat(
        &self,
        vase_id: VaseId,
        sent_at: Timestamp,
    ) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(keys::vase_key(vase_id)))
            .update_expression("SET lastHeartbeatAt = :sentAt")
            .condition_expression("#connection = :online AND lastHeartbeatAt < :sentAt")
            .expression_attribute_names("#connection", "connection")
            .expression_attribute_values(":online", AttributeValue::S("online".into()))
            .expression_attribute_values(
                ":sentAt",
                AttributeValue::N(sent_at.as_millis().to_string()),
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Err(
                    StoreError::ConditionFailed(vec![Conflict::new(Target::Vase(vase_id), None)]),
                ),
                other => Err(StoreError::service(other)),
            },
        }
    }

    /// Writes a connection change decided by the domain (came online, went offline) with its
    /// event, if the vase is still at `read.version` and its heartbeat is still the one read.
    pub async fn change_connection(
        &self,
        read: &Vase,
        changed: &Vase,
        events: &[DomainEvent],
        alerts: &AlertWrites,
    ) -> Result<(), StoreError> {
        let id = changed.vase_id.to_string();
        let mut update =
            Expr::new("SET #connection = :connection, version = :next, openAlerts = :alerts")
                .name("#connection", "connection")
                .s(":connection", changed.connection.name())
                .n(":next", changed.version)
                .value(":alerts", alerts_value(&changed.alerts)?);
        if let Some(at) = changed.last_heartbeat_at {
            update = Expr {
                text: format!("{}, lastHeartbeatAt = :heartbeat", update.text),
                ..update
            }
            .n(":heartbeat", at.as_millis());
        }
        update = if changed.connection == Connection::Online {
            Expr {
                text: format!("{}, heartbeatShard = :shard", update.text),
                ..update
            }
            .s(":shard", heartbeat_shard(&id))
        } else {
            Expr {
                text: format!("{} REMOVE heartbeatShard", update.text),
                ..update
            }
        };
        let condition = match read.last_heartbeat_at {
            Some(at) => Expr::new("version = :read AND lastHeartbeatAt = :readHeartbeat")
                .n(":readHeartbeat", at.as_millis()),
            None => Expr::new("version = :read AND attribute_not_exists(lastHeartbeatAt)"),
        }
        .n(":read", read.version);
        let mut tx = Tx::new();
        tx.update(
            Target::Vase(changed.vase_id),
            &self.table,
            keys::vase_key(changed.vase_id),
            update,
            condition,
        )?;
        alerts.add_to(&mut tx, &self.table)?;
        for event in events {
            tx.event(&self.table, event)?;
        }
        tx.commit(self).await
    }

    /// Stores a reading that is not the vase's latest (history only). A redelivery is
    /// `Duplicate`.
    /// One conditional `PutItem`, not a transaction: nothing else changes with it.
    pub async fn put_reading(
        &self,
        vase_id: VaseId,
        reading: &Reading,
        received_at: Timestamp,
    ) -> Result<ReadingWrite, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(reading_item(vase_id, reading, received_at)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(ReadingWrite::Stored),
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(ReadingWrite::Duplicate),
                other => Err(StoreError::service(other)),
            },
        }
    }

    /// Stores the vase's new latest reading, if the latest is still the one read, with the
    /// bouquet's new score (if a bouquet stands in the vase and still names it; with its new
    /// price when the score moved it), the alerts it opened or closed, the history bucket it
    /// finished and the events. All or nothing.
    pub async fn record_latest_reading(
        &self,
        write: LatestReading<'_>,
    ) -> Result<ReadingWrite, StoreError> {
        let LatestReading {
            read,
            changed,
            received_at,
            bouquet_score,
            events,
            alerts,
            finished,
        } = write;
        let reading = changed
            .latest
            .ok_or_else(|| StoreError::corrupt("record_latest_reading needs a latest reading"))?;
        let mut tx = Tx::new();
        self.reading_put(&mut tx, changed.vase_id, &reading, received_at)?;
        let latest = serde_dynamo::to_attribute_value(ReadingFields::from_domain(&reading))
            .map_err(StoreError::corrupt)?;
        let bucket =
            serde_dynamo::to_attribute_value(changed.bucket).map_err(StoreError::corrupt)?;
        let mut update = Expr::new(
            "SET latest = :latest, latestSentAt = :sentAt, openAlerts = :alerts, historyBucket = :bucket",
        )
        .value(":latest", latest)
        .value(":alerts", alerts_value(&changed.alerts)?)
        .value(":bucket", bucket)
        .n(":sentAt", reading.sent_at.as_millis());
        if let Some(score) = changed.bouquet.and_then(|b| b.freshness) {
            update = Expr {
                text: format!("{}, freshness = :freshness", update.text),
                ..update
            }
            .n(":freshness", score);
        }
        // The bouquet left the vase with this reading (past its best).
        if read.bouquet.is_some() && changed.bouquet.is_none() {
            update = update.append(" REMOVE bouquetId, bouquetListedAt, freshness");
        }
        let condition = match read.latest {
            Some(r) => {
                Expr::new("latestSentAt = :readLatest").n(":readLatest", r.sent_at.as_millis())
            }
            None => Expr::new("attribute_exists(pk) AND attribute_not_exists(latestSentAt)"),
        };
        tx.update(
            Target::Vase(changed.vase_id),
            &self.table,
            keys::vase_key(changed.vase_id),
            update,
            condition,
        )?;
        if let Some(score) = bouquet_score {
            self.bouquet_score(&mut tx, changed.vase_id, score, reading.sent_at)?;
        }
        if let Some(bucket) = &finished {
            bucket_put(&mut tx, &self.table, changed.vase_id, bucket)?;
        }
        alerts.add_to(&mut tx, &self.table)?;
        for event in &events {
            tx.event(&self.table, event)?;
        }
        duplicate_or(tx.commit(self).await)
    }

    /// The bouquet's part of a reading: its score, on condition that it still stands in the
    /// vase (and, for a score that is news, that it is still at the version read).
    fn bouquet_score(
        &self,
        tx: &mut Tx,
        vase_id: VaseId,
        score: BouquetScore,
        measured_at: Timestamp,
    ) -> Result<(), StoreError> {
        let BouquetScore {
            bouquet_id,
            score,
            read_version,
            repriced,
        } = score;
        let still_in_vase = Expr::new("vaseId = :vaseId").s(":vaseId", vase_id.to_string());
        let (update, condition) = match (read_version, repriced) {
            // A new price or status with the score: the bouquet written whole but for its
            // shop's rating (a projector's), at the version read.
            (Some(version), Some(changed)) => {
                let mut item = to_item(&crate::items::BouquetItem::from_domain(&changed))?;
                item.insert(
                    "freshnessAt".into(),
                    AttributeValue::N(measured_at.as_millis().to_string()),
                );
                (
                    crate::bouquets::replace_all_but(
                        item,
                        &["ratingSort", "ratingVersion"],
                        crate::items::BouquetItem::OPTIONAL,
                    ),
                    Expr {
                        text: format!("{} AND version = :readVersion", still_in_vase.text),
                        ..still_in_vase
                    }
                    .n(":readVersion", version),
                )
            }
            // A score that is news is a new version of the bouquet: its event carries that
            // version, so consumers order it with the bouquet's other events.
            (Some(version), None) => (
                Expr::new("SET freshness = :score, freshnessAt = :at, freshnessSort = :sort, version = :next")
                    .n(":next", version + 1)
                    .n(":score", score)
                    .s(":sort", keys::freshness_sort(Some(score), &bouquet_id.to_string()))
                    .n(":at", measured_at.as_millis()),
                Expr {
                    text: format!("{} AND version = :readVersion", still_in_vase.text),
                    ..still_in_vase
                }
                .n(":readVersion", version),
            ),
            // A small move is a measurement only: no version, so it fails no concurrent
            // reservation or edit.
            (None, _) => (
                Expr::new("SET freshness = :score, freshnessAt = :at, freshnessSort = :sort")
                    .n(":score", score)
                    .s(":sort", keys::freshness_sort(Some(score), &bouquet_id.to_string()))
                    .n(":at", measured_at.as_millis()),
                still_in_vase,
            ),
        };
        tx.update(
            Target::Bouquet(bouquet_id),
            &self.table,
            crate::bouquets::bouquet_key(&bouquet_id.to_string()),
            update,
            condition,
        )
    }

    fn reading_put(
        &self,
        tx: &mut Tx,
        vase_id: VaseId,
        reading: &Reading,
        received_at: Timestamp,
    ) -> Result<(), StoreError> {
        tx.put_new(
            Target::Reading,
            &self.table,
            reading_item(vase_id, reading, received_at)?,
        )
    }

    /// Online vases whose last heartbeat is before `cutoff`, from every shard of the sparse
    /// heartbeat index (oldest first, at most `limit` per shard). No Scan.
    pub async fn silent_vases(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<VaseId>, StoreError> {
        let queries = (0..HEARTBEAT_SHARDS).map(|shard| {
            self.client
                .query()
                .table_name(&self.table)
                .index_name(keys::INDEX_HEARTBEAT)
                .key_condition_expression("heartbeatShard = :shard AND lastHeartbeatAt < :cutoff")
                .expression_attribute_values(
                    ":shard",
                    AttributeValue::S(heartbeat_shard_key(shard)),
                )
                .expression_attribute_values(
                    ":cutoff",
                    AttributeValue::N(cutoff.as_millis().to_string()),
                )
                .limit(limit as i32)
                .send()
        });
        let mut due = Vec::new();
        for output in futures::future::join_all(queries).await {
            let output = output.map_err(StoreError::backend)?;
            for item in output.items.unwrap_or_default() {
                let pk = match item.get("pk") {
                    Some(AttributeValue::S(pk)) => pk,
                    _ => return Err(StoreError::corrupt("heartbeat index item without pk")),
                };
                let id = pk
                    .strip_prefix("VASE#")
                    .ok_or_else(|| StoreError::corrupt(format!("heartbeat index pk {pk:?}")))?;
                due.push(VaseId::parse(id).map_err(StoreError::corrupt)?);
            }
        }
        Ok(due)
    }
}

pub(crate) fn reading_item(
    vase_id: VaseId,
    reading: &Reading,
    received_at: Timestamp,
) -> Result<Item, StoreError> {
    to_item(&ReadingItem {
        pk: keys::vase_pk(&vase_id.to_string()),
        sk: reading_sk(reading.sent_at),
        entity: "reading".into(),
        reading: ReadingFields::from_domain(reading),
        received_at: received_at.as_millis(),
        expires_at: reading.sent_at.plus(READING_RETENTION).as_epoch_seconds(),
    })
}

/// The vase's open alerts as one attribute (an empty list when none).
fn alerts_value(alerts: &[OpenAlert]) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(alerts).map_err(StoreError::corrupt)
}

/// A vase's item.
pub(crate) fn vase_item(vase: &Vase) -> Result<Item, StoreError> {
    to_item(&VaseItem::from_domain(vase))
}

/// A transaction refused only because the reading already exists is a redelivery.
fn duplicate_or(result: Result<(), StoreError>) -> Result<ReadingWrite, StoreError> {
    match result {
        Ok(()) => Ok(ReadingWrite::Stored),
        Err(StoreError::ConditionFailed(conflicts))
            if conflicts.iter().any(|c| c.target == Target::Reading) =>
        {
            Ok(ReadingWrite::Duplicate)
        }
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vases_round_trip_and_only_online_ones_are_in_the_heartbeat_index() {
        let mut vase = Vase::register(
            VaseId::generate(),
            VendorId::generate(),
            Timestamp::from_millis(5),
        );
        let item = VaseItem::from_domain(&vase);
        assert!(item.heartbeat_shard.is_none());
        assert_eq!(item.into_domain().expect("decode"), vase);
        vase.connection = Connection::Online;
        vase.last_heartbeat_at = Some(Timestamp::from_millis(7));
        vase.latest = Some(Reading {
            sent_at: Timestamp::from_millis(6),
            water_level_pct: 50.5,
            temperature_c: 18.0,
            humidity_pct: 60.0,
            light_lux: 0.0,
        });
        vase.bouquet = Some(VaseBouquet {
            bouquet_id: BouquetId::generate(),
            listed_at: Timestamp::from_millis(1),
            freshness: Some(93),
        });
        let item = VaseItem::from_domain(&vase);
        assert!(item
            .heartbeat_shard
            .as_deref()
            .is_some_and(|s| s.starts_with("HEARTBEAT#")));
        assert_eq!(item.latest_sent_at, Some(6));
        let stored = to_item(&item).expect("to item");
        let back = from_item::<VaseItem>(stored)
            .expect("from item")
            .into_domain();
        assert_eq!(back.expect("decode"), vase);
    }

    #[test]
    fn reading_keys_sort_by_time() {
        assert!(reading_sk(Timestamp::from_millis(999)) < reading_sk(Timestamp::from_millis(1000)));
        assert_eq!(
            reading_sk(Timestamp::from_millis(1)),
            "READING#000000000000001"
        );
    }
}
