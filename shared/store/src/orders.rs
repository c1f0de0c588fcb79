use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;

use bouquet_domain::events::DomainEvent;
use bouquet_domain::{
    Bouquet, BouquetId, BouquetStatus, Cart, CustomerId, Order, OrderId, OrderStatus, Timestamp,
    VendorId,
};

use crate::bouquets::{available_at_version, bouquet_key, decode_bouquet, decode_id_cursor};
use crate::carts::{cart_key, cart_pk, decode_cart};
use crate::cursor::{self, Page};
use crate::error::{StoreError, Target};
use crate::idempotency::{self, IdempotencyPut, IdempotencyRecord};
use crate::items::{from_item, to_item, Item, OrderItem};
use crate::keys;
use crate::limits::{self, Counter};
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// What a reservation needs to read before it writes.
#[derive(Debug)]
pub struct ReservationRead {
    /// In request order; `None` where no such bouquet exists.
    pub bouquets: Vec<Option<Bouquet>>,
    /// A live record for the request's idempotency key, if it was used before.
    pub idempotency: Option<IdempotencyRecord>,
}

pub use bouquet_domain::checkout::BouquetEffect;

/// Where a sweep's paging through the expiry index stands, per shard.
#[derive(Clone, Debug, Default)]
pub struct DueCursor {
    next: std::collections::HashMap<u32, Item>,
    done: std::collections::HashSet<u32>,
}

impl DueCursor {
    /// Every shard was read to its end.
    pub fn finished(&self) -> bool {
        self.done.len() as u32 == keys::EXPIRY_SHARDS
    }
}

/// What a reservation writes, all or nothing.
#[derive(Clone, Copy)]
pub struct Reservation<'a> {
    /// The order, with the bouquets as the domain's `reserve` left them.
    pub order: &'a Order,
    pub bouquets: &'a [Bouquet],
    pub event: &'a DomainEvent,
    pub idempotency: Option<&'a IdempotencyPut>,
    /// The cart the order comes from, deleted if still at the version read.
    pub cart: Option<&'a Cart>,
    /// The cap on the customer's holding orders.
    pub max_holds: u32,
    /// The customer's reservations in this window ([`Target::Limit`] when it is full).
    pub rate: Counter<'a>,
    /// The shop must be able to take charges (its payout account's `chargesEnabled`): a
    /// `ConditionCheck` on the shop, [`Target::Vendor`] when it cannot. Costs no read.
    pub payee_required: bool,
}

/// What an order transition writes, all or nothing.
#[derive(Clone, Copy)]
pub struct OrderWrite<'a> {
    /// The order after the transition.
    pub order: &'a Order,
    /// The version it was read at.
    pub read_version: u64,
    pub effects: &'a [(BouquetId, BouquetEffect)],
    pub event: Option<&'a DomainEvent>,
    pub idempotency: Option<&'a IdempotencyPut>,
    /// The order stops holding bouquets: it leaves its customer's count.
    pub releases_hold: bool,
    /// The order takes this number of its shop's invoice sequence: the write moves the
    /// sequence's last number from one less, or fails on it ([`Target::InvoiceSequence`]).
    pub takes_invoice: Option<u64>,
}

/// A shop's invoice sequence: its last number taken.
fn invoice_sequence_key(vendor_id: &str) -> Item {
    crate::keys::key(crate::keys::vendor_pk(vendor_id), "INVOICES")
}

/// The counter of a customer's orders that hold bouquets.
fn holds_key(customer_id: &str) -> Item {
    crate::keys::key(format!("CUSTOMER#{customer_id}#HOLDS"), "HOLDS")
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
        keys.extend(idempotency_key.map(idempotency::key));
        let mut found = self.batch_get(keys).await?;
        let bouquets = bouquet_ids
            .iter()
            .map(|id| {
                found
                    .remove(&keys::bouquet_pk(&id.to_string()))
                    .map(decode_bouquet)
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let idempotency = take_record(&mut found, idempotency_key, now)?;
        Ok(ReservationRead {
            bouquets,
            idempotency,
        })
    }

    /// The cart and the idempotency record, in one consistent `BatchGetItem`.
    pub async fn read_cart_for_reservation(
        &self,
        customer_id: &CustomerId,
        idempotency_key: Option<&str>,
        now: Timestamp,
    ) -> Result<(Cart, Option<IdempotencyRecord>), StoreError> {
        let mut keys = vec![cart_key(customer_id)];
        keys.extend(idempotency_key.map(idempotency::key));
        let mut found = self.batch_get(keys).await?;
        let cart = decode_cart(customer_id, found.get(&cart_pk(customer_id)))?;
        Ok((cart, take_record(&mut found, idempotency_key, now)?))
    }

    /// An order and the idempotency record, in one consistent `BatchGetItem`.
    pub async fn read_order_for_change(
        &self,
        order_id: OrderId,
        idempotency_key: Option<&str>,
        now: Timestamp,
    ) -> Result<(Option<Order>, Option<IdempotencyRecord>), StoreError> {
        let mut keys = vec![order_key(order_id)];
        keys.extend(idempotency_key.map(idempotency::key));
        let mut found = self.batch_get(keys).await?;
        let order = found
            .remove(&keys::order_pk(&order_id.to_string()))
            .map(decode_order)
            .transpose()?;
        Ok((order, take_record(&mut found, idempotency_key, now)?))
    }

    /// [`Self::read_order_for_change`] with what each of `counters` holds now, in the same
    /// `BatchGetItem` (a payment's abuse limits cost no round trip of their own).
    pub async fn read_order_for_payment(
        &self,
        order_id: OrderId,
        idempotency_key: Option<&str>,
        counters: &[Counter<'_>],
        now: Timestamp,
    ) -> Result<(Option<Order>, Option<IdempotencyRecord>, Vec<u32>), StoreError> {
        let mut keys = vec![order_key(order_id)];
        keys.extend(idempotency_key.map(idempotency::key));
        keys.extend(limits::keys(counters, now));
        let mut found = self.batch_get(keys).await?;
        let counts = counters
            .iter()
            .map(|counter| limits::count_in(&found, counter, now))
            .collect();
        let order = found
            .remove(&keys::order_pk(&order_id.to_string()))
            .map(decode_order)
            .transpose()?;
        Ok((
            order,
            take_record(&mut found, idempotency_key, now)?,
            counts,
        ))
    }

    /// Bouquets by id (consistent), in the order asked; `None` where missing.
    pub async fn bouquets(&self, ids: &[BouquetId]) -> Result<Vec<Option<Bouquet>>, StoreError> {
        let mut found = self
            .batch_get(ids.iter().map(|id| bouquet_key(&id.to_string())).collect())
            .await?;
        ids.iter()
            .map(|id| {
                found
                    .remove(&keys::bouquet_pk(&id.to_string()))
                    .map(decode_bouquet)
                    .transpose()
            })
            .collect()
    }

    /// The reservation: one `TransactWriteItems` that moves every bouquet (as read) to
    /// `reserved` if it is still at the version read and still available (or held past its
    /// deadline), puts the order and its event, the idempotency record, and (when the order
    /// comes from the cart) deletes the cart if it is still the version read. All or nothing.
    pub async fn reserve(
        &self,
        reservation: &Reservation<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let Reservation {
            order,
            bouquets,
            event,
            idempotency,
            cart,
            max_holds,
            rate,
            payee_required,
        } = *reservation;
        let mut tx = Tx::new();
        if payee_required {
            tx.check(
                Target::Vendor(order.vendor_id),
                &self.table,
                keys::vendor_key(order.vendor_id),
                Expr::new("chargesEnabled = :chargesEnabled")
                    .value(":chargesEnabled", AttributeValue::Bool(true)),
            )?;
        }
        tx.idempotency(&self.table, idempotency, now)?;
        tx.count_within(&self.table, rate, now)?;
        // The cap on what one customer holds at once, by condition on its counter (a read
        // before the write would let concurrent reservations through).
        tx.update(
            Target::Holds,
            &self.table,
            holds_key(order.customer_id.as_str()),
            Expr::new("ADD holding :one").n(":one", 1),
            Expr::new("attribute_not_exists(holding) OR holding < :cap").n(":cap", max_holds),
        )?;
        for bouquet in bouquets {
            let (order_id, until) = match bouquet.status {
                BouquetStatus::Reserved { order_id, until } if order_id == order.order_id => {
                    (order_id, until)
                }
                _ => {
                    return Err(StoreError::corrupt(
                        "reserve() needs the bouquets as the order holds them",
                    ))
                }
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
        tx.put_new(
            Target::Order(order.order_id),
            &self.table,
            to_item(&OrderItem::from_domain(order))?,
        )?;
        tx.event(&self.table, event)?;
        if let Some(cart) = cart {
            tx.delete(
                Target::Cart,
                &self.table,
                cart_key(&cart.customer_id),
                Expr::new("version = :cartVersion").n(":cartVersion", cart.version),
            )?;
        }
        tx.commit(self).await
    }

    /// Writes an order transition decided by the domain: the order (if still at
    /// `read_version`), what happens to each of its bouquets, the event and the idempotency
    /// record, in one `TransactWriteItems`.
    /// The last number `vendor_id`'s invoice sequence gave (0: none yet), read consistently.
    pub async fn last_invoice_number(&self, vendor_id: VendorId) -> Result<u64, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(invoice_sequence_key(&vendor_id.to_string())))
            .consistent_read(true)
            .projection_expression("lastNumber")
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(output
            .item
            .and_then(|item| item.get("lastNumber")?.as_n().ok()?.parse().ok())
            .unwrap_or(0))
    }

    pub async fn transition_order(
        &self,
        transition: &OrderWrite<'_>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        // A bouquet returned to sale while its shop is suspended is available but stays off
        // the catalogue's indexes (the suspension's sweep may have passed it while it was
        // sold). Which ones are is learnt from the failed condition, so the common case
        // costs no read; the flag may move meanwhile, hence a few rounds.
        let mut off_sale = HashSet::new();
        for _ in 0..3 {
            match self.transition_order_once(transition, &off_sale, now).await {
                Err(StoreError::ConditionFailed(conflicts)) => {
                    let mut moved = false;
                    for conflict in &conflicts {
                        let Target::Bouquet(id) = conflict.target else {
                            continue;
                        };
                        let returned = transition
                            .effects
                            .iter()
                            .any(|(b, e)| *b == id && *e == BouquetEffect::Return);
                        let Some(bouquet) = conflict.bouquet().filter(|_| returned) else {
                            continue;
                        };
                        let sold_to_order = matches!(bouquet.status, BouquetStatus::Sold { order_id } if order_id == transition.order.order_id);
                        if sold_to_order && bouquet.is_suspended() != off_sale.contains(&id) {
                            moved = true;
                            if bouquet.is_suspended() {
                                off_sale.insert(id);
                            } else {
                                off_sale.remove(&id);
                            }
                        }
                    }
                    if !moved {
                        return Err(StoreError::ConditionFailed(conflicts));
                    }
                }
                other => return other,
            }
        }
        Err(StoreError::Contention(vec![Target::Order(
            transition.order.order_id,
        )]))
    }

    async fn transition_order_once(
        &self,
        transition: &OrderWrite<'_>,
        off_sale: &HashSet<BouquetId>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let OrderWrite {
            order,
            read_version,
            effects: bouquets,
            event,
            idempotency,
            releases_hold,
            takes_invoice,
        } = *transition;
        let mut tx = Tx::new();
        if let Some(number) = takes_invoice {
            let condition = if number <= 1 {
                Expr::new("attribute_not_exists(lastNumber)")
            } else {
                Expr::new("lastNumber = :previous").n(":previous", number - 1)
            };
            tx.update(
                Target::InvoiceSequence,
                &self.table,
                invoice_sequence_key(&order.vendor_id.to_string()),
                Expr::new("SET lastNumber = :number, entity = :entity, updatedAt = :now")
                    .n(":number", number)
                    .s(":entity", "invoice_sequence")
                    .n(":now", now.as_millis()),
                condition,
            )?;
        }
        tx.idempotency(&self.table, idempotency, now)?;
        if releases_hold {
            // The order no longer holds bouquets: it leaves its customer's count.
            tx.update(
                Target::Holds,
                &self.table,
                holds_key(order.customer_id.as_str()),
                Expr::new("ADD holding :minusOne").n(":minusOne", -1),
                Expr::new(""),
            )?;
        }
        let item = to_item(&OrderItem::from_domain(order))?;
        tx.put(
            Target::Order(order.order_id),
            &self.table,
            item,
            Some(Expr::at_version(read_version)),
        )?;
        let held_by_order = Expr::new("orderId = :orderId AND #status = :reservedStatus")
            .name("#status", "status")
            .s(":orderId", order.order_id.to_string())
            .s(":reservedStatus", "reserved");
        for (bouquet_id, effect) in bouquets {
            let update = match effect {
                BouquetEffect::Hold { until } => Expr::new("SET reservedUntil = :until, updatedAt = :now ADD version :one").n(":until", until.as_millis()),
                BouquetEffect::Sell => Expr::new("SET #status = :sold, updatedAt = :now REMOVE reservedUntil, catalogueShard, catalogueSort ADD version :one").s(":sold", "sold"),
                BouquetEffect::Release => Expr::new("SET #status = :available, updatedAt = :now REMOVE reservedUntil, orderId ADD version :one").s(":available", "available"),
                // Back in the catalogue, where a listed bouquet is indexed.
                BouquetEffect::Withdraw => Expr::new("SET #status = :withdrawn, updatedAt = :now REMOVE orderId ADD version :one").s(":withdrawn", "withdrawn"),
                BouquetEffect::Return if off_sale.contains(bouquet_id) => Expr::new("SET #status = :available, updatedAt = :now REMOVE orderId ADD version :one")
                    .s(":available", "available"),
                BouquetEffect::Return => Expr::new("SET #status = :available, updatedAt = :now, catalogueShard = :shard, catalogueSort = :sort REMOVE orderId ADD version :one")
                    .s(":available", "available")
                    .s(":shard", crate::keys::catalogue_shard(&bouquet_id.to_string()))
                    .s(":sort", bouquet_id.to_string()),
            }
            .n(":now", now.as_millis())
            .n(":one", 1);
            let sold_to_order = || {
                Expr::new("orderId = :orderId AND #status = :soldStatus")
                    .name("#status", "status")
                    .s(":orderId", order.order_id.to_string())
                    .s(":soldStatus", "sold")
            };
            let condition = match effect {
                BouquetEffect::Return => {
                    let shop = if off_sale.contains(bouquet_id) {
                        "attribute_exists(suspended)"
                    } else {
                        "attribute_not_exists(suspended)"
                    };
                    let sold = sold_to_order();
                    Expr {
                        text: format!("{} AND {shop}", sold.text),
                        ..sold
                    }
                }
                BouquetEffect::Withdraw => sold_to_order(),
                _ => held_by_order.clone(),
            };
            tx.update(
                Target::Bouquet(*bouquet_id),
                &self.table,
                bouquet_key(&bouquet_id.to_string()),
                update,
                condition,
            )?;
        }
        tx.commit_with_event(self, event).await
    }

    /// The next page of orders due before `now` that still hold bouquets (a reservation past
    /// its deadline, a payment attempt past its lease: [`bouquet_domain::Order::due_at`]), from every shard of the sparse expiry index that
    /// `cursor` has not finished, continuing where the last page of each shard ended: items
    /// that keep failing do not hide the ones behind them. No Scan.
    pub async fn due_orders(
        &self,
        now: Timestamp,
        limit_per_shard: usize,
        cursor: &mut DueCursor,
    ) -> Result<Vec<OrderId>, StoreError> {
        let reads = (0..keys::EXPIRY_SHARDS)
            .filter(|shard| !cursor.done.contains(shard))
            .map(|shard| {
                let start = cursor.next.get(&shard).cloned();
                async move {
                    let output = self
                        .client
                        .query()
                        .table_name(&self.table)
                        .index_name(keys::INDEX_EXPIRY)
                        .key_condition_expression("expiryShard = :shard AND dueAt < :now")
                        .expression_attribute_values(
                            ":shard",
                            AttributeValue::S(keys::expiry_shard_key(shard)),
                        )
                        .expression_attribute_values(
                            ":now",
                            AttributeValue::N(now.as_millis().to_string()),
                        )
                        .set_exclusive_start_key(start)
                        .limit(limit_per_shard as i32)
                        .send()
                        .await
                        .map_err(StoreError::backend)?;
                    Ok::<_, StoreError>((shard, output))
                }
            });
        let mut due = Vec::new();
        for (shard, output) in futures::future::try_join_all(reads).await? {
            match output.last_evaluated_key {
                Some(last) => {
                    cursor.next.insert(shard, last);
                }
                None => {
                    cursor.done.insert(shard);
                }
            }
            for item in output.items.unwrap_or_default() {
                let id = item
                    .get("pk")
                    .and_then(|pk| pk.as_s().ok())
                    .and_then(|pk| OrderId::parse(pk.trim_start_matches("ORDER#")).ok());
                match id {
                    Some(id) => due.push(id),
                    // Skipped, not fatal: one bad index item must not stop every sweep.
                    None => tracing::error!(?item, "expiry index item without an order id"),
                }
            }
        }
        Ok(due)
    }

    /// One order (consistent: a transition may follow the read).
    pub async fn order(&self, order_id: OrderId) -> Result<Option<Order>, StoreError> {
        self.get_stored::<OrderItem>(order_key(order_id), true)
            .await
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

    /// A vendor's orders in any of `statuses` whose delivery date is within `from..=to`
    /// (`YYYY-MM-DD`; `None`: any, orders without details included), in delivery order (date,
    /// slot, id), `limit` at most, after the cursor. One `Query` per state on
    /// `VendorStatusIndex`, side by side, merged: the day's deliveries are the sold states
    /// on one day. The cursor is the last sort value, which every state's query resumes after.
    pub async fn vendor_orders_by_state(
        &self,
        vendor_id: VendorId,
        statuses: &[OrderStatus],
        dates: Option<(&str, &str)>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Order>, StoreError> {
        let after: Option<String> = cursor.map(cursor::decode).transpose()?;
        let (mut low, high) = match dates {
            Some((from, to)) => (from.to_owned(), format!("{to}~")),
            // Every sort value starts with a date, `0000-00-00` at the least; a key condition
            // takes no empty string.
            None => ("0".to_owned(), "~".to_owned()),
        };
        if let Some(after) = &after {
            // Past the cursor: every sort value has one shape, so this is the next one.
            low = low.max(format!("{after}\u{1}"));
        }
        let vendor = vendor_id.to_string();
        let queries = statuses.iter().map(|status| {
            self.query_index(
                IndexQuery {
                    index: keys::INDEX_VENDOR_STATUS,
                    partition_attr: "vendorStatusKey",
                    partition: keys::vendor_status_key(&vendor, status.name()),
                    sort_attr: "vendorStatusSort",
                    filter: None,
                    newest_first: false,
                    after: None,
                    sort_between: Some((low.clone(), high.clone())),
                    after_by_condition: false,
                    limit,
                },
                |_| unreachable!("no exclusive start key: the range starts past the cursor"),
            )
        });
        let pages = futures::future::try_join_all(queries).await?;
        let mut more = false;
        let mut items: Vec<(String, Item)> = Vec::new();
        for page in pages {
            more |= page.resume_after.is_some();
            for item in page.items {
                let sort = match item.get("vendorStatusSort") {
                    Some(AttributeValue::S(s)) => s.clone(),
                    _ => String::new(),
                };
                items.push((sort, item));
            }
        }
        items.sort_by(|a, b| a.0.cmp(&b.0));
        more |= items.len() > limit;
        items.truncate(limit);
        let next_cursor = more
            .then(|| items.last().map(|(sort, _)| cursor::encode(sort)))
            .flatten();
        Ok(Page {
            items: items
                .into_iter()
                .map(|(_, item)| decode_order(item))
                .collect::<Result<_, _>>()?,
            next_cursor,
        })
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
                    sort_between: None,
                    after_by_condition: false,
                    limit,
                },
                |id| keys::key(keys::order_pk(id), keys::ORDER_SK),
            )
            .await?;
        page.into_page::<OrderItem>()
    }
}

fn order_key(order_id: OrderId) -> Item {
    keys::key(keys::order_pk(&order_id.to_string()), keys::ORDER_SK)
}

fn take_record(
    found: &mut HashMap<String, Item>,
    idempotency_key: Option<&str>,
    now: Timestamp,
) -> Result<Option<IdempotencyRecord>, StoreError> {
    match idempotency_key {
        Some(hash) => idempotency::record_from(found.remove(&format!("IDEMPOTENCY#{hash}")), now),
        None => Ok(None),
    }
}

pub(crate) fn decode_order(item: Item) -> Result<Order, StoreError> {
    from_item::<OrderItem>(item)?.into_domain()
}
