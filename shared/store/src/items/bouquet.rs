//! A bouquet as stored, with its catalogue and index keys.

use serde::{Deserialize, Serialize};

use bouquet_domain::{Bouquet, BouquetId, BouquetStatus, OrderId, Timestamp, VaseId, VendorId};

use super::money;
use crate::error::StoreError;
use crate::keys;

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
    /// The list price while marked down (absent: `priceMinor` is the list price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_price_minor: Option<i64>,
    /// The markdown step that set the price, while marked down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<bouquet_domain::markdown::MarkdownStep>,
    /// `true` when the florist keeps it at its list price (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown_opt_out: Option<bool>,
    /// Its occasions' names (absent: none), for the catalogue's `contains` filter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occasions: Vec<bouquet_domain::search::Occasion>,
    /// The stems of its name's and description's words (`bouquet_domain::search::terms`),
    /// rewritten with them, for the catalogue's text search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_terms: Vec<String>,
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
        "listPriceMinor",
        "markdown",
        "markdownOptOut",
        "occasions",
        "searchTerms",
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
            list_price_minor: b.markdown.map(|_| b.list_price.minor()),
            markdown: b.markdown,
            markdown_opt_out: b.markdown_opt_out.then_some(true),
            occasions: b.occasions.clone(),
            search_terms: bouquet_domain::search::terms(&[&b.name, &b.description]),
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
            list_price: money(
                self.list_price_minor.unwrap_or(self.price_minor),
                &self.currency,
            )?,
            markdown: self.markdown,
            markdown_opt_out: self.markdown_opt_out.unwrap_or(false),
            occasions: self.occasions,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{from_item, to_item};
    use bouquet_domain::bouquet::NewBouquet;
    use bouquet_domain::Money;
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
                markdown_opt_out: false,
                occasions: Vec::new(),
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
