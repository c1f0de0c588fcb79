//! Per-vendor, per-day counters kept by the analytics projector, applied once per event
//! through [`Store::commit_once`](crate::Store::commit_once).

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use bouquet_domain::{Timestamp, VendorId};

use crate::error::{StoreError, Target};
use crate::keys;
use crate::processed::Processed;
use crate::tx::{Expr, Tx};
use crate::Store;

/// What one event adds to a vendor's day.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterDelta {
    pub sales: i64,
    pub cancellations: i64,
    pub expiries: i64,
    pub fulfilled: i64,
    /// Revenue in minor units, by currency.
    pub revenue: Vec<(String, i64)>,
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
    pub freshness_sum: i64,
    pub freshness_count: i64,
}

impl DayCounters {
    /// The average freshness of the day's sold bouquets that had a score.
    pub fn average_freshness(&self) -> Option<f64> {
        (self.freshness_count > 0).then(|| self.freshness_sum as f64 / self.freshness_count as f64)
    }
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
        for (index, (currency, minor)) in delta.revenue.iter().enumerate() {
            update.text.push_str(&format!(", #rev{index} :rev{index}"));
            update = update
                .name(&format!("#rev{index}"), &format!("revenue_{currency}"))
                .n(&format!(":rev{index}"), minor);
        }
        let key = keys::key(analytics_pk(vendor_id), &format!("DAY#{day}"));
        tx.upsert(Target::Vendor(vendor_id), &self.table, key, update)?;
        Ok(self.commit_once(consumer, event_id, tx, now).await? == Processed::Applied)
    }

    /// A vendor's days from `from` to `to` (inclusive, `YYYY-MM-DD`), in order.
    pub async fn vendor_days(
        &self,
        vendor_id: VendorId,
        from: &str,
        to: &str,
    ) -> Result<Vec<DayCounters>, StoreError> {
        let mut days = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", AttributeValue::S(analytics_pk(vendor_id)))
                .expression_attribute_values(":from", AttributeValue::S(format!("DAY#{from}")))
                .expression_attribute_values(":to", AttributeValue::S(format!("DAY#{to}")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            for item in output.items.unwrap_or_default() {
                let number = |name: &str| {
                    item.get(name)
                        .and_then(|v| v.as_n().ok())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                };
                let revenue = item
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((
                            k.strip_prefix("revenue_")?.to_owned(),
                            v.as_n().ok()?.parse().ok()?,
                        ))
                    })
                    .collect();
                days.push(DayCounters {
                    day: item
                        .get("day")
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default(),
                    sales: number("sales"),
                    cancellations: number("cancellations"),
                    expiries: number("expiries"),
                    fulfilled: number("fulfilled"),
                    revenue,
                    freshness_sum: number("freshnessSum"),
                    freshness_count: number("freshnessCount"),
                });
            }
            start = output.last_evaluated_key;
            if start.is_none() {
                return Ok(days);
            }
        }
    }
}
