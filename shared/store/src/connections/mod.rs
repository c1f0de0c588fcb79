//! Live-update connections and their subscriptions (docs/contract.md, "Live updates").
//!
//! - the connection: `CONNECTION#{id}` / `CONNECTION`, with who holds it and, in the map
//!   `subscriptions`, the shard of each channel it subscribed to (so a disconnect knows what
//!   to delete, and a second subscribe to a channel lands where the first did);
//! - one item per subscription: `CHANNEL#{key}#{shard}` / `CONNECTION#{id}`. A fan-out worker
//!   reads one shard with one `Query` (paged), no Scan;
//! - a channel's shard count: `CHANNEL#{key}` / `SHARDS`. Subscribers are placed by a hash
//!   of their connection id modulo the count; the count only grows (a fan-out worker doubles
//!   it when a shard holds more than [`SHARD_SUBSCRIBERS`]), so every subscription ever
//!   placed sits in a shard below the current count. A channel without the item has its
//!   initial count ([`initial_shards`]).
//!
//! - a public channel's occupancy: `OCCUPIED#{key}` / `OCCUPIED`, per shard (`s{index}`) the
//!   time until which it may hold a subscriber, a lease each subscriber's placement extends
//!   (never shortens) to its subscription's expiry. The broadcaster queues work only for the
//!   shards whose lease runs: an event nobody watches costs no unit. A lease outlives an
//!   unsubscribe (work for nobody until it lapses, never a subscriber missed).
//!
//! Every item but the shard count expires (`expiresAt`, TTL) after API Gateway's 2 h
//! connection limit plus a margin: a connection that vanished without `$disconnect` (or
//! whose delete failed) is gone from the table without a sweeper.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};

use bouquet_domain::channels::{Channel, Viewer};
use bouquet_domain::ids::InvalidId;
use bouquet_domain::{CustomerId, Timestamp, VendorId};

use crate::error::{applied, StoreError, Target};
use crate::store::Store;
use crate::tx::{Expr, Tx};

mod audience;
mod digest;
mod shards;

pub use digest::Digested;

/// API Gateway closes a WebSocket connection after 2 h; the items outlive it a little.
pub const CONNECTION_RETENTION: Duration = Duration::from_secs(2 * 3600 + 600);
/// Initial subscription shards of the `catalogue` channel, which every storefront visitor
/// joins. A shard is one worker's read and push: at about 30 ms a `PostToConnection` and 100
/// at once, [`SHARD_SUBSCRIBERS`] take about 0.3 s; 16 shards serve 16,000 visitors at that
/// pace before the channel grows (docs/capacity.md).
pub const CATALOGUE_SUBSCRIPTION_SHARDS: u32 = 16;
/// A shard read holding more subscribers than this doubles its channel's shard count.
pub const SHARD_SUBSCRIBERS: usize = 1_000;
/// The most shards a channel grows to (256,000 subscribers at [`SHARD_SUBSCRIBERS`]).
pub const MAX_SUBSCRIPTION_SHARDS: u32 = 256;
/// By default, a channel with this many shards or more (16,000 to 32,000 watchers) gets its
/// frames as a digest, one frame per window, instead of one per event (docs/capacity.md; the
/// template's `LiveDigestFromShards`).
pub const DIGEST_FROM_SHARDS: u32 = 32;
/// Channels one connection may hold (a `TransactWriteItems` holds 100 items).
pub const MAX_CHANNELS_PER_CONNECTION: usize = 50;

/// A connection as `$connect` stored it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveConnection {
    pub connection_id: String,
    pub viewer: Viewer,
    pub connected_at: Timestamp,
    /// Channel keys subscribed to, with the shard each subscription sits in.
    pub subscriptions: std::collections::BTreeMap<String, u32>,
    /// The connection counter it holds a slot of (`ip:{address}`, `user:{sub}`), if any.
    pub limit_key: Option<String>,
    /// Its messages: the minute (epoch minutes) being counted, and how many so far.
    pub message_window: i64,
    pub messages: u32,
}

/// Whether a new connection was admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    Yes,
    /// The counter it would take a slot of is at its cap.
    Full,
}

/// A bound on the connections one holder (a source IP, a user) may hold at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionLimit {
    /// `ip:{address}` or `user:{sub}`.
    pub key: String,
    pub cap: u32,
}

/// What a subscribe came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subscribed {
    Done,
    /// The connection is gone (a subscribe racing its disconnect leaves nothing behind).
    Gone,
    /// The connection already holds [`MAX_CHANNELS_PER_CONNECTION`] channels.
    Full,
    /// The connection sent its minute's share of messages.
    TooFast,
}

fn connection_key(connection_id: &str) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("CONNECTION#{connection_id}"), "CONNECTION")
}

/// The shard a connection's subscription to a channel of `count` shards is placed in.
pub fn placement(connection_id: &str, count: u32) -> u32 {
    crate::keys::shard_of(connection_id, count.max(1))
}

/// The shard count a channel starts with: only the catalogue starts sharded; any channel
/// grows when it gets crowded.
pub fn initial_shards(channel_key: &str) -> u32 {
    if channel_key == "catalogue" {
        CATALOGUE_SUBSCRIPTION_SHARDS
    } else {
        1
    }
}

fn limit_counter_key(limit_key: &str) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("LIMIT#{limit_key}"), "CONNECTIONS")
}

/// The minute `now` falls in (epoch minutes): a connection's messages are counted per minute.
fn minute_of(now: Timestamp) -> i64 {
    now.as_epoch_seconds().div_euclid(60)
}

fn digest_key(channel_key: &str, window: i64) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("DIGEST#{channel_key}"), &format!("WINDOW#{window}"))
}

fn digest_entries_pk(channel_key: &str, window: i64) -> String {
    format!("DIGEST#{channel_key}#{window}")
}

fn digest_entry_key(
    channel_key: &str,
    window: i64,
    entry: &str,
) -> HashMap<String, AttributeValue> {
    crate::keys::key(
        digest_entries_pk(channel_key, window),
        &format!("ENTRY#{entry}"),
    )
}

fn occupancy_key(channel_key: &str) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("OCCUPIED#{channel_key}"), "OCCUPIED")
}

/// A channel's shards: how many there are, and which may hold a subscriber now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelShards {
    pub count: u32,
    pub occupied: std::collections::BTreeSet<u32>,
}

fn shards_key(channel_key: &str) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("CHANNEL#{channel_key}"), "SHARDS")
}

fn subscription_pk(channel_key: &str, shard: u32) -> String {
    format!("CHANNEL#{channel_key}#{shard}")
}

fn subscription_key(
    channel_key: &str,
    shard: u32,
    connection_id: &str,
) -> HashMap<String, AttributeValue> {
    crate::keys::key(
        subscription_pk(channel_key, shard),
        &format!("CONNECTION#{connection_id}"),
    )
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn viewer_attributes(viewer: &Viewer) -> Vec<(&'static str, AttributeValue)> {
    match viewer {
        Viewer::Anonymous => vec![("role", s("anonymous"))],
        Viewer::Customer(id) => vec![("role", s("customer")), ("sub", s(id.to_string()))],
        Viewer::Vendor(id) => vec![("role", s("vendor")), ("vendorId", s(id.to_string()))],
        Viewer::Admin => vec![("role", s("admin"))],
    }
}

fn read_viewer(item: &HashMap<String, AttributeValue>) -> Result<Viewer, StoreError> {
    let get = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
    };
    // The attributes `viewer_attributes` wrote, read back as they are: a vendor's connection
    // keeps its shop, not a `sub` (reading it as claims refused every vendor connection).
    let id = |name: &str| {
        get(name).ok_or_else(|| StoreError::Corrupt(format!("connection without {name}")))
    };
    let corrupt = |e: InvalidId| StoreError::Corrupt(format!("connection viewer: {e}"));
    match get("role") {
        Some("anonymous") => Ok(Viewer::Anonymous),
        Some("admin") => Ok(Viewer::Admin),
        Some("customer") => Ok(Viewer::Customer(
            CustomerId::parse(id("sub")?).map_err(corrupt)?,
        )),
        Some("vendor") => Ok(Viewer::Vendor(
            VendorId::parse(id("vendorId")?).map_err(corrupt)?,
        )),
        other => Err(StoreError::Corrupt(format!(
            "connection with role {other:?}"
        ))),
    }
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

/// A message counted against its connection's minute.
struct Counted {
    window: i64,
    messages: u32,
}

/// Counts one more message of `connection` at `now`, or `None` past `max_per_minute`.
fn count_message(
    connection: &LiveConnection,
    max_per_minute: u32,
    now: Timestamp,
) -> Option<Counted> {
    let window = minute_of(now);
    let messages = if connection.message_window == window {
        connection.messages + 1
    } else {
        1
    };
    (messages <= max_per_minute).then_some(Counted { window, messages })
}

impl Store {
    /// Stores a new connection (`$connect`), taking a slot of its holder's counter when it
    /// has a `limit`: one `TransactWriteItems` (the counter's conditional `ADD`, the
    /// connection's put). `Full` when the holder is at its cap. The counter's own `expiresAt`
    /// moves on with each connect, so slots a lost `$disconnect` never gave back are freed
    /// by TTL at the latest [`CONNECTION_RETENTION`] after the holder's last connect.
    pub async fn put_connection(
        &self,
        connection_id: &str,
        viewer: &Viewer,
        limit: Option<&ConnectionLimit>,
        now: Timestamp,
    ) -> Result<Admitted, StoreError> {
        let expires = now
            .plus(CONNECTION_RETENTION)
            .as_epoch_seconds()
            .to_string();
        let mut item = connection_key(connection_id);
        item.insert("entity".into(), s("connection"));
        item.insert("connectionId".into(), s(connection_id));
        item.insert(
            "connectedAt".into(),
            AttributeValue::N(now.as_millis().to_string()),
        );
        item.insert("expiresAt".into(), AttributeValue::N(expires.clone()));
        // Subscribing sets `subscriptions.#channel`: the map must exist.
        item.insert("subscriptions".into(), AttributeValue::M(HashMap::new()));
        item.insert("messageWindow".into(), AttributeValue::N("0".into()));
        item.insert("messages".into(), AttributeValue::N("0".into()));
        for (name, value) in viewer_attributes(viewer) {
            item.insert(name.into(), value);
        }
        let mut tx = Tx::new();
        if let Some(limit) = limit {
            item.insert("limitKey".into(), s(&limit.key));
            tx.update(
                Target::ConnectionLimit,
                &self.live_table,
                limit_counter_key(&limit.key),
                Expr::new("ADD #open :one SET expiresAt = :expires, entity = :entity")
                    .n(":one", 1)
                    .n(":expires", &expires)
                    .s(":entity", "connectionLimit"),
                Expr::new("attribute_not_exists(#open) OR #open < :cap")
                    .name("#open", "open")
                    .n(":cap", limit.cap),
            )?;
        }
        tx.put(Target::Connection, &self.live_table, item, None)?;
        match tx.commit(self).await {
            Ok(()) => Ok(Admitted::Yes),
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts
                    .iter()
                    .any(|c| c.target == Target::ConnectionLimit) =>
            {
                Ok(Admitted::Full)
            }
            Err(other) => Err(other),
        }
    }

    /// How many connections the holder `limit_key` holds now.
    pub async fn open_connections(&self, limit_key: &str) -> Result<u32, StoreError> {
        Ok(self
            .get_item_in(&self.live_table, limit_counter_key(limit_key), true)
            .await?
            .and_then(|item| number(&item, "open"))
            .unwrap_or(0) as u32)
    }

    pub async fn connection(
        &self,
        connection_id: &str,
    ) -> Result<Option<LiveConnection>, StoreError> {
        let Some(item) = self
            .get_item_in(&self.live_table, connection_key(connection_id), true)
            .await?
        else {
            return Ok(None);
        };
        let subscriptions = item
            .get("subscriptions")
            .and_then(|v| v.as_m().ok())
            .map(|map| {
                map.iter()
                    .filter_map(|(key, shard)| {
                        Some((key.clone(), shard.as_n().ok()?.parse().ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(LiveConnection {
            connection_id: connection_id.to_owned(),
            viewer: read_viewer(&item)?,
            connected_at: number(&item, "connectedAt")
                .map(|ms| Timestamp::from_millis(ms as i64))
                .ok_or_else(|| StoreError::Corrupt("connection without connectedAt".into()))?,
            subscriptions,
            limit_key: item.get("limitKey").and_then(|v| v.as_s().ok()).cloned(),
            message_window: number(&item, "messageWindow").unwrap_or(0) as i64,
            messages: number(&item, "messages").unwrap_or(0) as u32,
        }))
    }

    /// Subscribes a live connection to `channels`, all or none, each in the shard its
    /// connection id falls in under `shards` (the channel's count; the channel's initial
    /// count when absent). A channel the connection already holds keeps its shard. A
    /// private channel's subscription expires at `private_until` (the connection's token)
    /// if that comes first.
    pub async fn subscribe(
        &self,
        connection_id: &str,
        channels: &[Channel],
        shards: &HashMap<String, u32>,
        private_until: Option<Timestamp>,
        max_per_minute: u32,
        now: Timestamp,
    ) -> Result<Subscribed, StoreError> {
        let (connection, counted) =
            match self.message_on(connection_id, max_per_minute, now).await? {
                Ok(read) => read,
                Err(outcome) => return Ok(outcome),
            };
        if channels.is_empty() {
            return Ok(Subscribed::Done);
        }
        let new: Vec<&Channel> = channels
            .iter()
            .filter(|c| !connection.subscriptions.contains_key(&c.key()))
            .collect();
        if connection.subscriptions.len() + new.len() > MAX_CHANNELS_PER_CONNECTION {
            return Ok(Subscribed::Full);
        }
        let retained = now.plus(CONNECTION_RETENTION);
        let expires = |channel: &Channel| {
            let until = match private_until {
                Some(until) if !channel.is_public() && until < retained => until,
                _ => retained,
            };
            until.as_epoch_seconds().to_string()
        };
        let shard_of = |key: &str| {
            connection
                .subscriptions
                .get(key)
                .copied()
                .unwrap_or_else(|| {
                    let count = shards
                        .get(key)
                        .copied()
                        .unwrap_or_else(|| initial_shards(key));
                    placement(connection_id, count)
                })
        };
        // Where each channel's subscription goes, recorded on the connection; the condition
        // holds the count of channels, so two subscribes at once cannot pass the cap.
        let mut update = String::from("SET messageWindow = :window, messages = :messages");
        let mut expr = Expr::default()
            .n(":window", counted.window)
            .n(":messages", counted.messages);
        for (i, channel) in channels.iter().enumerate() {
            update.push_str(&format!(", subscriptions.#c{i} = :s{i}"));
            expr = expr
                .name(&format!("#c{i}"), &channel.key())
                .n(&format!(":s{i}"), shard_of(&channel.key()));
        }
        expr.text = update;
        // Optimistic on what was read: the channels held and the messages counted.
        let condition = Expr::new(
            "attribute_exists(pk) AND size(subscriptions) = :held AND messageWindow = :readWindow AND messages = :readMessages",
        )
        .n(":held", connection.subscriptions.len())
        .n(":readWindow", connection.message_window)
        .n(":readMessages", connection.messages);
        let mut tx = Tx::new();
        tx.update(
            Target::Connection,
            &self.live_table,
            connection_key(connection_id),
            expr,
            condition,
        )?;
        for channel in channels {
            let key = channel.key();
            let mut item = subscription_key(&key, shard_of(&key), connection_id);
            item.insert("entity".into(), s("subscription"));
            item.insert("connectionId".into(), s(connection_id));
            item.insert("channel".into(), s(key));
            item.insert("expiresAt".into(), AttributeValue::N(expires(channel)));
            tx.put(Target::Connection, &self.live_table, item, None)?;
        }
        self.commit_on_connection(tx, connection_id).await
    }

    /// Unsubscribes from `channels` (a channel not subscribed to is no error).
    pub async fn unsubscribe(
        &self,
        connection_id: &str,
        channels: &[Channel],
        max_per_minute: u32,
        now: Timestamp,
    ) -> Result<Subscribed, StoreError> {
        let (connection, counted) =
            match self.message_on(connection_id, max_per_minute, now).await? {
                Ok(read) => read,
                Err(outcome) => return Ok(outcome),
            };
        let held: Vec<(String, u32)> = channels
            .iter()
            .filter_map(|c| Some((c.key(), *connection.subscriptions.get(&c.key())?)))
            .collect();
        let mut expr = Expr::default()
            .n(":window", counted.window)
            .n(":messages", counted.messages);
        let mut removes = Vec::new();
        for (i, (key, _)) in held.iter().enumerate() {
            removes.push(format!("subscriptions.#c{i}"));
            expr = expr.name(&format!("#c{i}"), key);
        }
        expr.text = "SET messageWindow = :window, messages = :messages".into();
        if !removes.is_empty() {
            expr.text
                .push_str(&format!(" REMOVE {}", removes.join(", ")));
        }
        let mut tx = Tx::new();
        tx.update(
            Target::Connection,
            &self.live_table,
            connection_key(connection_id),
            expr,
            Expr::new(
                "attribute_exists(pk) AND messageWindow = :readWindow AND messages = :readMessages",
            )
            .n(":readWindow", connection.message_window)
            .n(":readMessages", connection.messages),
        )?;
        for (key, shard) in &held {
            tx.delete(
                Target::Connection,
                &self.live_table,
                subscription_key(key, *shard, connection_id),
                Expr::default(),
            )?;
        }
        self.commit_on_connection(tx, connection_id).await
    }

    /// The connection and the count of one more message on it, or what to answer instead
    /// (`Gone`, `TooFast`).
    async fn message_on(
        &self,
        connection_id: &str,
        max_per_minute: u32,
        now: Timestamp,
    ) -> Result<Result<(LiveConnection, Counted), Subscribed>, StoreError> {
        let Some(connection) = self.connection(connection_id).await? else {
            return Ok(Err(Subscribed::Gone));
        };
        Ok(match count_message(&connection, max_per_minute, now) {
            Some(counted) => Ok((connection, counted)),
            None => Err(Subscribed::TooFast),
        })
    }

    /// Commits a change conditional on the connection as it was read: if the condition
    /// failed, the connection is gone, or another message changed it in between (the caller
    /// reads it again).
    async fn commit_on_connection(
        &self,
        tx: Tx,
        connection_id: &str,
    ) -> Result<Subscribed, StoreError> {
        match tx.commit(self).await {
            Ok(()) => Ok(Subscribed::Done),
            Err(StoreError::ConditionFailed(_)) => match self.connection(connection_id).await? {
                None => Ok(Subscribed::Gone),
                Some(_) => Err(StoreError::Contention(vec![Target::Connection])),
            },
            Err(other) => Err(other),
        }
    }

    /// Removes a connection and its subscriptions (`$disconnect`, or a push that found it
    /// gone). Removing one that is not there is no error.
    pub async fn remove_connection(&self, connection_id: &str) -> Result<(), StoreError> {
        let Some(connection) = self.connection(connection_id).await? else {
            return Ok(());
        };
        let keys: Vec<HashMap<String, AttributeValue>> = connection
            .subscriptions
            .iter()
            .map(|(key, shard)| subscription_key(key, *shard, connection_id))
            .collect();
        // Subscriptions first: should this fail, the connection item still names them.
        for chunk in keys.chunks(25) {
            let mut requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|key| {
                    DeleteRequest::builder()
                        .set_key(Some(key.clone()))
                        .build()
                        .map(|delete| WriteRequest::builder().delete_request(delete).build())
                        .map_err(StoreError::request)
                })
                .collect::<Result<_, _>>()?;
            let mut retry = crate::retry::Retry::attempts(5);
            while retry.next().await {
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.live_table, requests.clone())
                    .send()
                    .await
                    .map_err(StoreError::backend)?;
                requests = output
                    .unprocessed_items
                    .and_then(|mut items| items.remove(&self.live_table))
                    .unwrap_or_default();
                if requests.is_empty() {
                    break;
                }
            }
            if !requests.is_empty() {
                tracing::warn!(
                    %connection_id,
                    unprocessed = requests.len(),
                    "connection items not deleted; their TTL removes them"
                );
                return Err(StoreError::Contention(vec![Target::Connection]));
            }
        }
        // The connection and its slot together, in one transaction: only the removal that
        // deleted the item gives the slot back (a `$disconnect` racing a push's 410 releases
        // it once), and neither a crash between two writes nor a lost response (the SDK's
        // retry carries the transaction's token: DynamoDB answers it as the first) can delete
        // the connection and keep its slot. The chaos soak found that leak (issue 29).
        let gone = Expr::new("attribute_exists(pk)");
        let mut tx = Tx::new();
        tx.delete(
            Target::Connection,
            &self.live_table,
            connection_key(connection_id),
            gone.clone(),
        )?;
        if let Some(limit_key) = &connection.limit_key {
            tx.update(
                Target::ConnectionLimit,
                &self.live_table,
                limit_counter_key(limit_key),
                Expr::new("ADD #open :minus")
                    .name("#open", "open")
                    .n(":minus", -1),
                Expr::new("#open > :zero")
                    .name("#open", "open")
                    .n(":zero", 0),
            )?;
        }
        match tx.commit(self).await {
            Ok(()) => Ok(()),
            // The counter expired (TTL) or is at zero: nothing to give back; the connection
            // still goes.
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts
                    .iter()
                    .all(|c| c.target == Target::ConnectionLimit) =>
            {
                let mut tx = Tx::new();
                tx.delete(
                    Target::Connection,
                    &self.live_table,
                    connection_key(connection_id),
                    gone,
                )?;
                match tx.commit(self).await {
                    Err(StoreError::ConditionFailed(_)) => Ok(()),
                    other => other,
                }
            }
            // Already removed by the other remover.
            Err(StoreError::ConditionFailed(_)) => Ok(()),
            Err(other) => Err(other),
        }
    }
}
