//! A channel's subscription shards: how many, which may hold a subscriber now (the leases), and
//! their growth when one gets crowded.

use super::*;

impl Store {
    /// The current shard count of each channel key (its initial count when never grown):
    /// one `BatchGetItem`. The count only grows, so a count read a little stale still
    /// places a subscriber in a shard that is read; the broadcaster reads it fresh.
    pub async fn subscription_shards(
        &self,
        channel_keys: &[String],
    ) -> Result<HashMap<String, u32>, StoreError> {
        let found = self
            .batch_get_in(
                &self.live_table,
                channel_keys.iter().map(|key| shards_key(key)).collect(),
            )
            .await?;
        Ok(channel_keys
            .iter()
            .map(|key| {
                let grown = found
                    .get(&format!("CHANNEL#{key}"))
                    .and_then(|item| number(item, "shards"))
                    .and_then(|n| u32::try_from(n).ok());
                (
                    key.clone(),
                    grown.unwrap_or_else(|| initial_shards(key)).max(1),
                )
            })
            .collect())
    }

    /// Each channel's shard count and the shards whose lease runs at `now`: one
    /// `BatchGetItem` (two items a channel), read consistently, for the broadcaster.
    pub async fn channel_shards(
        &self,
        channel_keys: &[String],
        now: Timestamp,
    ) -> Result<HashMap<String, ChannelShards>, StoreError> {
        let keys = channel_keys
            .iter()
            .flat_map(|key| [shards_key(key), occupancy_key(key)])
            .collect();
        let found = self.batch_get_in(&self.live_table, keys).await?;
        let now = now.as_epoch_seconds();
        Ok(channel_keys
            .iter()
            .map(|key| {
                let count = found
                    .get(&format!("CHANNEL#{key}"))
                    .and_then(|item| number(item, "shards"))
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or_else(|| initial_shards(key))
                    .max(1);
                let occupied = found
                    .get(&format!("OCCUPIED#{key}"))
                    .into_iter()
                    .flatten()
                    .filter_map(|(name, value)| {
                        let shard = name.strip_prefix('s')?.parse::<u32>().ok()?;
                        let until = match value {
                            AttributeValue::N(n) => n.parse::<i64>().ok()?,
                            _ => return None,
                        };
                        (until > now && shard < count).then_some(shard)
                    })
                    .collect();
                (key.clone(), ChannelShards { count, occupied })
            })
            .collect())
    }

    /// Extends the lease of `channel_key`'s shard `shard` to `until` (a lease never
    /// shortens): the shard may hold a subscriber until then. The item expires with its
    /// latest lease.
    pub async fn occupy_shard(
        &self,
        channel_key: &str,
        shard: u32,
        until: Timestamp,
    ) -> Result<(), StoreError> {
        let until = until.as_epoch_seconds();
        let result = self
            .client
            .update_item()
            .table_name(&self.live_table)
            .set_key(Some(occupancy_key(channel_key)))
            .update_expression("SET #shard = :until, expiresAt = :expires, entity = :entity")
            .condition_expression("attribute_not_exists(#shard) OR #shard < :until")
            .expression_attribute_names("#shard", format!("s{shard}"))
            .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
            .expression_attribute_values(":expires", AttributeValue::N((until + 600).to_string()))
            .expression_attribute_values(":entity", s("channelOccupancy"))
            .send()
            .await;
        // A later lease already there is as good.
        applied(result).map(|_| ())
    }

    /// Raises a channel's shard count from `from` to `to` (never lowers it). `false` when
    /// another worker moved it first.
    pub async fn grow_subscription_shards(
        &self,
        channel_key: &str,
        from: u32,
        to: u32,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.live_table)
            .set_key(Some(shards_key(channel_key)))
            .update_expression("SET shards = :to, entity = :entity")
            .condition_expression(
                "(attribute_not_exists(shards) AND :from = :initial) OR shards = :from",
            )
            .expression_attribute_values(":to", AttributeValue::N(to.to_string()))
            .expression_attribute_values(":from", AttributeValue::N(from.to_string()))
            .expression_attribute_values(
                ":initial",
                AttributeValue::N(initial_shards(channel_key).to_string()),
            )
            .expression_attribute_values(":entity", s("channelShards"))
            .send()
            .await;
        applied(result)
    }
}
