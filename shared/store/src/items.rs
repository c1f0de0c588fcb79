//! The stored form of each entity and its conversion to and from the domain. Attribute
//! names are camelCase; times are epoch milliseconds (numbers, so conditions can compare).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::{
    Bouquet, BouquetId, BouquetStatus, Currency, CustomerId, Money, Order, OrderId, OrderLine,
    OrderStatus, Timestamp, VaseId, Vendor, VendorId,
};

use bouquet_domain::commission::{CommissionRate, Settlement};
use bouquet_domain::delivery::Delivery;
use bouquet_domain::pricing::{Pricing, VatRates};
use bouquet_domain::vendor::{CommissionChange, PayoutAccount};

/// A stored commission, in basis points.
fn rate(bps: u16) -> Result<CommissionRate, StoreError> {
    CommissionRate::from_basis_points(bps.into()).map_err(StoreError::corrupt)
}

use crate::error::StoreError;
use crate::keys;

pub type Item = HashMap<String, AttributeValue>;

pub fn to_item<T: Serialize>(record: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(record).map_err(StoreError::corrupt)
}

pub fn from_item<T: for<'de> Deserialize<'de>>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(StoreError::corrupt)
}

fn money(minor: i64, currency: &str) -> Result<Money, StoreError> {
    Ok(Money::from_minor(
        minor,
        Currency::parse(currency).map_err(StoreError::corrupt)?,
    ))
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VendorItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    pub vendor_id: String,
    pub name: String,
    pub version: u64,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_at: Option<i64>,
    /// `VendorIndex`'s list of every shop: `VENDORS`, by id (absent on shops created before
    /// it, until their next change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_sort: Option<String>,
    /// The shop's connected payment account (absent until its onboarding starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout_account_id: Option<String>,
    /// The reservation's `ConditionCheck` reads it: the shop can take charges.
    #[serde(default)]
    pub charges_enabled: bool,
    #[serde(default)]
    pub payouts_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_reported_at: Option<i64>,
    /// The shop's own commission (absent: the marketplace's) and its changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission_bps: Option<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commission_history: Vec<CommissionChangeItem>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommissionChangeItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bps: Option<u16>,
    pub at: i64,
    pub by: String,
}

impl VendorItem {
    pub fn from_domain(v: &Vendor) -> Self {
        let id = v.vendor_id.to_string();
        Self {
            pk: keys::vendor_pk(&id),
            sk: keys::VENDOR_SK.into(),
            entity: "vendor".into(),
            vendor_key: Some(keys::ALL_VENDORS_KEY.into()),
            vendor_sort: Some(id.clone()),
            vendor_id: id,
            name: v.name.clone(),
            version: v.version,
            created_at: v.created_at.as_millis(),
            suspended_at: v.suspended_at.map(Timestamp::as_millis),
            payout_account_id: v.payout_account.as_ref().map(|a| a.account_id.clone()),
            charges_enabled: v.payout_account.as_ref().is_some_and(|a| a.charges_enabled),
            payouts_enabled: v.payout_account.as_ref().is_some_and(|a| a.payouts_enabled),
            account_reported_at: v
                .payout_account
                .as_ref()
                .and_then(|a| a.reported_at)
                .map(Timestamp::as_millis),
            commission_bps: v.commission.map(CommissionRate::basis_points),
            commission_history: v
                .commission_history
                .iter()
                .map(|c| CommissionChangeItem {
                    bps: c.basis_points.map(CommissionRate::basis_points),
                    at: c.at.as_millis(),
                    by: c.by.clone(),
                })
                .collect(),
        }
    }

    pub fn into_domain(self) -> Result<Vendor, StoreError> {
        Ok(Vendor {
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            name: self.name,
            version: self.version,
            created_at: Timestamp::from_millis(self.created_at),
            suspended_at: self.suspended_at.map(Timestamp::from_millis),
            payout_account: self.payout_account_id.map(|account_id| PayoutAccount {
                account_id,
                charges_enabled: self.charges_enabled,
                payouts_enabled: self.payouts_enabled,
                reported_at: self.account_reported_at.map(Timestamp::from_millis),
            }),
            commission: self.commission_bps.map(rate).transpose()?,
            commission_history: self
                .commission_history
                .into_iter()
                .map(|c| {
                    Ok(CommissionChange {
                        basis_points: c.bps.map(rate).transpose()?,
                        at: Timestamp::from_millis(c.at),
                        by: c.by,
                    })
                })
                .collect::<Result<_, StoreError>>()?,
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BouquetItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    pub bouquet_id: String,
    pub vendor_id: String,
    pub name: String,
    pub description: String,
    pub price_minor: i64,
    pub currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vase_id: Option<String>,
    /// `available`, `reserved`, `sold`, `withdrawn`.
    pub status: String,
    /// The order holding or having bought the bouquet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_until: Option<i64>,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness: Option<u8>,
    /// `true` while the shop is suspended (absent otherwise): off the catalogue index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<bool>,
    /// When the bouquet was taken off sale with its shop (absent while the shop trades).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_at: Option<i64>,
    /// The photo's sizes (a map); absent until one was processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub photo: Option<bouquet_domain::photo::Photo>,
    pub listed_at: i64,
    pub updated_at: i64,
    /// Present while listed (available or held), so the catalogue index holds only those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue_sort: Option<String>,
    /// Always present (`keys::freshness_sort`), moved with every score: the bouquet is in
    /// `CatalogueFreshnessIndex` exactly while `catalogueShard` is, i.e. while listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness_sort: Option<String>,
    /// Always present (`keys::price_sort`), rewritten with every change of the price: the
    /// bouquet is in `CataloguePriceIndex` exactly while it has `catalogueShard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_sort: Option<String>,
    /// Always present (`keys::rating_sort`): written unrated with the bouquet, then moved by
    /// the rating projector with its shop's rating (at `ratingVersion`, never backwards), so
    /// the bouquet is in `CatalogueRatingIndex` exactly while it has `catalogueShard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_sort: Option<String>,
    pub vendor_key: String,
    pub vendor_sort: String,
}

impl BouquetItem {
    /// The attributes others write (the vase's score, `Store::save_reading`; the shop's
    /// rating, its projector): a vendor's or an administrator's write leaves them as they are.
    pub const PROJECTED: &'static [&'static str] = &[
        "freshness",
        "freshnessAt",
        "freshnessSort",
        "ratingSort",
        "ratingVersion",
    ];

    /// Attributes a bouquet item carries only in some states.
    pub const OPTIONAL: &'static [&'static str] = &[
        "vaseId",
        "orderId",
        "reservedUntil",
        "catalogueShard",
        "catalogueSort",
        "photo",
        "suspended",
        "suspendedAt",
    ];

    pub fn from_domain(b: &Bouquet) -> Self {
        let id = b.bouquet_id.to_string();
        let listed = !b.is_suspended()
            && matches!(
                b.status,
                BouquetStatus::Available | BouquetStatus::Reserved { .. }
            );
        let (order_id, reserved_until) = match b.status {
            BouquetStatus::Reserved { order_id, until } => {
                (Some(order_id.to_string()), Some(until.as_millis()))
            }
            BouquetStatus::Sold { order_id } => (Some(order_id.to_string()), None),
            BouquetStatus::Available | BouquetStatus::Withdrawn => (None, None),
        };
        Self {
            pk: keys::bouquet_pk(&id),
            sk: keys::BOUQUET_SK.into(),
            entity: "bouquet".into(),
            vendor_id: b.vendor_id.to_string(),
            name: b.name.clone(),
            description: b.description.clone(),
            price_minor: b.price.minor(),
            currency: b.price.currency().code().to_owned(),
            vase_id: b.vase_id.map(|v| v.to_string()),
            status: b.status.name().into(),
            order_id,
            reserved_until,
            version: b.version,
            freshness: b.freshness,
            photo: b.photo.clone(),
            suspended: b.is_suspended().then_some(true),
            suspended_at: b.suspended_at.map(Timestamp::as_millis),
            listed_at: b.listed_at.as_millis(),
            updated_at: b.updated_at.as_millis(),
            catalogue_shard: listed.then(|| keys::catalogue_shard(&id)),
            catalogue_sort: listed.then(|| id.clone()),
            freshness_sort: Some(keys::freshness_sort(b.freshness, &id)),
            price_sort: Some(keys::price_sort(b.price.minor(), &id)),
            rating_sort: Some(keys::rating_sort(&Default::default(), &id)),
            vendor_key: keys::vendor_bouquets_key(&b.vendor_id.to_string()),
            vendor_sort: id.clone(),
            bouquet_id: id,
        }
    }

    pub fn into_domain(self) -> Result<Bouquet, StoreError> {
        let order = || -> Result<OrderId, StoreError> {
            OrderId::parse(self.order_id.as_deref().unwrap_or_default())
                .map_err(StoreError::corrupt)
        };
        let status = match self.status.as_str() {
            "available" => BouquetStatus::Available,
            "reserved" => BouquetStatus::Reserved {
                order_id: order()?,
                until: Timestamp::from_millis(
                    self.reserved_until
                        .ok_or_else(|| StoreError::corrupt("reserved without reservedUntil"))?,
                ),
            },
            "sold" => BouquetStatus::Sold { order_id: order()? },
            "withdrawn" => BouquetStatus::Withdrawn,
            other => return Err(StoreError::corrupt(format!("bouquet status {other:?}"))),
        };
        Ok(Bouquet {
            bouquet_id: BouquetId::parse(&self.bouquet_id).map_err(StoreError::corrupt)?,
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            name: self.name,
            description: self.description,
            price: money(self.price_minor, &self.currency)?,
            vase_id: self
                .vase_id
                .as_deref()
                .map(VaseId::parse)
                .transpose()
                .map_err(StoreError::corrupt)?,
            status,
            version: self.version,
            freshness: self.freshness,
            photo: self.photo,
            // Items flagged before `suspendedAt` was written: since their last change.
            suspended_at: match (self.suspended, self.suspended_at) {
                (_, Some(at)) => Some(Timestamp::from_millis(at)),
                (Some(true), None) => Some(Timestamp::from_millis(self.updated_at)),
                _ => None,
            },
            listed_at: Timestamp::from_millis(self.listed_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

fn default_personal_data_days() -> u16 {
    bouquet_domain::order::DEFAULT_PERSONAL_DATA_DAYS
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderLineItem {
    pub bouquet_id: String,
    pub name: String,
    pub price_minor: i64,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bouquet_domain::bouquet::NewBouquet;
    use std::time::Duration;

    #[test]
    fn bouquets_round_trip_and_leave_the_catalogue_when_sold() {
        let now = Timestamp::from_millis(1_796_228_211_000);
        let price = Money::parse_price("24.50", "EUR").unwrap();
        let mut b = Bouquet::list(
            VendorId::generate(),
            NewBouquet {
                name: "Peonies".into(),
                description: "pink".into(),
                price,
                vase_id: None,
            },
            now,
        );
        let order = OrderId::generate();
        b.reserve(order, now.plus(Duration::from_secs(900)), now)
            .unwrap();
        let item = to_item(&BouquetItem::from_domain(&b)).unwrap();
        assert!(
            item.contains_key("catalogueShard"),
            "a held bouquet stays listed"
        );
        assert!(
            !item.contains_key("vaseId"),
            "absent options are not written as NULL"
        );
        let back = from_item::<BouquetItem>(item)
            .unwrap()
            .into_domain()
            .unwrap();
        assert_eq!(back, b);
        b.sell(order, now).unwrap();
        let item = to_item(&BouquetItem::from_domain(&b)).unwrap();
        assert!(!item.contains_key("catalogueShard") && !item.contains_key("reservedUntil"));
    }
}
