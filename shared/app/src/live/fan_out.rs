//! The fan-out: [`broadcast`] plans a bus event's frames (private channels pushed at once,
//! public ones a unit of work per leased shard, crowded ones into a digest window), and
//! [`fan_out`] works the units (a shard read, its frames pushed, failures parked whole).

use std::sync::Arc;
use std::time::Duration;

use bouquet_domain::channels::{self, Channel, EventIds};
use bouquet_domain::{BouquetId, Timestamp};
use bouquet_metrics as metrics;
use bouquet_realtime::{PushError, Pusher, QueueError, WorkQueue};
use bouquet_store::retry::Retry;
use bouquet_store::{Digested, StoreError, MAX_SUBSCRIPTION_SHARDS, SHARD_SUBSCRIBERS};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::App;

/// One frame of a unit of fan-out work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitFrame {
    /// What the client reads (`{"type":"event","channel":...,"event":...}`).
    pub frame: Value,
    /// Frames with one key collapse to the newest ([`channels::coalescing_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<String>,
    /// The event's aggregate version, which orders frames of one key.
    #[serde(default)]
    pub version: u64,
}

/// A unit of fan-out work, the body of one message on the fan-out queue: frames for one
/// shard of a public channel, or for listed connections (pushes that failed, parked whole
/// on the dead-letter queue; a redrive sends them again to just those connections).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushUnit {
    /// The channel's key (`catalogue`, `bouquet:{id}`, `orders:{customerId}`, ...).
    pub channel: String,
    /// The shard to read, and the channel's shard count when the unit was planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRef>,
    /// Or these connections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<String>,
    pub frames: Vec<UnitFrame>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShardRef {
    pub index: u32,
    pub of: u32,
}

impl PushUnit {
    pub fn body(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Closes a crowded channel's digest window: its frames go out as one frame per connection
/// (`{"type":"events",...}`), a unit per shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigestFlush {
    /// The channel's key (public channels only: key and name are the same).
    pub digest: String,
    pub window: i64,
}

/// A message on the fan-out queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Work {
    Flush(DigestFlush),
    Push(PushUnit),
}

/// How long a crowded channel's digest window lasts: a watcher of such a channel gets at most
/// one frame per window (docs/capacity.md).
pub const DIGEST_WINDOW: Duration = Duration::from_secs(5);

/// The bouquets a public event changed, as a storefront shows them now (the public view,
/// with their status and version): the public frames carry them, so a watcher applies them
/// and reads nothing; one `BatchGetItem` an event instead of a read per watcher. Freshness
/// moves carry their score already and are the most frequent event: they are not read. A
/// failed read leaves the frame without them (the console then reads the bouquet itself).
async fn shown_bouquets(app: &App, name: &str, ids: &EventIds, now: Timestamp) -> Vec<Value> {
    let mut wanted: Vec<BouquetId> = ids.bouquet_ids.clone();
    wanted.extend(ids.bouquet_id);
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() || name == "BouquetFreshnessChanged" {
        return Vec::new();
    }
    match app.store.bouquets(&wanted).await {
        Ok(found) => found
            .into_iter()
            .flatten()
            .filter_map(|b| serde_json::to_value(b.view(now)).ok())
            .collect(),
        Err(error) => {
            tracing::warn!(event = name, error = %error, "the bouquets could not be read; frames go without them");
            Vec::new()
        }
    }
}

/// Counts of one broadcast (the planner's share of an event).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Broadcast {
    pub channels: usize,
    /// Units of work queued for the public channels' shards.
    pub queued: usize,
    /// Crowded channels whose frame went into their digest window instead.
    pub digested: usize,
    /// The private channels' frames, pushed at once: counts as in [`Pushes`].
    #[serde(flatten)]
    pub private: Pushes,
}

/// Counts of pushing frames to an audience.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushes {
    /// Frames to send (audience × frames).
    pub frames: usize,
    pub delivered: usize,
    /// Connections found gone (410) and removed.
    pub gone: usize,
    /// Frames that still failed after their retries: parked whole on the dead-letter queue.
    pub failed: usize,
}

impl Pushes {
    fn add(&mut self, other: &Pushes) {
        self.frames += other.frames;
        self.delivered += other.delivered;
        self.gone += other.gone;
        self.failed += other.failed;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BroadcastError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// Pushes at most this many frames at once (per worker).
pub const CONCURRENT_PUSHES: usize = 100;
/// Tries per frame when API Gateway throttles (429) or the push fails for another reason
/// than 410.
const PUSH_ATTEMPTS: u32 = 5;

/// Plans the fan-out of the bus event `name` (EventBridge detail `detail`): each public
/// channel it belongs to becomes one unit of work per shard, queued for the workers
/// ([`fan_out`]); its private channels (a customer's orders, a vendor's shop: a handful of
/// connections each) are pushed here and now, so a crowd on the catalogue never delays a
/// customer's `OrderPaid`. Pushes that fail are parked whole on the dead-letter queue.
/// An error (the subscribers or shard counts unreadable, the queue refusing) fails the
/// invocation: its event reaches the function's failure destination.
pub async fn broadcast(
    app: &App,
    pusher: &dyn Pusher,
    queue: &dyn WorkQueue,
    name: &str,
    detail: &Value,
) -> Result<Broadcast, BroadcastError> {
    let store = &app.store;
    let now = app.clock.now();
    let ids: EventIds = serde_json::from_value(detail["data"].clone()).unwrap_or_default();
    let routed = channels::route(name, &ids);
    let (public, private): (Vec<&Channel>, Vec<&Channel>) =
        routed.iter().partition(|c| c.is_public());
    let unit_frame = |channel: &Channel, shown: &[Value]| {
        let mut frame = channels::frame(channel, name, detail);
        if channel.is_public() && !shown.is_empty() {
            frame["event"]["bouquets"] = serde_json::json!(shown);
        }
        UnitFrame {
            frame,
            coalesce: channels::coalescing_key(name, &ids),
            version: detail["aggregateVersion"].as_u64().unwrap_or_default(),
        }
    };
    let planning = async {
        let keys: Vec<String> = public.iter().map(|c| c.key()).collect();
        // Read fresh: a count grown a moment ago has subscribers in its new shards. Only
        // the shards someone may be in get work.
        let shards = store.channel_shards(&keys, now).await?;
        let (crowded, frame_by_frame): (Vec<&&Channel>, Vec<&&Channel>) =
            public.iter().partition(|c| {
                shards.get(&c.key()).map_or(1, |s| s.count) >= app.config.digest_from_shards
            });
        // The bouquets are read only for an audience, beside the private pushes.
        let watched = !crowded.is_empty()
            || frame_by_frame
                .iter()
                .any(|c| shards.get(&c.key()).is_some_and(|s| !s.occupied.is_empty()));
        let shown = if watched {
            shown_bouquets(app, name, &ids, now).await
        } else {
            Vec::new()
        };
        let units: Vec<String> = frame_by_frame
            .iter()
            .flat_map(|channel| {
                let key = channel.key();
                let (of, occupied) = shards
                    .get(&key)
                    .map(|s| (s.count, s.occupied.clone()))
                    .unwrap_or_default();
                let frame = unit_frame(channel, &shown);
                occupied.into_iter().map(move |index| {
                    PushUnit {
                        channel: key.clone(),
                        shard: Some(ShardRef { index, of }),
                        connections: Vec::new(),
                        frames: vec![frame.clone()],
                    }
                    .body()
                })
            })
            .collect();
        queue.send(&units).await?;
        for channel in &crowded {
            digest(
                app,
                queue,
                channel,
                &unit_frame(channel, &shown),
                detail,
                now,
            )
            .await?;
        }
        Ok::<(usize, usize), BroadcastError>((units.len(), crowded.len()))
    };
    let pushing = futures::future::try_join_all(private.iter().map(|channel| async move {
        // A private channel has one shard: only fan-out workers grow a channel, and they
        // serve public ones only. So its one shard is read without reading its count.
        let audience = store
            .shard_subscribers(&channel.key(), 0, now)
            .await
            .map_err(BroadcastError::from)?;
        let unit = PushUnit {
            channel: channel.key(),
            shard: None,
            connections: audience,
            frames: vec![unit_frame(channel, &[])],
        };
        push_unit(app, pusher, queue, unit).await
    }));
    let started = std::time::Instant::now();
    let ((queued, digested), private_pushes) = futures::future::try_join(planning, pushing).await?;
    tracing::debug!(
        event = name,
        queued,
        ms = started.elapsed().as_millis(),
        "broadcast planned and private channels pushed"
    );
    let mut report = Broadcast {
        channels: routed.len(),
        queued,
        digested,
        ..Broadcast::default()
    };
    for pushes in &private_pushes {
        report.private.add(pushes);
    }
    record(&report.private);
    Ok(report)
}

/// Puts `frame` into the current digest window of a crowded `channel`; the window's first
/// frame schedules its flush for the window's end. A window already being flushed sends the
/// frame to the next one, so nothing falls between two windows.
async fn digest(
    app: &App,
    queue: &dyn WorkQueue,
    channel: &Channel,
    frame: &UnitFrame,
    detail: &Value,
    now: Timestamp,
) -> Result<(), BroadcastError> {
    let key = channel.key();
    let window_ms = DIGEST_WINDOW.as_millis() as i64;
    let entry = frame
        .coalesce
        .clone()
        .or_else(|| detail["eventId"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let text = frame.frame.to_string();
    let mut window = now.as_millis().div_euclid(window_ms);
    loop {
        let kept_until = now.plus(Duration::from_secs(3600));
        match app
            .store
            .add_to_digest(&key, window, &entry, &text, frame.version, kept_until)
            .await?
        {
            Digested::Added => return Ok(()),
            Digested::Flushed => window += 1,
            Digested::First => {
                let closes = Timestamp::from_millis((window + 1) * window_ms);
                let wait_ms = (closes.as_millis() - now.as_millis()).max(0) as u64;
                // SQS delays in whole seconds: round up, never early.
                let delay = Duration::from_secs(wait_ms.div_ceil(1000));
                let flush = Work::Flush(DigestFlush {
                    digest: key.clone(),
                    window,
                });
                queue
                    .send_later(&serde_json::to_string(&flush).unwrap_or_default(), delay)
                    .await?;
                return Ok(());
            }
        }
    }
}

/// Closes a digest window and queues its one frame for every shard of the channel.
async fn flush(
    app: &App,
    queue: &dyn WorkQueue,
    flush: &DigestFlush,
) -> Result<usize, BroadcastError> {
    let frames: Vec<Value> = app
        .store
        .take_digest(&flush.digest, flush.window)
        .await?
        .iter()
        .filter_map(|text| serde_json::from_str(text).ok())
        .collect();
    if frames.is_empty() {
        return Ok(0);
    }
    let frame = channels::digest_frame(&flush.digest, &frames);
    let shards = app
        .store
        .channel_shards(std::slice::from_ref(&flush.digest), app.clock.now())
        .await?;
    let (of, occupied) = shards
        .get(&flush.digest)
        .map(|s| (s.count, s.occupied.clone()))
        .unwrap_or_default();
    let units: Vec<String> = occupied
        .into_iter()
        .map(|index| {
            PushUnit {
                channel: flush.digest.clone(),
                shard: Some(ShardRef { index, of }),
                connections: Vec::new(),
                frames: vec![UnitFrame {
                    frame: frame.clone(),
                    coalesce: None,
                    version: 0,
                }],
            }
            .body()
        })
        .collect();
    queue.send(&units).await?;
    Ok(units.len())
}

/// Counts of one batch of fan-out work.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FanOut {
    pub units: usize,
    /// Frames dropped because a newer frame of their key came in the same batch.
    pub coalesced: usize,
    /// Units queued by closing digest windows.
    pub flushed: usize,
    #[serde(flatten)]
    pub pushes: Pushes,
    /// Messages whose audience could not be read: they go back to the queue (and, after the
    /// queue's receive limit, to its dead-letter queue).
    pub retried: Vec<String>,
}

/// The workers' side: closes the digest windows that are due (queueing their units), and
/// pushes each unit's frames to its audience. Units for the same shard
/// (or the same listed connections) of one channel are read once, and their frames coalesced
/// ([`channels::coalesce`]); a shard found crowded grows its channel's shard count for the
/// subscribers to come. `units` are (message id, unit).
pub async fn fan_out(
    app: &App,
    pusher: &dyn Pusher,
    queue: &dyn WorkQueue,
    work: Vec<(String, Work)>,
) -> FanOut {
    let mut report = FanOut {
        units: work.len(),
        ..FanOut::default()
    };
    let mut units = Vec::new();
    for (id, work) in work {
        match work {
            Work::Push(unit) => units.push((id, unit)),
            Work::Flush(digest) => match flush(app, queue, &digest).await {
                Ok(queued) => report.flushed += queued,
                Err(error) => {
                    tracing::warn!(error = %bouquet_aws::describe(&error), "digest not flushed; it goes back to the queue");
                    report.retried.push(id);
                }
            },
        }
    }
    // Grouped by audience, in arrival order.
    let mut groups: Vec<(PushUnit, Vec<String>)> = Vec::new();
    for (id, unit) in units {
        match groups.iter_mut().find(|(g, _)| {
            g.channel == unit.channel
                && g.shard.map(|s| s.index) == unit.shard.map(|s| s.index)
                && g.connections == unit.connections
        }) {
            Some((group, ids)) => {
                group.frames.extend(unit.frames);
                group.shard = group.shard.max(unit.shard);
                ids.push(id);
            }
            None => groups.push((unit, vec![id])),
        }
    }
    let outcomes = futures::future::join_all(groups.into_iter().map(|(mut unit, ids)| async move {
        let arrived = unit.frames.len();
        unit.frames = channels::coalesce(
            std::mem::take(&mut unit.frames),
            |f| f.coalesce.as_deref(),
            |f| f.version,
        );
        let coalesced = arrived - unit.frames.len();
        match push_unit(app, pusher, queue, unit).await {
            Ok(pushes) => (coalesced, Ok(pushes)),
            Err(error) => {
                tracing::warn!(error = %bouquet_aws::describe(&error), "fan-out unit failed; it goes back to the queue");
                (coalesced, Err(ids))
            }
        }
    }))
    .await;
    for (coalesced, outcome) in outcomes {
        report.coalesced += coalesced;
        match outcome {
            Ok(pushes) => report.pushes.add(&pushes),
            Err(ids) => report.retried.extend(ids),
        }
    }
    record(&report.pushes);
    metrics::count(metrics::PUSHES, "coalesced", report.coalesced as u64);
    report
}

fn record(pushes: &Pushes) {
    metrics::count(metrics::PUSHES, "sent", pushes.delivered as u64);
    metrics::count(metrics::PUSHES, "gone", pushes.gone as u64);
    metrics::count(metrics::PUSHES, "failed", pushes.failed as u64);
}

/// Reads a unit's audience (its shard, or its listed connections) and pushes every frame to
/// every connection, [`CONCURRENT_PUSHES`] at once. A gone connection is removed; pushes that
/// still fail after their retries are parked whole (one unit per frame, naming the
/// connections it failed for). An error only when the audience could not be read or the
/// failures could not be parked: then the unit as a whole must be tried again.
async fn push_unit(
    app: &App,
    pusher: &dyn Pusher,
    queue: &dyn WorkQueue,
    unit: PushUnit,
) -> Result<Pushes, BroadcastError> {
    let store = &app.store;
    let reading = std::time::Instant::now();
    let audience = match unit.shard {
        Some(shard) => {
            let audience = app
                .shard_audiences
                .of(store, &unit.channel, shard.index, app.clock.now())
                .await?;
            if audience.len() > SHARD_SUBSCRIBERS && shard.of < MAX_SUBSCRIPTION_SHARDS {
                let to = (shard.of * 2).min(MAX_SUBSCRIPTION_SHARDS);
                if store
                    .grow_subscription_shards(&unit.channel, shard.of, to)
                    .await?
                {
                    tracing::info!(channel = %unit.channel, from = shard.of, to, subscribers = audience.len(), "a crowded channel grows");
                }
            }
            audience
        }
        None => Arc::new(unit.connections.clone()),
    };
    let read_ms = reading.elapsed().as_millis();
    let pushing = std::time::Instant::now();
    let mut report = Pushes {
        frames: audience.len() * unit.frames.len(),
        ..Pushes::default()
    };
    let frames: Vec<Arc<Vec<u8>>> = unit
        .frames
        .iter()
        .map(|f| Arc::new(f.frame.to_string().into_bytes()))
        .collect();
    // Owned, not borrowed: the stream's futures must not hold a borrow of a local across the
    // runtime's `Send` bound.
    let pushes: Vec<(usize, String, Arc<Vec<u8>>)> = frames
        .iter()
        .enumerate()
        .flat_map(|(index, frame)| {
            audience
                .iter()
                .map(move |connection| (index, connection.clone(), frame.clone()))
        })
        .collect();
    let outcomes: Vec<(usize, Result<(), PushError>)> = futures::stream::iter(pushes)
        .map(|(index, connection, frame)| async move {
            (index, push(pusher, &connection, &frame).await)
        })
        .buffer_unordered(CONCURRENT_PUSHES)
        .collect()
        .await;
    tracing::debug!(
        channel = %unit.channel,
        shard = ?unit.shard.map(|s| s.index),
        audience = audience.len(),
        read_ms,
        push_ms = pushing.elapsed().as_millis(),
        "unit pushed"
    );
    let mut failed: Vec<Vec<String>> = vec![Vec::new(); frames.len()];
    let mut gone = Vec::new();
    for (index, outcome) in outcomes {
        match outcome {
            Ok(()) => report.delivered += 1,
            Err(PushError::Gone(connection)) => {
                report.gone += 1;
                if !gone.contains(&connection) {
                    gone.push(connection);
                }
            }
            Err(error @ (PushError::Failed { .. } | PushError::Throttled(_))) => {
                report.failed += 1;
                tracing::warn!(error = %bouquet_aws::describe(&error), "frame not delivered; parked");
                let connection = match error {
                    PushError::Failed { connection, .. } | PushError::Throttled(connection) => {
                        connection
                    }
                    PushError::Gone(connection) => connection,
                };
                failed[index].push(connection);
            }
        }
    }
    app.shard_audiences.forget(&gone);
    for connection in gone {
        if let Err(error) = store.remove_connection(&connection).await {
            tracing::warn!(%connection, error = %bouquet_aws::describe(&error), "gone connection not removed; its TTL removes it");
        }
    }
    let parked: Vec<String> = failed
        .into_iter()
        .zip(&unit.frames)
        .filter(|(connections, _)| !connections.is_empty())
        .map(|(connections, frame)| {
            PushUnit {
                channel: unit.channel.clone(),
                shard: None,
                connections,
                frames: vec![frame.clone()],
            }
            .body()
        })
        .collect();
    if !parked.is_empty() {
        queue.park(&parked).await?;
    }
    Ok(report)
}

async fn push(pusher: &dyn Pusher, connection: &str, frame: &[u8]) -> Result<(), PushError> {
    let mut retry = Retry::attempts(PUSH_ATTEMPTS);
    loop {
        match pusher.post(connection, frame).await {
            Err(PushError::Failed { .. } | PushError::Throttled(_)) if retry.wait().await => {
                continue
            }
            outcome => return outcome,
        }
    }
}

/// The workers' batch, as the fan-out queue delivers it: each body parsed as [`Work`] (a
/// body that is none can never succeed: parked at once on the queue's dead-letter queue, with
/// its reason), then [`fan_out`]; a unit whose audience could not be read is retried.
pub async fn receive_work(
    app: &App,
    pusher: &dyn Pusher,
    queue: &dyn WorkQueue,
    messages: Vec<bouquet_runtime::batch::Message>,
) -> (bouquet_runtime::batch::Settled<()>, FanOut) {
    use bouquet_runtime::batch::{self, Outcome, Plan};
    let parsed = batch::run(
        messages,
        Plan::ONE_AT_A_TIME,
        |_| None,
        |message| async move {
            let outcome = match serde_json::from_str::<Work>(&message.body) {
                Ok(work) => Outcome::Done((message.id.clone(), work)),
                Err(error) => Outcome::Reject(format!("not a unit of fan-out work: {error}")),
            };
            (message, outcome)
        },
        Some(&ParkOnWorkQueue(queue)),
    )
    .await;
    let settled = batch::Settled {
        received: parsed.received,
        done: vec![(); parsed.done.len()],
        dead_lettered: parsed.dead_lettered,
        retried: parsed.retried,
    };
    let report = fan_out(app, pusher, queue, parsed.done).await;
    (settled.and_retry(report.retried.iter().cloned()), report)
}

/// The work queue's dead-letter queue as the batch runner's (the bodies whole; the reasons
/// are in the log, since the queue's park takes bodies).
struct ParkOnWorkQueue<'a>(&'a dyn WorkQueue);

#[async_trait::async_trait]
impl bouquet_runtime::batch::DeadLetters for ParkOnWorkQueue<'_> {
    async fn park(&self, rejected: &[bouquet_runtime::batch::Rejected]) -> Vec<String> {
        let bodies: Vec<String> = rejected.iter().map(|r| r.message.body.clone()).collect();
        match self.0.park(&bodies).await {
            Ok(()) => Vec::new(),
            Err(error) => {
                tracing::warn!(%error, "malformed units not parked; they go back to the queue");
                rejected.iter().map(|r| r.message.id.clone()).collect()
            }
        }
    }
}
