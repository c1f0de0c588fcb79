//! Live-update connections and their subscriptions (API.md, "Live updates").
//!
//! - the connection: `CONNECTION#{id}` / `CONNECTION`, with who holds it and the set of
//!   channel keys it subscribed to (so a disconnect knows what to delete);
//! - one item per subscription: `CHANNEL#{key}#{shard}` / `CONNECTION#{id}`. The broadcaster
//!   reads a channel's subscribers with one `Query` per shard, no Scan. Only `catalogue` can be
//!   hot (every browser on the storefront): it has [`CATALOGUE_SUBSCRIPTION_SHARDS`] shards,
//!   chosen by connection id, so subscribing writes spread over partitions.
//!
//! Every item expires (`expiresAt`, TTL) after API Gateway's 2 h connection limit plus a
//! margin: a connection that vanished without `$disconnect` (or whose delete failed) is gone
//! from the table without a sweeper.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};

use bouquet_domain::channels::{Channel, Viewer};
use bouquet_domain::ids::InvalidId;
use bouquet_domain::{CustomerId, Timestamp, VendorId};

use crate::error::{StoreError, Target};
use crate::tx::{Expr, Tx};
use crate::Store;

/// API Gateway closes a WebSocket connection after 2 h; the items outlive it a little.
pub const CONNECTION_RETENTION: Duration = Duration::from_secs(2 * 3600 + 600);
/// Subscription shards of the `catalogue` channel (each shard's partition takes 1,000
/// writes/s: 4 shards admit bursts of 4,000 storefront connections subscribing per second).
pub const CATALOGUE_SUBSCRIPTION_SHARDS: u32 = 4;
/// Channels one connection may hold (a `TransactWriteItems` holds 100 items).
pub const MAX_CHANNELS_PER_CONNECTION: usize = 50;

/// A connection as `$connect` stored it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveConnection {
    pub connection_id: String,
    pub viewer: Viewer,
    pub connected_at: Timestamp,
    /// Channel keys subscribed to.
    pub channels: Vec<String>,
}

fn connection_key(connection_id: &str) -> HashMap<String, AttributeValue> {
    crate::keys::key(format!("CONNECTION#{connection_id}"), "CONNECTION")
}

/// Shards of a channel, by its key: only the catalogue is sharded.
fn shards(channel_key: &str) -> u32 {
    if channel_key == "catalogue" {
        CATALOGUE_SUBSCRIPTION_SHARDS
    } else {
        1
    }
}

fn subscription_pk(channel_key: &str, shard: u32) -> String {
    format!("CHANNEL#{channel_key}#{shard}")
}

fn subscription_key(channel_key: &str, connection_id: &str) -> HashMap<String, AttributeValue> {
    let shard = crate::keys::shard_of(connection_id, shards(channel_key));
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

impl Store {
    /// Stores a new connection (`$connect`).
    pub async fn put_connection(
        &self,
        connection_id: &str,
        viewer: &Viewer,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut item = connection_key(connection_id);
        item.insert("entity".into(), s("connection"));
        item.insert("connectionId".into(), s(connection_id));
        item.insert(
            "connectedAt".into(),
            AttributeValue::N(now.as_millis().to_string()),
        );
        item.insert(
            "expiresAt".into(),
            AttributeValue::N(
                now.plus(CONNECTION_RETENTION)
                    .as_epoch_seconds()
                    .to_string(),
            ),
        );
        for (name, value) in viewer_attributes(viewer) {
            item.insert(name.into(), value);
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    pub async fn connection(
        &self,
        connection_id: &str,
    ) -> Result<Option<LiveConnection>, StoreError> {
        let Some(item) = self.get_item(connection_key(connection_id), true).await? else {
            return Ok(None);
        };
        let mut channels: Vec<String> = item
            .get("channels")
            .and_then(|v| v.as_ss().ok())
            .cloned()
            .unwrap_or_default();
        channels.sort();
        Ok(Some(LiveConnection {
            connection_id: connection_id.to_owned(),
            viewer: read_viewer(&item)?,
            connected_at: item
                .get("connectedAt")
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse().ok())
                .map(Timestamp::from_millis)
                .ok_or_else(|| StoreError::Corrupt("connection without connectedAt".into()))?,
            channels,
        }))
    }

    /// Subscribes a live connection to `channels`, all or none: 404-like `Ok(false)` when the
    /// connection is gone (a subscribe racing its disconnect leaves nothing behind).
    /// A private channel's subscription expires at `private_until` (the connection's token) if
    /// that comes first.
    pub async fn subscribe(
        &self,
        connection_id: &str,
        channels: &[Channel],
        private_until: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        if channels.is_empty() {
            return Ok(self.connection(connection_id).await?.is_some());
        }
        let keys: Vec<String> = channels.iter().map(Channel::key).collect();
        let retained = now.plus(CONNECTION_RETENTION);
        let expires = |channel: &Channel| {
            let until = match private_until {
                Some(until) if !channel.is_public() && until < retained => until,
                _ => retained,
            };
            until.as_epoch_seconds().to_string()
        };
        let mut tx = Tx::new();
        tx.update(
            Target::Connection,
            &self.table,
            connection_key(connection_id),
            Expr::new("ADD channels :channels").ss(":channels", &keys),
            Expr::new("attribute_exists(pk) AND (attribute_not_exists(channels) OR size(channels) <= :room)")
                .n(":room", MAX_CHANNELS_PER_CONNECTION.saturating_sub(keys.len())),
        )?;
        for channel in channels {
            let mut item = subscription_key(&channel.key(), connection_id);
            item.insert("entity".into(), s("subscription"));
            item.insert("connectionId".into(), s(connection_id));
            item.insert("channel".into(), s(channel.key()));
            item.insert("expiresAt".into(), AttributeValue::N(expires(channel)));
            tx.put(Target::Connection, &self.table, item, None)?;
        }
        match tx.commit(self).await {
            Ok(()) => Ok(true),
            Err(StoreError::ConditionFailed(_)) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// Unsubscribes from `channels` (a channel not subscribed to is no error).
    pub async fn unsubscribe(
        &self,
        connection_id: &str,
        channels: &[Channel],
    ) -> Result<(), StoreError> {
        if channels.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = channels.iter().map(Channel::key).collect();
        let mut tx = Tx::new();
        tx.update(
            Target::Connection,
            &self.table,
            connection_key(connection_id),
            Expr::new("DELETE channels :channels").ss(":channels", &keys),
            Expr::new("attribute_exists(pk)"),
        )?;
        for channel in channels {
            tx.delete(
                Target::Connection,
                &self.table,
                subscription_key(&channel.key(), connection_id),
                Expr::default(),
            )?;
        }
        match tx.commit(self).await {
            Ok(()) | Err(StoreError::ConditionFailed(_)) => Ok(()),
            Err(other) => Err(other),
        }
    }

    /// Removes a connection and its subscriptions (`$disconnect`, or a push that found it
    /// gone). Removing one that is not there is no error.
    pub async fn remove_connection(&self, connection_id: &str) -> Result<(), StoreError> {
        let Some(connection) = self.connection(connection_id).await? else {
            return Ok(());
        };
        let mut keys: Vec<HashMap<String, AttributeValue>> = connection
            .channels
            .iter()
            .map(|key| subscription_key(key, connection_id))
            .collect();
        keys.push(connection_key(connection_id));
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
                    .request_items(&self.table, requests.clone())
                    .send()
                    .await
                    .map_err(StoreError::backend)?;
                requests = output
                    .unprocessed_items
                    .and_then(|mut items| items.remove(&self.table))
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
        Ok(())
    }

    /// The connections subscribed to `channel` whose subscription has not expired at `now`:
    /// one `Query` per shard (paged), the shards read at once, no Scan.
    pub async fn subscribers(
        &self,
        channel: &Channel,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let channel_key = channel.key();
        let shards = futures::future::try_join_all(
            (0..shards(&channel_key)).map(|shard| self.shard_subscribers(&channel_key, shard, now)),
        )
        .await?;
        Ok(shards.into_iter().flatten().collect())
    }

    async fn shard_subscribers(
        &self,
        channel_key: &str,
        shard: u32,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let mut connections = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(subscription_pk(channel_key, shard)))
                // Past its `expiresAt` a subscription is over, whenever TTL deletes it (that
                // can take days): time is data.
                .filter_expression("expiresAt > :now")
                .expression_attribute_values(
                    ":now",
                    AttributeValue::N(now.as_epoch_seconds().to_string()),
                )
                .projection_expression("connectionId")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            connections.extend(
                output
                    .items
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|item| item.get("connectionId")?.as_s().ok().cloned()),
            );
            start = output.last_evaluated_key;
            if start.is_none() {
                return Ok(connections);
            }
        }
    }
}
