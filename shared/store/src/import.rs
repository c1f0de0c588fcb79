//! History written straight into a table (issue 50's season of data): the items the use cases
//! would have left, built by the same item mappings, in `BatchWriteItem`s of 25 with no
//! conditions and no events (history that was published long ago). For filling a table no one
//! trades on in the aggregates imported (a local season, a load test), never a use case's path.

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use futures::{StreamExt, TryStreamExt};

use bouquet_domain::review::{Rating, Review};
use bouquet_domain::vase::{Reading, Vase};
use bouquet_domain::{Bouquet, Order, Timestamp, VaseId, Vendor, VendorId};

use crate::error::StoreError;
use crate::items::{to_item, BouquetItem, Item, OrderItem, VendorItem};
use crate::store::Store;
use crate::{keys, reviews, vases};
use bouquet_retry::Retry;

/// One aggregate of history, as the use cases would have stored it.
pub enum Imported<'a> {
    Vendor(&'a Vendor),
    /// A bouquet and its shop's rating at its version (the catalogue's rating order), when
    /// the shop has reviews.
    Bouquet(&'a Bouquet, Option<(Rating, u64)>),
    Order(&'a Order),
    Review(&'a Review),
    /// A shop's rating at its version.
    Rating(VendorId, Rating, u64),
    Vase(&'a Vase),
    Reading(VaseId, &'a Reading, Timestamp),
}

/// How many batches are in flight at once.
const BATCHES_AT_ONCE: usize = 4;
/// DynamoDB's limit of requests in one `BatchWriteItem`.
const BATCH: usize = 25;

impl Imported<'_> {
    fn item(&self) -> Result<Item, StoreError> {
        match self {
            Imported::Vendor(vendor) => to_item(&VendorItem::from_domain(vendor)),
            Imported::Bouquet(bouquet, rating) => {
                let mut item = to_item(&BouquetItem::from_domain(bouquet))?;
                if let Some((rating, version)) = rating {
                    let id = bouquet.bouquet_id.to_string();
                    item.insert(
                        "ratingSort".into(),
                        aws_sdk_dynamodb::types::AttributeValue::S(keys::rating_sort(rating, &id)),
                    );
                    item.insert(
                        "ratingVersion".into(),
                        aws_sdk_dynamodb::types::AttributeValue::N(version.to_string()),
                    );
                }
                Ok(item)
            }
            Imported::Order(order) => to_item(&OrderItem::from_domain(order)),
            Imported::Review(review) => reviews::review_item(review),
            Imported::Rating(vendor_id, rating, version) => {
                Ok(reviews::rating_item(*vendor_id, rating, *version))
            }
            Imported::Vase(vase) => vases::vase_item(vase),
            Imported::Reading(vase_id, reading, received_at) => {
                vases::reading_item(*vase_id, reading, *received_at)
            }
        }
    }
}

impl Store {
    /// Writes `history` as it is, overwriting items of the same keys; how many items.
    pub async fn import(&self, history: &[Imported<'_>]) -> Result<usize, StoreError> {
        let items = history
            .iter()
            .map(Imported::item)
            .collect::<Result<Vec<Item>, StoreError>>()?;
        let count = items.len();
        let batches: Vec<Vec<Item>> = items.chunks(BATCH).map(<[Item]>::to_vec).collect();
        futures::stream::iter(batches)
            .map(|batch| self.write_batch(batch))
            .buffer_unordered(BATCHES_AT_ONCE)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(count)
    }

    /// One `BatchWriteItem`, again for what DynamoDB leaves unprocessed.
    async fn write_batch(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let mut pending = items
            .into_iter()
            .map(|item| {
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map(|put| WriteRequest::builder().put_request(put).build())
                    .map_err(StoreError::request)
            })
            .collect::<Result<Vec<WriteRequest>, StoreError>>()?;
        let mut retry = Retry::attempts(8);
        while !pending.is_empty() {
            if !retry.next().await {
                return Err(StoreError::Contention(Vec::new()));
            }
            let output = self
                .client
                .batch_write_item()
                .request_items(&self.table, pending)
                .send()
                .await
                .map_err(StoreError::backend)?;
            pending = output
                .unprocessed_items
                .and_then(|mut left| left.remove(&self.table))
                .unwrap_or_default();
        }
        Ok(())
    }
}
