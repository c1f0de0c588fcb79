//! A connection's life: admitted against its holder's cap, subscribed to the channels it may
//! read (its public shards leased first), unsubscribed, removed.

use bouquet_domain::channels::{Channel, Refusal, Viewer};
use bouquet_domain::Timestamp;
use bouquet_metrics as metrics;
pub use bouquet_store::{Admitted, ConnectionLimit};
use bouquet_store::{StoreError, Subscribed, MAX_CHANNELS_PER_CONNECTION};

use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("the connection is gone")]
    ConnectionGone,
    #[error("at most {MAX_CHANNELS_PER_CONNECTION} channels per connection")]
    TooManyChannels,
    #[error("too many messages on this connection; wait a minute")]
    TooFast,
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

/// The connection counter a new connection takes a slot of: its user's when signed in (the
/// token's `sub`, which the authorizer passes as `user`), its source IP's when anonymous.
pub fn limit_for(
    viewer: &Viewer,
    user: Option<&str>,
    source_ip: Option<&str>,
    config: &crate::Config,
) -> Option<ConnectionLimit> {
    match (viewer, user, source_ip) {
        (Viewer::Anonymous, _, Some(ip)) if !ip.is_empty() => Some(ConnectionLimit {
            key: format!("ip:{ip}"),
            cap: config.max_connections_per_ip,
        }),
        (Viewer::Anonymous, _, _) => None,
        (viewer, user, _) => {
            let user = match (user, viewer) {
                (Some(user), _) if !user.is_empty() => user.to_owned(),
                // A context from before `user` was passed: the viewer stands for the user.
                (_, Viewer::Customer(id)) => id.to_string(),
                (_, Viewer::Vendor(id)) => format!("vendor:{id}"),
                _ => "admin".to_owned(),
            };
            Some(ConnectionLimit {
                key: format!("user:{user}"),
                cap: config.max_connections_per_user,
            })
        }
    }
}

/// Stores a connection the authorizer admitted, and who holds it, if its holder has a slot
/// left (`limit`, from [`limit_for`]); `Full` refuses it (HTTP 429 on the upgrade).
pub async fn connect(
    app: &App,
    connection_id: &str,
    viewer: &Viewer,
    limit: Option<&ConnectionLimit>,
    now: Timestamp,
) -> Result<Admitted, StoreError> {
    let admitted = app
        .store
        .put_connection(connection_id, viewer, limit, now)
        .await?;
    let outcome = match admitted {
        Admitted::Yes => "admitted",
        Admitted::Full => "refused",
    };
    metrics::count(metrics::LIVE_CONNECTIONS, outcome, 1);
    Ok(admitted)
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
    let keys: Vec<String> = granted.iter().map(Channel::key).collect();
    let shards = app.shard_counts.of(store, &keys, now).await?;
    app.shard_counts
        .occupy(store, connection_id, &granted, &shards, now)
        .await?;
    // Two subscribes of one connection at once: the loser reads the connection again.
    let mut retry = bouquet_store::retry::Retry::optimistic();
    loop {
        match store
            .subscribe(
                connection_id,
                &granted,
                &shards,
                token_expires_at,
                app.config.max_live_messages_per_minute,
                now,
            )
            .await
        {
            Ok(Subscribed::Done) => return Ok(outcome),
            Ok(Subscribed::Gone) => return Err(LiveError::ConnectionGone),
            Ok(Subscribed::Full) => return Err(LiveError::TooManyChannels),
            Ok(Subscribed::TooFast) => return Err(LiveError::TooFast),
            Err(StoreError::Contention(_)) if retry.wait().await => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// Unsubscribes from the named channels; returns the ones it understood.
pub async fn unsubscribe(
    app: &App,
    connection_id: &str,
    viewer: &Viewer,
    requested: &[String],
    now: Timestamp,
) -> Result<Vec<String>, LiveError> {
    let channels: Vec<Channel> = requested
        .iter()
        .filter_map(|name| Channel::request(name, viewer).ok())
        .collect();
    let mut retry = bouquet_store::retry::Retry::optimistic();
    loop {
        match app
            .store
            .unsubscribe(
                connection_id,
                &channels,
                app.config.max_live_messages_per_minute,
                now,
            )
            .await
        {
            Ok(Subscribed::Done | Subscribed::Full) => {
                return Ok(channels.iter().map(Channel::name).collect())
            }
            Ok(Subscribed::Gone) => return Err(LiveError::ConnectionGone),
            Ok(Subscribed::TooFast) => return Err(LiveError::TooFast),
            Err(StoreError::Contention(_)) if retry.wait().await => continue,
            Err(error) => return Err(error.into()),
        }
    }
}
