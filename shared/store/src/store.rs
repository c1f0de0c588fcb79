//! The store itself: the table's client and names, and the one read every module shares. Each
//! module beside it adds the reads and writes of one kind of item (`impl Store`); this module
//! names none of them.

use aws_sdk_dynamodb::Client;

use crate::error::StoreError;
use crate::items;

/// The marketplace table, and the table of live connections. Cheap to clone: the SDK client
/// is reference-counted.
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) client: Client,
    pub(crate) table: String,
    /// Live connections, subscriptions, channel shard counts and connection counters: churn,
    /// not domain state, kept off the marketplace table's stream (the outbox) so that a crowd
    /// connecting never delays an event. The marketplace table itself unless set.
    pub(crate) live_table: String,
}

impl Store {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        let table = table.into();
        Self {
            client,
            live_table: table.clone(),
            table,
        }
    }

    /// Keeps live connections in `live_table` (the template's `LiveTable`).
    pub fn with_live_table(mut self, live_table: impl Into<String>) -> Self {
        self.live_table = live_table.into();
        self
    }

    /// One item by key; `consistent` when a conditional write will follow the read.
    pub(crate) async fn get_item(
        &self,
        key: items::Item,
        consistent: bool,
    ) -> Result<Option<items::Item>, StoreError> {
        self.get_item_in(&self.table, key, consistent).await
    }

    /// One item by key, read into its domain value as `I` stores it.
    pub(crate) async fn get_stored<I: items::Stored>(
        &self,
        key: items::Item,
        consistent: bool,
    ) -> Result<Option<I::Domain>, StoreError> {
        self.get_item(key, consistent)
            .await?
            .map(I::read)
            .transpose()
    }

    pub(crate) async fn get_item_in(
        &self,
        table: &str,
        key: items::Item,
        consistent: bool,
    ) -> Result<Option<items::Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(table)
            .set_key(Some(key))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(output.item)
    }
}
