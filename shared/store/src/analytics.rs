//! Per-vendor, per-day counters kept by the analytics projector, applied once per event
//! through [`Store::commit_once`](crate::store::Store::commit_once).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;

use bouquet_domain::{Timestamp, VendorId};

use crate::error::{StoreError, Target};
use crate::keys;
use crate::processed::Processed;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// What one event adds to a vendor's day.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterDelta {
    pub sales: i64,
    pub cancellations: i64,
    pub expiries: i64,
    pub fulfilled: i64,
    /// Revenue (the gross paid) in minor units, by currency.
    pub revenue: Vec<(String, i64)>,
    /// The marketplace's commission on that revenue, by currency.
    pub fees: Vec<(String, i64)>,
    /// What was refunded (rejected orders' totals), and the commission given back with it.
    pub refunds: Vec<(String, i64)>,
    pub fees_refunded: Vec<(String, i64)>,
    /// Freshness scores of the bouquets sold (those whose vase had scored them): summed, and
    /// counted, so the day's average is their quotient.
    pub freshness_sum: i64,
    pub freshness_count: i64,
}

/// One vendor's day, as read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DayCounters {
    pub day: String,
    pub sales: i64,
    pub cancellations: i64,
    pub expiries: i64,
    pub fulfilled: i64,
    pub revenue: BTreeMap<String, i64>,
    pub fees: BTreeMap<String, i64>,
    pub refunds: BTreeMap<String, i64>,
    pub fees_refunded: BTreeMap<String, i64>,
    pub freshness_sum: i64,
    pub freshness_count: i64,
}

/// The marketplace's commission on one day, by shop and currency (fees less fees refunded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommissionDay {
    pub day: String,
    /// (shop, currency) → minor units.
    pub by_shop: BTreeMap<(String, String), i64>,
}

/// Money counters are attributes `{kind}_{currency}` (`revenue_EUR`).
const MONEY_KINDS: [&str; 4] = ["revenue", "fees", "refunds", "feesRefunded"];

fn money_kinds(delta: &CounterDelta) -> [(&'static str, &[(String, i64)]); 4] {
    [
        (MONEY_KINDS[0], &delta.revenue),
        (MONEY_KINDS[1], &delta.fees),
        (MONEY_KINDS[2], &delta.refunds),
        (MONEY_KINDS[3], &delta.fees_refunded),
    ]
}

const COMMISSION_PK: &str = "COMMISSION";

impl DayCounters {
    /// The average freshness of the day's sold bouquets that had a score.
    pub fn average_freshness(&self) -> Option<f64> {
        (self.freshness_count > 0).then(|| self.freshness_sum as f64 / self.freshness_count as f64)
    }
}

fn day_of(item: &HashMap<String, AttributeValue>) -> String {
    item.get("day")
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

fn analytics_pk(vendor_id: VendorId) -> String {
    format!("ANALYTICS#{vendor_id}")
}

impl Store {
    /// Applies `delta` to `vendor_id`'s `day` once per (`consumer`, `event_id`): `Ok(false)`
    /// when the event was already applied.
    pub async fn apply_once(
        &self,
        consumer: &str,
        event_id: &str,
        vendor_id: VendorId,
        day: &str,
        delta: &CounterDelta,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut tx = Tx::new();
        let mut update = Expr::new("SET entity = :entity, vendorId = :vendor, #day = :day ADD sales :sales, cancellations :cancellations, expiries :expiries, fulfilled :fulfilled, freshnessSum :freshnessSum, freshnessCount :freshnessCount")
            .name("#day", "day")
            .s(":entity", "vendor_day")
            .s(":vendor", vendor_id.to_string())
            .s(":day", day)
            .n(":sales", delta.sales)
            .n(":cancellations", delta.cancellations)
            .n(":expiries", delta.expiries)
            .n(":fulfilled", delta.fulfilled)
            .n(":freshnessSum", delta.freshness_sum)
            .n(":freshnessCount", delta.freshness_count);
        for (kind, amounts) in money_kinds(delta) {
            for (index, (currency, minor)) in amounts.iter().enumerate() {
                let slot = format!("{kind}{index}");
                update.text.push_str(&format!(", #{slot} :{slot}"));
                update = update
                    .name(&format!("#{slot}"), &format!("{kind}_{currency}"))
                    .n(&format!(":{slot}"), minor);
            }
        }
        let key = keys::key(analytics_pk(vendor_id), &format!("DAY#{day}"));
        tx.upsert(Target::Vendor(vendor_id), &self.table, key, update)?;
        // The marketplace's day, by shop: what the administrators read in one `Query`.
        let mut commission: BTreeMap<&str, i64> = BTreeMap::new();
        for (currency, minor) in &delta.fees {
            *commission.entry(currency).or_default() += minor;
        }
        for (currency, minor) in &delta.fees_refunded {
            *commission.entry(currency).or_default() -= minor;
        }
        if commission.values().any(|minor| *minor != 0) {
            let mut update = Expr::new("SET entity = :entity, #day = :day ADD ")
                .name("#day", "day")
                .s(":entity", "commission_day")
                .s(":day", day);
            for (index, (currency, minor)) in commission.iter().enumerate() {
                if index > 0 {
                    update.text.push_str(", ");
                }
                update.text.push_str(&format!("#c{index} :c{index}"));
                update = update
                    .name(
                        &format!("#c{index}"),
                        &format!("shop_{vendor_id}_{currency}"),
                    )
                    .n(&format!(":c{index}"), *minor);
            }
            let key = keys::key(COMMISSION_PK.to_owned(), &format!("DAY#{day}"));
            tx.upsert(Target::Vendor(vendor_id), &self.table, key, update)?;
        }
        Ok(self.commit_once(consumer, event_id, tx, now).await? == Processed::Applied)
    }

    /// The day items of partition `pk` from `from` to `to` (inclusive, `YYYY-MM-DD`), in order.
    async fn day_items(
        &self,
        pk: String,
        from: &str,
        to: &str,
    ) -> Result<Vec<HashMap<String, AttributeValue>>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .expression_attribute_values(":from", AttributeValue::S(format!("DAY#{from}")))
                .expression_attribute_values(":to", AttributeValue::S(format!("DAY#{to}")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            items.extend(output.items.unwrap_or_default());
            start = output.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// A vendor's days from `from` to `to` (inclusive, `YYYY-MM-DD`), in order.
    pub async fn vendor_days(
        &self,
        vendor_id: VendorId,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayCounters>, StoreError> {
        let items = self.day_items(analytics_pk(vendor_id), from, to).await?;
        Ok(items
            .iter()
            .map(|item| {
                let number = |name: &str| {
                    item.get(name)
                        .and_then(|v| v.as_n().ok())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                };
                let money = |kind: &str| -> BTreeMap<String, i64> {
                    let prefix = format!("{kind}_");
                    item.iter()
                        .filter_map(|(k, v)| {
                            Some((
                                k.strip_prefix(prefix.as_str())?.to_owned(),
                                v.as_n().ok()?.parse().ok()?,
                            ))
                        })
                        .collect()
                };
                DayCounters {
                    day: day_of(item),
                    sales: number("sales"),
                    cancellations: number("cancellations"),
                    expiries: number("expiries"),
                    fulfilled: number("fulfilled"),
                    revenue: money(MONEY_KINDS[0]),
                    fees: money(MONEY_KINDS[1]),
                    refunds: money(MONEY_KINDS[2]),
                    fees_refunded: money(MONEY_KINDS[3]),
                    freshness_sum: number("freshnessSum"),
                    freshness_count: number("freshnessCount"),
                }
            })
            .collect())
    }

    /// The marketplace's commission per day from `from` to `to`, by shop and currency.
    pub async fn commission_days(
        &self,
        from: &str,
        to: &str,
    ) -> Result<Vec<CommissionDay>, StoreError> {
        let items = self.day_items(COMMISSION_PK.to_owned(), from, to).await?;
        Ok(items
            .iter()
            .map(|item| CommissionDay {
                day: day_of(item),
                by_shop: item
                    .iter()
                    .filter_map(|(k, v)| {
                        let (shop, currency) = k.strip_prefix("shop_")?.rsplit_once('_')?;
                        Some((
                            (shop.to_owned(), currency.to_owned()),
                            v.as_n().ok()?.parse().ok()?,
                        ))
                    })
                    .collect(),
            })
            .collect())
    }
}
