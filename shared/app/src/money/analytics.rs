//! The vendor analytics projection, run by an EventBridge consumer of `OrderPaid`, `OrderCancelled`,
//! `ReservationExpired`, `OrderFulfilled` and `OrderRejected` (the rule is in the template): sales
//! and, since issue 41, the shop's earnings (gross, the marketplace's fees, refunds and the fees
//! refunded), and the marketplace's commission per day and shop. Each event adds to
//! its vendor's counters for the day it occurred (a sale also adds its bouquets' freshness
//! scores, read from the bouquets), with `ADD`, in the same transaction as the
//! dedupe record of its `eventId`: a redelivered event changes nothing.

use serde_json::Value;

use bouquet_domain::{BouquetId, Money, VendorId};
use bouquet_store::{CounterDelta, StoreError};

use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The event lacks what the projection reads: it can never apply.
    #[error("unreadable event: {0}")]
    Unreadable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<String> for ProjectionError {
    fn from(reason: String) -> Self {
        ProjectionError::Unreadable(reason)
    }
}

impl From<&str> for ProjectionError {
    fn from(reason: &str) -> Self {
        ProjectionError::Unreadable(reason.to_owned())
    }
}

/// The dedupe scope of this consumer.
pub const CONSUMER: &str = "vendor-analytics";

/// What an event adds to its vendor's day; `None` for events this projector ignores.
pub fn delta(name: &str, data: &Value) -> Result<Option<CounterDelta>, ProjectionError> {
    let mut delta = CounterDelta::default();
    match name {
        "OrderPaid" => {
            delta.sales = 1;
            let amount = data["total"]["amount"]
                .as_str()
                .ok_or("OrderPaid without total.amount")?;
            let currency = data["total"]["currency"]
                .as_str()
                .ok_or("OrderPaid without total.currency")?;
            // A total, not a price: several bouquets can sum past one price's bound.
            let money = Money::parse_amount(amount, currency).map_err(|e| e.to_string())?;
            delta.revenue.push((currency.to_owned(), money.minor()));
            // Events from before issue 41 carry no fee: none was taken.
            delta.fees.extend(amount_of(&data["fee"])?);
        }
        "OrderRejected" => {
            delta.refunds.extend(amount_of(&data["refund"])?);
            delta.fees_refunded.extend(amount_of(&data["feeRefunded"])?);
        }
        "OrderCancelled" => delta.cancellations = 1,
        "ReservationExpired" => delta.expiries = 1,
        "OrderFulfilled" => delta.fulfilled = 1,
        _ => return Ok(None),
    }
    Ok(Some(delta))
}

/// `{amount, currency}` as (currency, minor units); `None` when absent.
fn amount_of(value: &Value) -> Result<Option<(String, i64)>, ProjectionError> {
    if value.is_null() {
        return Ok(None);
    }
    let (Some(amount), Some(currency)) = (value["amount"].as_str(), value["currency"].as_str())
    else {
        return Err(format!("an amount without amount or currency: {value}").into());
    };
    let money = Money::parse_amount(amount, currency).map_err(|e| e.to_string())?;
    Ok(Some((currency.to_owned(), money.minor())))
}

/// Applies one EventBridge event; `Ok(false)` when it was a duplicate or not for us.
pub async fn project(app: &App, event: &Value) -> Result<bool, ProjectionError> {
    let name = event["detail-type"]
        .as_str()
        .ok_or("event without detail-type")?;
    let detail = &event["detail"];
    let Some(mut delta) = delta(name, &detail["data"])? else {
        return Ok(false);
    };
    if name == "OrderPaid" {
        // Freshness at sale: the scores the sold bouquets carry now (the projector runs
        // seconds after the sale; a redelivery is deduped below, so a day counts each once).
        let ids = detail["data"]["bouquetIds"]
            .as_array()
            .ok_or("OrderPaid without bouquetIds")?
            .iter()
            .map(|id| BouquetId::parse(id.as_str().unwrap_or_default()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("bouquetIds: {e}"))?;
        let scores: Vec<i64> = app
            .store
            .bouquets(&ids)
            .await?
            .into_iter()
            .flatten()
            .filter_map(|b| b.freshness.map(i64::from))
            .collect();
        delta.freshness_sum = scores.iter().sum();
        delta.freshness_count = scores.len() as i64;
    }
    let event_id = detail["eventId"]
        .as_str()
        .ok_or("event without detail.eventId")?;
    let vendor_id = VendorId::parse(detail["data"]["vendorId"].as_str().unwrap_or_default())
        .map_err(|e| format!("vendorId: {e}"))?;
    let day = detail["occurredAt"]
        .as_str()
        .and_then(|t| t.get(..10))
        .ok_or("event without occurredAt")?;
    Ok(app
        .store
        .apply_once(CONSUMER, event_id, vendor_id, day, &delta, app.clock.now())
        .await?)
}
