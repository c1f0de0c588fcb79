use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use bouquet_domain::events::DomainEvent;
use bouquet_domain::{
    Bouquet, BouquetId, BouquetStatus, CustomerId, Order, OrderId, Timestamp, VendorId,
};

use crate::bouquets::{available_at_version, bouquet_key, decode_bouquet, decode_id_cursor};
use crate::cursor::{self, Page};
use crate::error::{StoreError, Target};
use crate::idempotency::{self, IdempotencyPut, IdempotencyRecord};
use crate::items::{from_item, to_item, Item, OrderItem};
use crate::keys;
use crate::query::IndexQuery;
use crate::tx::{Expr, Tx};
use crate::Store;

/// What a reservation needs to read before it writes.
#[derive(Debug)]
pub struct ReservationRead {
    /// In request order; `None` where no such bouquet exists.
    pub bouquets: Vec<Option<Bouquet>>,
    /// A live record for the request's idempotency key, if it was used before.
    pub idempotency: Option<IdempotencyRecord>,
}

impl Store {
    /// Reads the bouquets of a reservation and the idempotency record in one consistent
    /// `BatchGetItem`, so a replay costs this one call and a new reservation one more.
    pub async fn read_for_reservation(
        &self,
        bouquet_ids: &[BouquetId],
        idempotency_key: Option<&str>,
        now: Timestamp,
    ) -> Result<ReservationRead, StoreError> {
        let mut keys: Vec<Item> = bouquet_ids
            .iter()
            .map(|id| bouquet_key(&id.to_string()))
            .collect();
        if let Some(hash) = idempotency_key {
            keys.push(idempotency::key(hash));
        }
        let mut pending = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(StoreError::backend)?,
        );
        let mut found: HashMap<String, Item> = HashMap::new();
        // BatchGetItem may leave keys unprocessed under throttling; ask again for those.
        for attempt in 0..5u32 {
            let Some(request) = pending.take() else { break };
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20 << attempt)).await;
            }
            let output = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(StoreError::backend)?;
            for item in output
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                if let Some(AttributeValue::S(pk)) = item.get("pk") {
                    found.insert(pk.clone(), item);
                }
            }
            pending = output
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys.is_empty());
        }
        if pending.is_some() {
            return Err(StoreError::Contention(vec![]));
        }
        let bouquets = bouquet_ids
            .iter()
            .map(|id| {
                found
                    .remove(&keys::bouquet_pk(&id.to_string()))
                    .map(decode_bouquet)
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let idempotency = match idempotency_key {
            Some(hash) => {
                idempotency::record_from(found.remove(&format!("IDEMPOTENCY#{hash}")), now)?
            }
            None => None,
        };
        Ok(ReservationRead {
            bouquets,
            idempotency,
        })
    }

    /// The reservation: one `TransactWriteItems` that moves every bouquet (as read) to
    /// `reserved` if it is still at the version read and still available (or held past its
    /// deadline), puts the order and its event, and the idempotency record. All or nothing.
    pub async fn reserve(
        &self,
        order: &Order,
        bouquets: &[Bouquet],
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        tx.idempotency(&self.table, idempotency, now)?;
        for bouquet in bouquets {
            let BouquetStatus::Reserved { order_id, until } = reserved_state(bouquet, order) else {
                return Err(StoreError::corrupt(
                    "reserve() needs the bouquets as the order holds them",
                ));
            };
            let update = Expr::new("SET #status = :reservedStatus, orderId = :orderId, reservedUntil = :until, version = :nextVersion, updatedAt = :updatedAt")
                .s(":reservedStatus", "reserved")
                .s(":orderId", order_id.to_string())
                .n(":until", until.as_millis())
                .n(":nextVersion", bouquet.version)
                .n(":updatedAt", now.as_millis());
            // The version read is the version before the domain's reserve() bumped it.
            let condition = available_at_version(bouquet.version - 1, now);
            tx.update(
                Target::Bouquet(bouquet.bouquet_id),
                &self.table,
                bouquet_key(&bouquet.bouquet_id.to_string()),
                update,
                condition,
            )?;
        }
        let item = to_item(&OrderItem::from_domain(order))?;
        tx.put(
            Target::Order(order.order_id),
            &self.table,
            item,
            Some(Expr::new("attribute_not_exists(pk)")),
        )?;
        tx.event(&self.table, event)?;
        tx.commit(self).await
    }

    pub async fn order(&self, order_id: OrderId) -> Result<Option<Order>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(keys::key(
                keys::order_pk(&order_id.to_string()),
                keys::ORDER_SK,
            )))
            .send()
            .await
            .map_err(StoreError::backend)?;
        output.item.map(decode_order).transpose()
    }

    /// A customer's orders, newest first.
    pub async fn customer_orders(
        &self,
        customer_id: &CustomerId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Order>, StoreError> {
        self.orders_by(
            keys::INDEX_CUSTOMER,
            "customerKey",
            "customerSort",
            keys::customer_orders_key(customer_id.as_str()),
            cursor,
            limit,
        )
        .await
    }

    /// A vendor's orders, newest first.
    pub async fn vendor_orders(
        &self,
        vendor_id: VendorId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Order>, StoreError> {
        self.orders_by(
            keys::INDEX_VENDOR,
            "vendorKey",
            "vendorSort",
            keys::vendor_orders_key(&vendor_id.to_string()),
            cursor,
            limit,
        )
        .await
    }

    async fn orders_by(
        &self,
        index: &'static str,
        partition_attr: &'static str,
        sort_attr: &'static str,
        partition: String,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Order>, StoreError> {
        let after = decode_id_cursor(cursor)?;
        let page = self
            .query_index(
                IndexQuery {
                    index,
                    partition_attr,
                    partition: partition.clone(),
                    sort_attr,
                    filter: None,
                    newest_first: true,
                    after: after.as_deref(),
                    limit,
                },
                |id| {
                    let mut key = keys::key(keys::order_pk(id), keys::ORDER_SK);
                    key.insert(partition_attr.into(), AttributeValue::S(partition.clone()));
                    key.insert(sort_attr.into(), AttributeValue::S(id.to_owned()));
                    key
                },
            )
            .await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(decode_order)
                .collect::<Result<_, _>>()?,
            next_cursor: page.resume_after.map(|id| cursor::encode(&id)),
        })
    }
}

fn reserved_state(bouquet: &Bouquet, order: &Order) -> BouquetStatus {
    match bouquet.status {
        BouquetStatus::Reserved { order_id, .. } if order_id == order.order_id => bouquet.status,
        _ => BouquetStatus::Available,
    }
}

fn decode_order(item: Item) -> Result<Order, StoreError> {
    from_item::<OrderItem>(item)?.into_domain()
}

/// Decodes the current state of a bouquet from a cancellation reason.
pub fn bouquet_from_conflict(item: Option<Item>) -> Option<Bouquet> {
    item.and_then(|i| decode_bouquet(i).ok())
}
