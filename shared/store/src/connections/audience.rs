//! Who is subscribed: a channel's or one shard's subscribers, read by the fan-out.

use super::*;

impl Store {
    /// Every connection subscribed to `channel` whose subscription has not expired at `now`,
    /// all shards read at once (the channel's count read consistently).
    pub async fn subscribers(
        &self,
        channel: &Channel,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let key = channel.key();
        let count = self
            .subscription_shards(std::slice::from_ref(&key))
            .await?
            .get(&key)
            .copied()
            .unwrap_or(1);
        let shards = futures::future::try_join_all(
            (0..count).map(|shard| self.shard_subscribers(&key, shard, now)),
        )
        .await?;
        Ok(shards.into_iter().flatten().collect())
    }

    /// The connections of one shard of a channel whose subscription has not expired at
    /// `now`: one `Query`, paged.
    pub async fn shard_subscribers(
        &self,
        channel_key: &str,
        shard: u32,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        // Past its `expiresAt` a subscription is over, whenever TTL deletes it (that can take
        // days): time is data.
        // Eventually consistent: half the read units, and a subscription a moment old may
        // miss this frame as it would miss one pushed a moment earlier.
        self.partition_texts(
            &subscription_pk(channel_key, shard),
            "connectionId",
            Some(now),
            false,
        )
        .await
    }

    /// One text attribute of every item of the live table's partition `pk`, read with a
    /// `Query` (`consistent` or not), paged; with `live_at`, only the items whose `expiresAt`
    /// is after it.
    pub(super) async fn partition_texts(
        &self,
        pk: &str,
        attribute: &str,
        live_at: Option<Timestamp>,
        consistent: bool,
    ) -> Result<Vec<String>, StoreError> {
        let mut texts = Vec::new();
        let mut start = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.live_table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(pk))
                .consistent_read(consistent)
                .projection_expression("#attribute")
                .expression_attribute_names("#attribute", attribute)
                .set_exclusive_start_key(start);
            if let Some(at) = live_at {
                query = query
                    .filter_expression("expiresAt > :now")
                    .expression_attribute_values(
                        ":now",
                        AttributeValue::N(at.as_epoch_seconds().to_string()),
                    );
            }
            let output = query.send().await.map_err(StoreError::backend)?;
            texts.extend(
                output
                    .items
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|item| item.get(attribute)?.as_s().ok().cloned()),
            );
            start = output.last_evaluated_key;
            if start.is_none() {
                return Ok(texts);
            }
        }
    }
}
