//! A crowded channel's digest windows: frames gathered, then flushed as one.

use super::*;

/// What adding a frame to a digest window came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digested {
    /// The window's first entry: its writer schedules the flush.
    First,
    Added,
    /// The window is being flushed: add it to the next one.
    Flushed,
}

impl Store {
    /// Adds `frame` (its JSON) to the digest of `channel_key` for `window`, as `entry`: the
    /// entry's newest version wins (a freshness move's key keeps its last score; an event's
    /// own id keeps that event). Each entry is an item of its own (`DIGEST#{key}#{window}` /
    /// `ENTRY#{entry}`), beside a small marker of the window (`DIGEST#{key}` /
    /// `WINDOW#{window}`) that counts them and says when the window is flushed: a write costs
    /// the frame's size, not the window's. Two writes: the entry, then the marker (so a
    /// flush that passed in between sends the frame in this window and the next: a frame is
    /// never lost, and clients drop a repeated event).
    pub async fn add_to_digest(
        &self,
        channel_key: &str,
        window: i64,
        entry: &str,
        frame: &str,
        version: u64,
        expires_at: Timestamp,
    ) -> Result<Digested, StoreError> {
        let expires = AttributeValue::N(expires_at.as_epoch_seconds().to_string());
        let mut item = digest_entry_key(channel_key, window, entry);
        item.insert("entity".into(), s("digestEntry"));
        item.insert("frame".into(), s(frame));
        item.insert("version".into(), AttributeValue::N(version.to_string()));
        item.insert("expiresAt".into(), expires.clone());
        let put = self
            .client
            .put_item()
            .table_name(&self.live_table)
            .set_item(Some(item))
            // A newer frame of this entry already in stays.
            .condition_expression("attribute_not_exists(version) OR version <= :version")
            .expression_attribute_values(":version", AttributeValue::N(version.to_string()))
            .send()
            .await;
        applied(put)?;
        let result = self
            .client
            .update_item()
            .table_name(&self.live_table)
            .set_key(Some(digest_key(channel_key, window)))
            .update_expression("SET expiresAt = :expires, entity = :entity ADD entries :one")
            // A window being flushed takes nothing more: the frame goes to the next one.
            .condition_expression("attribute_not_exists(flushed)")
            .expression_attribute_values(":expires", expires)
            .expression_attribute_values(":entity", s("digest"))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await;
        match result {
            Ok(output) => Ok(
                if output.attributes.as_ref().and_then(|a| number(a, "entries")) == Some(1) {
                    Digested::First
                } else {
                    Digested::Added
                },
            ),
            Err(error) => match error.as_service_error() {
                Some(
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(
                        _,
                    ),
                ) => Ok(Digested::Flushed),
                _ => Err(StoreError::backend(error)),
            },
        }
    }

    /// Closes a digest window and returns its frames (JSON texts): the marker is flagged in
    /// one `UpdateItem` (an entry added after this goes to the next window), then the
    /// window's entries are read with a consistent `Query` (paged). Taking it again returns
    /// the same.
    pub async fn take_digest(
        &self,
        channel_key: &str,
        window: i64,
    ) -> Result<Vec<String>, StoreError> {
        self.client
            .update_item()
            .table_name(&self.live_table)
            .set_key(Some(digest_key(channel_key, window)))
            .update_expression("SET flushed = :true")
            .expression_attribute_values(":true", AttributeValue::Bool(true))
            .send()
            .await
            .map_err(StoreError::backend)?;
        // Consistent: every entry written before the window closed is read.
        self.partition_texts(&digest_entries_pk(channel_key, window), "frame", None, true)
            .await
    }
}
