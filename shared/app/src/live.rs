//! Live updates: subscribing a connection to channels, and broadcasting a bus event to the
//! subscribers of each channel it belongs to (`bouquet_domain::channels` decides both).

use bouquet_metrics as metrics;
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use crate::App;
use bouquet_domain::channels::{self, Channel, EventIds, Refusal, Viewer};
use bouquet_domain::Timestamp;
use bouquet_realtime::{PushError, Pusher};
use bouquet_store::retry::Retry;
use bouquet_store::{StoreError, MAX_CHANNELS_PER_CONNECTION};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("the connection is gone")]
    ConnectionGone,
    #[error("at most {MAX_CHANNELS_PER_CONNECTION} channels per connection")]
    TooManyChannels,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a subscribe request came to: the channels now subscribed, and each refused one with
/// its code (`request.invalid`, `auth.forbidden`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    pub subscribed: Vec<String>,
    pub refused: Vec<(String, Refusal)>,
}

/// Stores a connection the authorizer admitted, and who holds it.
pub async fn connect(
    app: &App,
    connection_id: &str,
    viewer: &Viewer,
    now: Timestamp,
) -> Result<(), StoreError> {
    app.store.put_connection(connection_id, viewer, now).await
}

/// Removes a connection and its subscriptions.
pub async fn disconnect(app: &App, connection_id: &str) -> Result<(), StoreError> {
    app.store.remove_connection(connection_id).await
}

/// Subscribes `connection_id` (held by `viewer`) to every requested channel it may read. A
/// private channel's subscription ends when the token the connection was opened with expires
/// (`token_expires_at`): the client reconnects with a fresh token to go on receiving it.
pub async fn subscribe(
    app: &App,
    connection_id: &str,
    viewer: &Viewer,
    requested: &[String],
    token_expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<Subscription, LiveError> {
    let store = &app.store;
    if requested.len() > MAX_CHANNELS_PER_CONNECTION {
        return Err(LiveError::TooManyChannels);
    }
    let mut outcome = Subscription::default();
    let mut granted = Vec::new();
    for name in requested {
        match Channel::request(name, viewer) {
            Ok(channel) if !granted.contains(&channel) => {
                outcome.subscribed.push(channel.name());
                granted.push(channel);
            }
            Ok(_) => {}
            Err(refusal) => outcome.refused.push((name.clone(), refusal)),
        }
    }
    if !store
        .subscribe(connection_id, &granted, token_expires_at, now)
        .await?
    {
        return Err(LiveError::ConnectionGone);
    }
    Ok(outcome)
}

/// Unsubscribes from the named channels; returns the ones it understood.
pub async fn unsubscribe(
    app: &App,
    connection_id: &str,
    viewer: &Viewer,
    requested: &[String],
) -> Result<Vec<String>, LiveError> {
    let store = &app.store;
    let channels: Vec<Channel> = requested
        .iter()
        .filter_map(|name| Channel::request(name, viewer).ok())
        .collect();
    store.unsubscribe(connection_id, &channels).await?;
    Ok(channels.iter().map(Channel::name).collect())
}

/// Counts of one broadcast.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Broadcast {
    pub channels: usize,
    /// Frames to send (subscriptions of the event's channels).
    pub frames: usize,
    pub delivered: usize,
    /// Connections found gone (410) and removed.
    pub gone: usize,
    /// Frames that still failed after their retries (counted and logged; the others went
    /// out regardless).
    pub failed: usize,
}

/// Pushes at most this many frames at once.
pub const CONCURRENT_PUSHES: usize = 64;
/// Tries per frame when a push fails for another reason than 410.
const PUSH_ATTEMPTS: u32 = 3;

/// Sends the bus event `name` (EventBridge detail `detail`) to every subscriber of each
/// channel it belongs to: one `Query` per channel (shard), all at once, then the frames
/// concurrently,
/// bounded. A gone connection is removed; a failing one is retried, then counted. Push is
/// at most once per connection and event: a failed broadcast is not repeated for everyone.
/// Only a failure to read the subscribers is an error (the invocation then fails, and its
/// event reaches the function's failure destination).
pub async fn broadcast(
    app: &App,
    pusher: &dyn Pusher,
    name: &str,
    detail: &Value,
) -> Result<Broadcast, StoreError> {
    let store = &app.store;
    let now = app.clock.now();
    let ids: EventIds = serde_json::from_value(detail["data"].clone()).unwrap_or_default();
    let routed = channels::route(name, &ids);
    let mut report = Broadcast {
        channels: routed.len(),
        ..Broadcast::default()
    };
    // Every channel's subscribers, read at once.
    let reading = std::time::Instant::now();
    let audiences =
        futures::future::try_join_all(routed.iter().map(|channel| store.subscribers(channel, now)))
            .await?;
    let mut frames: Vec<(String, std::sync::Arc<Vec<u8>>)> = Vec::new();
    for (channel, subscribers) in routed.iter().zip(audiences) {
        if subscribers.is_empty() {
            continue;
        }
        let frame = std::sync::Arc::new(
            channels::frame(channel, name, detail)
                .to_string()
                .into_bytes(),
        );
        frames.extend(subscribers.into_iter().map(|c| (c, frame.clone())));
    }
    report.frames = frames.len();
    let read_ms = reading.elapsed().as_millis();
    let pushing = std::time::Instant::now();
    let outcomes: Vec<Result<(), PushError>> = futures::stream::iter(frames)
        .map(|(connection, frame)| async move { push(pusher, &connection, &frame).await })
        .buffer_unordered(CONCURRENT_PUSHES)
        .collect()
        .await;
    tracing::debug!(
        read_ms,
        push_ms = pushing.elapsed().as_millis(),
        frames = report.frames,
        "broadcast timing"
    );
    for outcome in outcomes {
        match outcome {
            Ok(()) => report.delivered += 1,
            Err(PushError::Gone(connection)) => {
                report.gone += 1;
                if let Err(error) = store.remove_connection(&connection).await {
                    tracing::warn!(%connection, error = %bouquet_aws::describe(&error), "gone connection not removed; its TTL removes it");
                }
            }
            Err(error @ PushError::Failed { .. }) => {
                report.failed += 1;
                tracing::warn!(error = %bouquet_aws::describe(&error), "frame not delivered");
            }
        }
    }
    metrics::count(metrics::PUSHES, "sent", report.delivered as u64);
    metrics::count(metrics::PUSHES, "gone", report.gone as u64);
    metrics::count(metrics::PUSHES, "failed", report.failed as u64);
    Ok(report)
}

async fn push(pusher: &dyn Pusher, connection: &str, frame: &[u8]) -> Result<(), PushError> {
    let mut retry = Retry::attempts(PUSH_ATTEMPTS);
    loop {
        match pusher.post(connection, frame).await {
            Err(PushError::Failed { .. }) if retry.wait().await => continue,
            outcome => return outcome,
        }
    }
}

/// Who holds a connection, from the context the `$connect` authorizer returned (API Gateway
/// passes it with every later message of the connection). Anything but a complete
/// customer, vendor or admin context is anonymous: public channels only.
pub fn viewer_of(context: &std::collections::HashMap<String, Value>) -> Viewer {
    let claim = |name: &str| context.get(name).and_then(Value::as_str);
    match claim("role") {
        None | Some("anonymous") => Viewer::Anonymous,
        Some(_) => Viewer::from_claims(claim).unwrap_or(Viewer::Anonymous),
    }
}

/// When the token behind a connection expires (`exp` in the authorizer's context, epoch
/// seconds); `None` for an anonymous connection.
pub fn token_expiry_of(context: &std::collections::HashMap<String, Value>) -> Option<Timestamp> {
    let seconds: i64 = context.get("exp")?.as_str()?.parse().ok()?;
    Some(Timestamp::from_millis(seconds.saturating_mul(1000)))
}

/// The context the authorizer returns for `viewer` whose token expires at `token_exp` (epoch
/// seconds; values are strings, as API Gateway requires).
pub fn context_of(viewer: &Viewer, token_exp: Option<&str>) -> serde_json::Map<String, Value> {
    let mut context = serde_json::Map::new();
    let mut put = |k: &str, v: String| {
        context.insert(k.to_owned(), Value::String(v));
    };
    match viewer {
        Viewer::Anonymous => put("role", "anonymous".into()),
        Viewer::Customer(id) => {
            put("role", "customer".into());
            put("sub", id.to_string());
        }
        Viewer::Vendor(id) => {
            put("role", "vendor".into());
            put("sub", "vendor".into());
            put("vendorId", id.to_string());
        }
        Viewer::Admin => {
            put("role", "admin".into());
            put("sub", "admin".into());
        }
    }
    if let (Some(exp), false) = (token_exp, matches!(viewer, Viewer::Anonymous)) {
        put("exp", exp.to_owned());
    }
    context
}
