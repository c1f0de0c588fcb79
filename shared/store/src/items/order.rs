//! An order as stored, with its lines, delivery and settlement.

use serde::{Deserialize, Serialize};

use bouquet_domain::{
    BouquetId, CustomerId, Order, OrderId, OrderLine, OrderStatus, Timestamp, VendorId,
};

use bouquet_domain::commission::{CommissionRate, Settlement};
use bouquet_domain::delivery::Delivery;
use bouquet_domain::pricing::{Pricing, VatRates};

use super::money;
use crate::error::StoreError;
use crate::keys;

fn default_personal_data_days() -> u16 {
    bouquet_domain::order::DEFAULT_PERSONAL_DATA_DAYS
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderLineItem {
    pub bouquet_id: String,
    pub name: String,
    pub price_minor: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_price_minor: Option<i64>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    pub order_id: String,
    pub customer_id: String,
    pub vendor_id: String,
    pub lines: Vec<OrderLineItem>,
    pub total_minor: i64,
    pub currency: String,
    pub status: String,
    pub reserved_until: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_started_at: Option<i64>,
    #[serde(default)]
    pub payment_attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charge_id: Option<String>,
    /// The split fixed at the first payment attempt (absent before issue 41 and until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission_bps: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_minor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout_account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authenticating_until: Option<i64>,
    /// Absent on orders written before vendors could reject (issue 30): read as none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bouquets_withdrawn: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refunded_at: Option<i64>,
    /// Absent on orders written before delivery details (issue 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// The pricing given with the details (absent before issue 41 and until then): the
    /// total is the lines plus `deliveryFeeMinor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_fee_minor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_day_surcharge_minor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vat_number: Option<String>,
    #[serde(default)]
    pub flowers_vat_bps: u16,
    #[serde(default)]
    pub delivery_vat_bps: u16,
    /// The shop's invoice number of a paid order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoice_number: Option<u64>,
    /// When it was delivered (absent before issue 42).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fulfilled_at: Option<i64>,
    /// The proof-of-delivery photo's sizes (their keys in the private upload bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_photo: Option<bouquet_domain::photo::Photo>,
    #[serde(default = "default_personal_data_days")]
    pub personal_data_days: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted_at: Option<i64>,
    pub version: u64,
    pub created_at: i64,
    pub updated_at: i64,
    /// `VendorStatusIndex`: a vendor's orders in one state, by delivery date, slot and id
    /// (`2026-12-05#1#01J...`). Absent on orders not written since issue 30 until their next
    /// change.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor_status_key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vendor_status_sort: String,
    pub customer_key: String,
    pub customer_sort: String,
    pub vendor_key: String,
    pub vendor_sort: String,
    /// Present only while the order holds bouquets (`reserved`, `payment_pending`): the
    /// expiry sweep's sparse index, by when the order is due ([`Order::due_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<i64>,
}

impl OrderItem {
    pub fn from_domain(o: &Order) -> Self {
        let id = o.order_id.to_string();
        Self {
            pk: keys::order_pk(&id),
            sk: keys::ORDER_SK.into(),
            entity: "order".into(),
            customer_id: o.customer_id.to_string(),
            vendor_id: o.vendor_id.to_string(),
            lines: o
                .lines
                .iter()
                .map(|l| OrderLineItem {
                    bouquet_id: l.bouquet_id.to_string(),
                    name: l.name.clone(),
                    price_minor: l.price.minor(),
                    list_price_minor: l.list_price.map(|p| p.minor()),
                })
                .collect(),
            total_minor: o.total.minor(),
            currency: o.total.currency().code().to_owned(),
            status: o.status.name().into(),
            reserved_until: o.reserved_until.as_millis(),
            payment_started_at: o.payment_started_at.map(Timestamp::as_millis),
            payment_attempt: o.payment_attempt,
            charge_id: o.charge_id.clone(),
            commission_bps: o.settlement.map(|s| s.rate().basis_points()),
            fee_minor: o.settlement.map(|s| s.fee().minor()),
            payout_account: o.payout_account.clone(),
            authenticating_until: o.authenticating_until.map(Timestamp::as_millis),
            rejection_reason: o.rejection_reason.clone(),
            bouquets_withdrawn: o.bouquets_withdrawn,
            refunded_at: o.refunded_at.map(Timestamp::as_millis),
            delivery: o.delivery.clone(),
            delivery_fee_minor: o.pricing.as_ref().map(|p| p.delivery_fee.minor()),
            same_day_surcharge_minor: o.pricing.as_ref().map(|p| p.same_day_surcharge.minor()),
            delivery_zone: o.pricing.as_ref().and_then(|p| p.zone.clone()),
            vat_number: o.pricing.as_ref().and_then(|p| p.vat.number.clone()),
            flowers_vat_bps: o.pricing.as_ref().map_or(0, |p| p.vat.flowers_basis_points),
            delivery_vat_bps: o
                .pricing
                .as_ref()
                .map_or(0, |p| p.vat.delivery_basis_points),
            invoice_number: o.invoice_number,
            fulfilled_at: o.fulfilled_at.map(Timestamp::as_millis),
            delivery_photo: o.delivery_photo.clone(),
            personal_data_days: o.personal_data_days,
            redacted_at: o.redacted_at.map(Timestamp::as_millis),
            version: o.version,
            created_at: o.created_at.as_millis(),
            updated_at: o.updated_at.as_millis(),
            vendor_status_key: keys::vendor_status_key(&o.vendor_id.to_string(), o.status.name()),
            vendor_status_sort: keys::status_sort(o.delivery.as_ref(), &id),
            customer_key: keys::customer_orders_key(o.customer_id.as_str()),
            customer_sort: id.clone(),
            vendor_key: keys::vendor_orders_key(&o.vendor_id.to_string()),
            vendor_sort: id.clone(),
            expiry_shard: o.due_at().map(|_| keys::expiry_shard(&id)),
            due_at: o.due_at().map(Timestamp::as_millis),
            order_id: id,
        }
    }

    pub fn into_domain(self) -> Result<Order, StoreError> {
        let currency = self.currency.clone();
        let total = money(self.total_minor, &self.currency)?;
        let settlement = match (self.commission_bps, self.fee_minor) {
            (Some(bps), Some(fee)) => Some(
                CommissionRate::from_basis_points(bps.into())
                    .map_err(StoreError::corrupt)
                    .and_then(|rate| {
                        Settlement::recorded(rate, total, fee).map_err(StoreError::corrupt)
                    })?,
            ),
            (None, None) => None,
            _ => {
                return Err(StoreError::corrupt(
                    "an order's fee without its rate, or its rate without its fee",
                ))
            }
        };
        let pricing = match self.delivery_fee_minor {
            Some(fee) => Some(Pricing {
                delivery_fee: money(fee, &currency)?,
                same_day_surcharge: money(self.same_day_surcharge_minor.unwrap_or(0), &currency)?,
                zone: self.delivery_zone,
                vat: VatRates {
                    number: self.vat_number,
                    flowers_basis_points: self.flowers_vat_bps,
                    delivery_basis_points: self.delivery_vat_bps,
                },
            }),
            None => None,
        };
        let mut order = Order {
            order_id: OrderId::parse(&self.order_id).map_err(StoreError::corrupt)?,
            customer_id: CustomerId::parse(&self.customer_id).map_err(StoreError::corrupt)?,
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            lines: self
                .lines
                .into_iter()
                .map(|l| {
                    Ok(OrderLine {
                        bouquet_id: BouquetId::parse(&l.bouquet_id).map_err(StoreError::corrupt)?,
                        name: l.name,
                        price: money(l.price_minor, &currency)?,
                        list_price: l
                            .list_price_minor
                            .map(|minor| money(minor, &currency))
                            .transpose()?,
                    })
                })
                .collect::<Result<_, StoreError>>()?,
            total,
            status: OrderStatus::parse(&self.status)
                .ok_or_else(|| StoreError::corrupt(format!("order status {:?}", self.status)))?,
            reserved_until: Timestamp::from_millis(self.reserved_until),
            payment_started_at: self.payment_started_at.map(Timestamp::from_millis),
            payment_attempt: self.payment_attempt,
            charge_id: self.charge_id,
            settlement,
            payout_account: self.payout_account,
            authenticating_until: self.authenticating_until.map(Timestamp::from_millis),
            rejection_reason: self.rejection_reason,
            bouquets_withdrawn: self.bouquets_withdrawn,
            refunded_at: self.refunded_at.map(Timestamp::from_millis),
            delivery: self.delivery,
            pricing: None,
            receipt: None,
            invoice_number: self.invoice_number,
            fulfilled_at: self.fulfilled_at.map(Timestamp::from_millis),
            delivery_photo: self.delivery_photo,
            personal_data_days: self.personal_data_days,
            redacted_at: self.redacted_at.map(Timestamp::from_millis),
            version: self.version,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        };
        if let Some(pricing) = pricing {
            order.price(pricing).map_err(StoreError::corrupt)?;
            if order.total != total {
                return Err(StoreError::corrupt(
                    "an order's total is not its lines plus its delivery fee",
                ));
            }
        }
        Ok(order)
    }
}
