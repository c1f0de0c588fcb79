//! Consistent multi-item reads: one `BatchGetItem` (repeated only for keys DynamoDB leaves
//! unprocessed under throttling).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use crate::error::StoreError;
use crate::items::Item;
use crate::store::Store;
use bouquet_retry::Retry;

impl Store {
    /// The items found for `keys`, by partition key.
    pub(crate) async fn batch_get(
        &self,
        keys: Vec<Item>,
    ) -> Result<HashMap<String, Item>, StoreError> {
        self.batch_get_in(&self.table, keys).await
    }

    /// The same in `table`.
    pub(crate) async fn batch_get_in(
        &self,
        table: &str,
        keys: Vec<Item>,
    ) -> Result<HashMap<String, Item>, StoreError> {
        Ok(self
            .batch_get_all(table, keys)
            .await?
            .into_iter()
            .filter_map(|item| match item.get("pk") {
                Some(AttributeValue::S(pk)) => Some((pk.clone(), item)),
                _ => None,
            })
            .collect())
    }

    /// The items found for `keys` in `table`, in no order (for keys sharing a partition).
    pub(crate) async fn batch_get_all(
        &self,
        table: &str,
        keys: Vec<Item>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::new();
        if keys.is_empty() {
            return Ok(found);
        }
        let mut pending = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(StoreError::request)?,
        );
        let mut retry = Retry::attempts(5);
        loop {
            let Some(request) = pending.take() else { break };
            let output = self
                .client
                .batch_get_item()
                .request_items(table, request)
                .send()
                .await
                .map_err(StoreError::backend)?;
            for item in output
                .responses
                .unwrap_or_default()
                .remove(table)
                .unwrap_or_default()
            {
                found.push(item);
            }
            pending = output
                .unprocessed_keys
                .and_then(|mut u| u.remove(table))
                .filter(|k| !k.keys.is_empty());
            if pending.is_some() && !retry.wait().await {
                break;
            }
        }
        if pending.is_some() {
            return Err(StoreError::Contention(vec![]));
        }
        Ok(found)
    }
}
