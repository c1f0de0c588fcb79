//! Smart-vase use cases: applying what a vase sent, and taking silent vases offline.
//!
//! Each is read, decide (the domain), conditional write. A write refused because the vase
//! changed since the read (a concurrent message of the same vase, a sweep) is not an error:
//! the vase is read again and the decision made again, so the outcome is the one a serial
//! order would give, and a message applied once is never applied twice.

use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;

use crate::App;
use bouquet_domain::care::{AlertChange, VaseAlert};
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::markdown::Repricing;
use bouquet_domain::vase::{HeartbeatOutcome, ReadingOutcome, Vase, VaseMessage};
use bouquet_domain::{Bouquet, BouquetStatus, Reading, Timestamp, VaseId};
use bouquet_store::retry::Retry;
use bouquet_store::{
    AlertWrites, BouquetScore, LatestReading, ReadingWrite, Store, StoreError, Target, VaseRules,
};

/// Reads and decisions before a message gives up on a vase that keeps changing under it
/// (the message is then retried by SQS).
const ATTEMPTS: u32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum VaseError {
    /// Not a message a vase sends (a rule or firmware fault): it can never be applied.
    #[error("malformed: {0}")]
    Malformed(#[from] bouquet_domain::vase::MessageError),
    #[error("vase {0} is not registered")]
    UnknownVase(VaseId),
    #[error("vase {0} kept changing during {ATTEMPTS} attempts")]
    Busy(VaseId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a message did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// `lastHeartbeatAt` moved forward.
    Heartbeat,
    /// The vase was `never_seen` or `offline` and is `online` (`VaseCameOnline`).
    CameOnline,
    /// A heartbeat not newer than the last: nothing changed.
    StaleHeartbeat,
    /// The vase's new latest reading; `freshness_event` when its bouquet's score moved
    /// enough for `BouquetFreshnessChanged`.
    LatestReading { freshness_event: bool },
    /// An older reading, kept for history.
    HistoryReading,
    /// A reading already stored: a redelivery, nothing changed.
    DuplicateReading,
}

impl VaseError {
    /// Whether a later delivery could succeed (a malformed message, or one for a vase that
    /// was never registered, never will: it is parked at once rather than retried).
    pub fn is_permanent(&self) -> bool {
        matches!(self, VaseError::Malformed(_) | VaseError::UnknownVase(_))
    }
}

/// The vase a queued message is for, when it is a vase message: one vase's messages are
/// applied in order, since side by side they write the same item and only contend.
pub fn vase_of(body: &str) -> Option<VaseId> {
    VaseMessage::parse(body)
        .ok()
        .map(|message| message.vase_id())
}

/// Receives one message from the vase queue as the IoT rule forwarded it: parsed, then
/// [`apply`]d. `correlation_id` ties the events to the message.
pub async fn receive(app: &App, body: &str, correlation_id: &str) -> Result<Applied, VaseError> {
    let message = VaseMessage::parse(body)?;
    apply(app, &message, correlation_id).await
}

/// Applies one vase message. `correlation_id` ties the events to the message.
pub async fn apply(
    app: &App,
    message: &VaseMessage,
    correlation_id: &str,
) -> Result<Applied, VaseError> {
    let store = &app.store;
    match message {
        VaseMessage::Heartbeat {
            vase_id, sent_at, ..
        } => heartbeat(store, *vase_id, *sent_at, correlation_id).await,
        VaseMessage::Telemetry {
            vase_id,
            reading,
            received_at,
        } => telemetry(store, *vase_id, reading, *received_at, correlation_id).await,
    }
}

async fn read(store: &Store, vase_id: VaseId) -> Result<Vase, VaseError> {
    store
        .vase(vase_id, true)
        .await?
        .ok_or(VaseError::UnknownVase(vase_id))
}

/// The vase changed, or its bouquet moved to a new version (an edit, a reservation), since
/// the read: read again and decide again.
fn lost_race(error: &StoreError) -> bool {
    matches!(error, StoreError::ConditionFailed(c) if c.iter().any(|c| matches!(c.target, Target::Vase(_) | Target::Bouquet(_) | Target::Alert)))
        || matches!(error, StoreError::Contention(_))
}

async fn heartbeat(
    store: &Store,
    vase_id: VaseId,
    sent_at: Timestamp,
    correlation_id: &str,
) -> Result<Applied, VaseError> {
    let mut retry = Retry::attempts(ATTEMPTS);
    loop {
        let vase = read(store, vase_id).await?;
        let result = match vase.heartbeat(sent_at) {
            HeartbeatOutcome::Stale => return Ok(Applied::StaleHeartbeat),
            HeartbeatOutcome::StillOnline(_) => store
                .touch_heartbeat(vase_id, sent_at)
                .await
                .map(|()| Applied::Heartbeat),
            HeartbeatOutcome::CameOnline(online) => {
                let mut events = vec![DomainEvent::new(
                    vase_id,
                    online.version,
                    sent_at,
                    correlation_id,
                    EventData::VaseCameOnline {
                        vase_id,
                        vendor_id: online.vendor_id,
                        last_heartbeat_at: sent_at,
                    },
                )];
                let alerts = alert_writes(
                    store,
                    &vase,
                    &online,
                    sent_at,
                    None,
                    correlation_id,
                    &mut events,
                )
                .await?;
                store
                    .change_connection(&vase, &online, &events, &alerts)
                    .await
                    .map(|()| Applied::CameOnline)
            }
        };
        match result {
            Ok(applied) => return Ok(applied),
            Err(error) if lost_race(&error) => {
                if !retry.wait().await {
                    return Err(VaseError::Busy(vase_id));
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
}

async fn telemetry(
    store: &Store,
    vase_id: VaseId,
    reading: &Reading,
    received_at: Timestamp,
    correlation_id: &str,
) -> Result<Applied, VaseError> {
    // Whether the bouquet still names this vase: once it does not (a bouquet record that
    // moved on), the score is kept on the vase only.
    let mut score_bouquet = true;
    let mut retry = Retry::attempts(ATTEMPTS);
    let mut rules: Option<VaseRules> = None;
    loop {
        let vase = read(store, vase_id).await?;
        // Not the latest: kept for history, without the shop's rules.
        if vase
            .latest
            .is_some_and(|latest| reading.sent_at <= latest.sent_at)
        {
            return Ok(
                match store.put_reading(vase_id, reading, received_at).await? {
                    ReadingWrite::Stored => Applied::HistoryReading,
                    ReadingWrite::Duplicate => Applied::DuplicateReading,
                },
            );
        }
        let rules = match &rules {
            Some(rules) => rules,
            None => rules.insert(
                store
                    .vase_rules(vase.vendor_id, false)
                    .await?
                    .unwrap_or_default(),
            ),
        };
        let (mut changed, freshness, alert_changes, finished) =
            match vase.record(*reading, received_at, &rules.care) {
                ReadingOutcome::HistoryOnly => {
                    return Ok(
                        match store.put_reading(vase_id, reading, received_at).await? {
                            ReadingWrite::Stored => Applied::HistoryReading,
                            ReadingWrite::Duplicate => Applied::DuplicateReading,
                        },
                    )
                }
                ReadingOutcome::Latest {
                    vase,
                    freshness,
                    alerts,
                    finished,
                } => (vase, freshness, alerts, finished),
            };
        // A score that did not move is not written again (the vase keeps it): a steady vase
        // costs its reading and its own item, not its bouquet's too.
        let change = freshness.filter(|c| score_bouquet && c.previous != Some(c.score));
        let mut events = Vec::new();
        // A score that is news, or one that may move the price, is a new version of the
        // bouquet: read the version it moves on.
        let mut bouquet_score = change.map(|c| BouquetScore {
            bouquet_id: c.bouquet_id,
            score: c.score,
            read_version: None,
            repriced: None,
        });
        let may_reprice = |c: &bouquet_domain::vase::FreshnessChange| {
            rules.markdown.enabled && c.previous != Some(c.score)
        };
        if let Some(c) = change.filter(|c| c.is_significant() || may_reprice(c)) {
            match store.bouquet(c.bouquet_id, true).await? {
                // A suspended shop's bouquet, or one no longer on sale, is scored as a
                // measurement, never announced: nothing of a suspended shop reaches the public
                // channels (issue 38).
                Some(bouquet)
                    if bouquet.vase_id == Some(vase_id)
                        && (bouquet.is_suspended() || !bouquet.status.is_on_sale()) => {}
                Some(bouquet) if bouquet.vase_id == Some(vase_id) => {
                    bouquet_score = Some(score_and_price(
                        &bouquet,
                        c,
                        rules,
                        vase_id,
                        reading.sent_at,
                        received_at,
                        correlation_id,
                        &mut events,
                    ));
                }
                _ => {
                    tracing::warn!(%vase_id, "the vase's bouquet no longer names it; keeping the score on the vase only");
                    score_bouquet = false;
                    continue;
                }
            }
        }
        // Past its best: the bouquet leaves sale and its vase, which is free for the next one.
        if bouquet_score
            .as_ref()
            .and_then(|s| s.repriced.as_ref())
            .is_some_and(|b| b.status == BouquetStatus::Withdrawn)
        {
            changed.bouquet = None;
        }
        let alerts = alert_writes(
            store,
            &vase,
            &changed,
            reading.sent_at,
            Some((alert_changes, *reading)),
            correlation_id,
            &mut events,
        )
        .await?;
        let freshness_event = events.iter().any(|e| e.name() == "BouquetFreshnessChanged");
        let result = store
            .record_latest_reading(LatestReading {
                read: &vase,
                changed: &changed,
                received_at,
                bouquet_score,
                events,
                alerts,
                finished,
            })
            .await;
        match result {
            Ok(ReadingWrite::Stored) => return Ok(Applied::LatestReading { freshness_event }),
            Ok(ReadingWrite::Duplicate) => return Ok(Applied::DuplicateReading),
            // The bouquet no longer names this vase (not a version it lost to).
            Err(StoreError::ConditionFailed(conflicts))
                if score_bouquet
                    && conflicts.iter().all(|c| {
                        matches!(c.target, Target::Bouquet(_))
                            && c.bouquet().is_none_or(|b| b.vase_id != Some(vase_id))
                    }) =>
            {
                tracing::warn!(%vase_id, "the vase's bouquet no longer names it; keeping the score on the vase only");
                // Not a lost race: write again at once, without using an attempt.
                score_bouquet = false;
            }
            Err(error) if lost_race(&error) => {
                if !retry.wait().await {
                    return Err(VaseError::Busy(vase_id));
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// The bouquet's part of a reading that is news or may move its price: its new score, and
/// the price or storefront change the shop's markdown rule makes of it, each with its event
/// (the events' versions follow one another from the version read).
#[allow(clippy::too_many_arguments)]
fn score_and_price(
    bouquet: &Bouquet,
    change: bouquet_domain::vase::FreshnessChange,
    rules: &VaseRules,
    vase_id: VaseId,
    measured_at: Timestamp,
    now: Timestamp,
    correlation_id: &str,
    events: &mut Vec<DomainEvent>,
) -> BouquetScore {
    let (bouquet_id, vendor_id) = (change.bouquet_id, bouquet.vendor_id);
    let mut next = bouquet.clone();
    next.freshness = Some(change.score);
    let mut news = Vec::new();
    if change.is_significant() {
        news.push(EventData::BouquetFreshnessChanged {
            bouquet_id,
            vendor_id,
            vase_id,
            previous: change.previous,
            freshness: change.score,
            measured_at,
        });
    }
    let repriced = match bouquet.reprice(&rules.markdown, change.score, now) {
        Repricing::Unchanged => None,
        Repricing::MarkDown { price, step } => {
            next.mark_down(price, step, now);
            news.push(EventData::BouquetRepriced {
                bouquet_id,
                vendor_id,
                list_price: bouquet.list_price,
                price,
                step,
                freshness: change.score,
            });
            Some(next)
        }
        // `reprice` says so only of an available bouquet, which `withdraw` takes.
        Repricing::PastItsBest if next.withdraw(now).is_ok() => {
            news.push(EventData::BouquetPastItsBest {
                bouquet_id,
                vendor_id,
                vase_id,
                freshness: change.score,
            });
            Some(next)
        }
        Repricing::PastItsBest => None,
    };
    // Each event is a version of the bouquet, one after the other from the version read.
    let version = bouquet.version + news.len() as u64;
    events.extend(
        news.into_iter()
            .zip(bouquet.version + 1..)
            .map(|(data, v)| DomainEvent::new(bouquet_id, v, measured_at, correlation_id, data)),
    );
    BouquetScore {
        bouquet_id,
        score: change.score,
        // Nothing that is news: a measurement, no version moved.
        read_version: (version != bouquet.version).then_some(bouquet.version),
        repriced: repriced.map(|b| Bouquet { version, ..b }),
    }
}

/// The alerts that `read` → `changed` opened or closed at `at`, with their events: an opening
/// is a new alert item (with the reading that opened it), a closing an update of the alert at
/// the version read (an acknowledgement racing it makes the write fail and be decided again).
/// `from_reading`: the changes a reading decided, and that reading; `None` for a connection
/// change, whose alert changes are the difference between the two.
async fn alert_writes(
    store: &Store,
    read: &Vase,
    changed: &Vase,
    at: Timestamp,
    from_reading: Option<(Vec<AlertChange>, Reading)>,
    correlation_id: &str,
    events: &mut Vec<DomainEvent>,
) -> Result<AlertWrites, VaseError> {
    let (changes, reading) = match from_reading {
        Some((changes, reading)) => (changes, Some(reading)),
        None => (read.alert_changes(changed, at), None),
    };
    let mut writes = AlertWrites::default();
    let (vase_id, vendor_id) = (changed.vase_id, changed.vendor_id);
    for change in changes {
        match change {
            AlertChange::Opened(open) => {
                let alert = VaseAlert::open(vase_id, vendor_id, &open, reading);
                events.push(DomainEvent::new(
                    &alert.alert_id,
                    1,
                    open.opened_at,
                    correlation_id,
                    EventData::VaseAlertOpened {
                        alert_id: alert.alert_id.clone(),
                        vase_id,
                        vendor_id,
                        condition: open.condition,
                        reading: alert.reading,
                        opened_at: open.opened_at,
                    },
                ));
                writes.opened.push(alert);
            }
            AlertChange::Closed { alert, at } => {
                let alert_id = alert.id(vase_id);
                let Some(stored) = store.alert(&alert_id).await? else {
                    // Opened before alerts were stored: nothing to close but the vase's list.
                    continue;
                };
                events.push(DomainEvent::new(
                    &alert_id,
                    stored.version + 1,
                    at,
                    correlation_id,
                    EventData::VaseAlertClosed {
                        alert_id: alert_id.clone(),
                        vase_id,
                        vendor_id,
                        condition: alert.condition,
                        opened_at: alert.opened_at,
                        closed_at: at,
                    },
                ));
                writes.closed.push((alert_id, at, stored.version));
            }
        }
    }
    Ok(writes)
}

/// What one offline sweep did.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfflineSweep {
    /// Online vases found silent in the index.
    pub silent: usize,
    /// Taken offline, each with one `VaseWentOffline`.
    pub went_offline: usize,
    /// Changed since the index was read (a heartbeat came, another sweeper won): left alone.
    pub skipped: usize,
    /// Failed; the next run retries them.
    pub failed: usize,
}

/// Vases read per shard and run.
const SWEEP_PAGE: usize = 200;
/// Vases handled at once.
const SWEEP_CONCURRENCY: usize = 8;

/// Takes every vase that has been silent for `offline_after` at `now` offline, with
/// `VaseWentOffline`. Each write re-checks the heartbeat it read, so a heartbeat racing the
/// sweep wins and two sweepers emit one event.
pub async fn sweep_offline(
    app: &App,
    now: Timestamp,
    offline_after: Duration,
    correlation_id: &str,
) -> Result<OfflineSweep, VaseError> {
    let store = &app.store;
    let cutoff = Vase::silence_cutoff(now, offline_after);
    let silent = store.silent_vases(cutoff, SWEEP_PAGE).await?;
    let mut report = OfflineSweep {
        silent: silent.len(),
        ..OfflineSweep::default()
    };
    let results: Vec<_> = futures::stream::iter(silent)
        .map(|vase_id| async move {
            let result = take_offline(store, vase_id, now, offline_after, correlation_id).await;
            (vase_id, result)
        })
        .buffer_unordered(SWEEP_CONCURRENCY)
        .collect()
        .await;
    for (vase_id, result) in results {
        match result {
            Ok(true) => report.went_offline += 1,
            Ok(false) => report.skipped += 1,
            Err(error) => {
                report.failed += 1;
                tracing::error!(%vase_id, error = %bouquet_aws::describe(&error), "offline sweep failed for a vase; the next run retries it");
            }
        }
    }
    Ok(report)
}

async fn take_offline(
    store: &Store,
    vase_id: VaseId,
    now: Timestamp,
    offline_after: Duration,
    correlation_id: &str,
) -> Result<bool, VaseError> {
    let vase = read(store, vase_id).await?;
    let Some(offline) = vase.go_offline(now, offline_after) else {
        return Ok(false);
    };
    let mut events = vec![DomainEvent::new(
        vase_id,
        offline.version,
        now,
        correlation_id,
        EventData::VaseWentOffline {
            vase_id,
            vendor_id: offline.vendor_id,
            last_heartbeat_at: offline.last_heartbeat_at.unwrap_or(now),
        },
    )];
    let alerts = alert_writes(
        store,
        &vase,
        &offline,
        now,
        None,
        correlation_id,
        &mut events,
    )
    .await?;
    match store
        .change_connection(&vase, &offline, &events, &alerts)
        .await
    {
        Ok(()) => Ok(true),
        Err(error) if lost_race(&error) => Ok(false),
        Err(error) => Err(error.into()),
    }
}
