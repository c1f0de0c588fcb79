//! Carts. The one-vendor rule and the size limit are the cart update's condition, so two
//! concurrent adds of different vendors' bouquets to an empty cart cannot both succeed.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use bouquet_domain::cart::MAX_CART_ITEMS;
use bouquet_domain::{Bouquet, BouquetId, Cart, CustomerId, DomainError, Timestamp, VendorId};

use crate::error::StoreError;
use crate::items::Item;
use crate::keys;
use crate::store::Store;

pub(crate) fn cart_key(customer_id: &CustomerId) -> Item {
    keys::key(cart_pk(customer_id), keys::CART_SK)
}

pub(crate) fn cart_pk(customer_id: &CustomerId) -> String {
    format!("CART#{}", customer_id.as_str())
}

/// Decodes a cart item; `bouquetIds` is a string set, absent when the cart is empty.
pub(crate) fn decode_cart(
    customer_id: &CustomerId,
    item: Option<&Item>,
) -> Result<Cart, StoreError> {
    let Some(item) = item else {
        return Ok(Cart::empty(customer_id.clone()));
    };
    let bouquet_ids: BTreeSet<BouquetId> = match item.get("bouquetIds") {
        Some(AttributeValue::Ss(ids)) => ids
            .iter()
            .map(|id| BouquetId::parse(id).map_err(StoreError::corrupt))
            .collect::<Result<_, _>>()?,
        _ => BTreeSet::new(),
    };
    let vendor_id = match item.get("vendorId") {
        Some(AttributeValue::S(id)) if !bouquet_ids.is_empty() => {
            Some(VendorId::parse(id).map_err(StoreError::corrupt)?)
        }
        _ => None,
    };
    let version = match item.get("version") {
        Some(AttributeValue::N(n)) => n.parse().map_err(StoreError::corrupt)?,
        _ => 0,
    };
    Ok(Cart {
        customer_id: customer_id.clone(),
        vendor_id,
        bouquet_ids,
        version,
    })
}

/// Why adding to a cart was refused, from the cart as it is.
#[derive(Debug)]
pub enum CartRefusal {
    Domain(DomainError),
    Store(StoreError),
}

impl Store {
    pub async fn cart(&self, customer_id: &CustomerId) -> Result<Cart, StoreError> {
        let item = self.get_item(cart_key(customer_id), true).await?;
        decode_cart(customer_id, item.as_ref())
    }

    /// Adds `bouquet` (as read; its vendor never changes) in one conditional `UpdateItem`:
    /// the cart must be empty or of the same vendor, and not full unless it already holds it.
    pub async fn add_to_cart(
        &self,
        customer_id: &CustomerId,
        bouquet: &Bouquet,
        now: Timestamp,
    ) -> Result<Cart, CartRefusal> {
        let id = bouquet.bouquet_id.to_string();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(cart_key(customer_id)))
            .update_expression("SET vendorId = :vendor, customerId = :customer, entity = :entity, updatedAt = :now ADD bouquetIds :ids, version :one")
            .condition_expression("attribute_not_exists(bouquetIds) OR (vendorId = :vendor AND (contains(bouquetIds, :id) OR size(bouquetIds) < :max))")
            .expression_attribute_values(":vendor", AttributeValue::S(bouquet.vendor_id.to_string()))
            .expression_attribute_values(":customer", AttributeValue::S(customer_id.to_string()))
            .expression_attribute_values(":entity", AttributeValue::S("cart".into()))
            .expression_attribute_values(":now", AttributeValue::N(now.as_millis().to_string()))
            .expression_attribute_values(":ids", AttributeValue::Ss(vec![id.clone()]))
            .expression_attribute_values(":id", AttributeValue::S(id))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":max", AttributeValue::N(MAX_CART_ITEMS.to_string()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(output) => {
                decode_cart(customer_id, output.attributes.as_ref()).map_err(CartRefusal::Store)
            }
            Err(error) => {
                let service = error.into_service_error();
                if let aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) = &service {
                    let current = decode_cart(customer_id, failed.item()).map_err(CartRefusal::Store)?;
                    let mut attempt = current.clone();
                    return Err(match attempt.add(bouquet, now) {
                        Err(refusal) => CartRefusal::Domain(refusal),
                        Ok(()) => CartRefusal::Store(StoreError::Contention(vec![])),
                    });
                }
                Err(CartRefusal::Store(StoreError::service(service)))
            }
        }
    }

    /// Removes a bouquet; removing one that is not there changes nothing.
    pub async fn remove_from_cart(
        &self,
        customer_id: &CustomerId,
        bouquet_id: BouquetId,
    ) -> Result<Cart, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(cart_key(customer_id)))
            .update_expression("DELETE bouquetIds :ids ADD version :one")
            .condition_expression("contains(bouquetIds, :id)")
            .expression_attribute_values(":ids", AttributeValue::Ss(vec![bouquet_id.to_string()]))
            .expression_attribute_values(":id", AttributeValue::S(bouquet_id.to_string()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(output) => decode_cart(customer_id, output.attributes.as_ref()),
            Err(error) => match error.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) => decode_cart(customer_id, failed.item()),
                other => Err(StoreError::service(other)),
            },
        }
    }
}
