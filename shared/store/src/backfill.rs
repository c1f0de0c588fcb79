//! Index keys for items written before their index existed (a one-off after an upgrade:
//! `backfill-index-keys`). DynamoDB backfills a new GSI only from items that carry its keys,
//! and an item gets them at its next write; these are written now instead. The one Scan in
//! the store: a maintenance pass, never a request's path.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::bouquets::{bouquet_key, decode_bouquet};
use crate::cursor;
use crate::error::StoreError;
use crate::items::{from_item, Item, OrderItem, VendorItem};
use crate::keys;
use crate::orders::decode_order;
use crate::store::Store;
use crate::tx::Expr;

/// Items that lack a key their entity now always has.
const LACKING_KEYS: &str = "(entity = :bouquet AND (attribute_not_exists(freshnessSort) OR attribute_not_exists(priceSort) OR attribute_not_exists(ratingSort))) OR (entity = :vendor AND sk = :vendorSk AND attribute_not_exists(vendorKey)) OR (entity = :order AND attribute_not_exists(vendorStatusKey))";

/// What one page of the pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BackfillPage {
    /// Items the page's Scan returned as lacking a key (it reads every item; the filter
    /// keeps only those).
    pub lacking: usize,
    /// Items given their keys by this page.
    pub rewritten: usize,
    /// Items that changed between the Scan and the write: their own write gave them the keys.
    pub moved: usize,
    /// Where the next page starts; `None` once the table has been read to its end.
    pub next_cursor: Option<String>,
}

impl Store {
    /// One page of the pass: up to `limit` items scanned from `cursor` (`None`: the start),
    /// and each that lacks a key given it, on the state that was read.
    pub async fn backfill_index_keys(
        &self,
        cursor: Option<&str>,
        limit: i32,
    ) -> Result<BackfillPage, StoreError> {
        let start: Option<HashMap<String, String>> = cursor.map(cursor::decode).transpose()?;
        let output = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression(LACKING_KEYS)
            .expression_attribute_values(":bouquet", AttributeValue::S("bouquet".into()))
            .expression_attribute_values(":vendor", AttributeValue::S("vendor".into()))
            .expression_attribute_values(":vendorSk", AttributeValue::S(keys::VENDOR_SK.into()))
            .expression_attribute_values(":order", AttributeValue::S("order".into()))
            .set_exclusive_start_key(start.map(|key| {
                key.into_iter()
                    .map(|(name, value)| (name, AttributeValue::S(value)))
                    .collect()
            }))
            .limit(limit)
            .send()
            .await
            .map_err(StoreError::backend)?;
        let mut page = BackfillPage {
            next_cursor: output.last_evaluated_key.map(|key| {
                let key: HashMap<String, String> = key
                    .into_iter()
                    .filter_map(|(name, value)| value.as_s().ok().map(|s| (name, s.clone())))
                    .collect();
                cursor::encode(&key)
            }),
            ..BackfillPage::default()
        };
        for item in output.items.unwrap_or_default() {
            page.lacking += 1;
            let Some((key, update, condition)) = keys_for(item)? else {
                continue;
            };
            let merged = Expr {
                text: update.text,
                names: update.names.into_iter().chain(condition.names).collect(),
                values: update.values.into_iter().chain(condition.values).collect(),
            };
            let written = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .update_expression(merged.text)
                .condition_expression(condition.text)
                .set_expression_attribute_names((!merged.names.is_empty()).then_some(merged.names))
                .set_expression_attribute_values(Some(merged.values))
                .send()
                .await;
            match written {
                Ok(_) => page.rewritten += 1,
                Err(error)
                    if error
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    page.moved += 1
                }
                Err(error) => return Err(StoreError::backend(error)),
            }
        }
        Ok(page)
    }
}

/// The item's key, the update that writes the keys it lacks, and the condition that it is
/// still as read (`None` for an item this pass does not know).
fn keys_for(item: Item) -> Result<Option<(Item, Expr, Expr)>, StoreError> {
    let entity = item.get("entity").and_then(|e| e.as_s().ok()).cloned();
    Ok(match entity.as_deref() {
        Some("bouquet") => {
            let bouquet = decode_bouquet(item)?;
            let id = bouquet.bouquet_id.to_string();
            let scored = match bouquet.freshness {
                Some(score) => Expr::new("freshness = :score").n(":score", score),
                None => Expr::new("attribute_not_exists(freshness)"),
            };
            let condition = Expr {
                text: format!(
                    "version = :version AND priceMinor = :price AND {}",
                    scored.text
                ),
                ..scored
            }
            .n(":version", bouquet.version)
            .n(":price", bouquet.price.minor());
            // Bouquets from before reviews: unrated until their shop's projector moves them.
            let update = Expr::new("SET freshnessSort = :freshnessSort, priceSort = :priceSort, ratingSort = if_not_exists(ratingSort, :ratingSort)")
                .s(
                    ":freshnessSort",
                    keys::freshness_sort(bouquet.freshness, &id),
                )
                .s(":priceSort", keys::price_sort(bouquet.price.minor(), &id))
                .s(":ratingSort", keys::rating_sort(&Default::default(), &id));
            Some((bouquet_key(&id), update, condition))
        }
        Some("vendor") => {
            let vendor = from_item::<VendorItem>(item)?.into_domain()?;
            let written = VendorItem::from_domain(&vendor);
            let update = Expr::new("SET vendorKey = :vendorKey, vendorSort = :vendorSort")
                .s(":vendorKey", written.vendor_key.unwrap_or_default())
                .s(":vendorSort", written.vendor_sort.unwrap_or_default());
            Some((
                keys::key(written.pk, keys::VENDOR_SK),
                update,
                Expr::new("attribute_exists(pk)"),
            ))
        }
        Some("order") => {
            let order = decode_order(item)?;
            let written = OrderItem::from_domain(&order);
            let update = Expr::new(
                "SET vendorStatusKey = :vendorStatusKey, vendorStatusSort = :vendorStatusSort",
            )
            .s(":vendorStatusKey", written.vendor_status_key)
            .s(":vendorStatusSort", written.vendor_status_sort);
            Some((
                keys::key(written.pk, keys::ORDER_SK),
                update,
                Expr::new("version = :version").n(":version", order.version),
            ))
        }
        _ => None,
    })
}
