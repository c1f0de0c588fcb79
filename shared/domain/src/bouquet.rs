//! Bouquets and their lifecycle: `available` → `reserved` (until a deadline) → `sold`;
//! `reserved` → `available` on cancel or expiry; `available` → `withdrawn`.
//!
//! A hold whose deadline has passed counts as available to the next reserver even before a
//! sweeper has released it: [`Bouquet::is_available`] is the one definition of that, and the
//! store's condition expressions say the same thing to DynamoDB.

use serde::Serialize;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::ids::{BouquetId, OrderId, VaseId, VendorId};
use crate::markdown::{MarkdownRule, MarkdownStep, Repricing};
use crate::money::Money;
use crate::photo::Photo;
use crate::search::Occasion;
use crate::text;
use crate::validation::{FieldError, Validation};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BouquetStatus {
    Available,
    Reserved { order_id: OrderId, until: Timestamp },
    Sold { order_id: OrderId },
    Withdrawn,
}

impl BouquetStatus {
    /// Available or held by a reservation (whatever the hold's end, whatever its shop's
    /// suspension): still the shop's to sell. A sold or withdrawn bouquet has left sale (a
    /// rejected order may return a sold one: that is a new move back on sale).
    pub fn is_on_sale(&self) -> bool {
        matches!(
            self,
            BouquetStatus::Available | BouquetStatus::Reserved { .. }
        )
    }

    pub fn name(&self) -> &'static str {
        match self {
            BouquetStatus::Available => "available",
            BouquetStatus::Reserved { .. } => "reserved",
            BouquetStatus::Sold { .. } => "sold",
            BouquetStatus::Withdrawn => "withdrawn",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bouquet {
    pub bouquet_id: BouquetId,
    pub vendor_id: VendorId,
    pub name: String,
    pub description: String,
    /// What it sells at now: the list price, or less once its freshness marked it down.
    pub price: Money,
    /// The price the florist set; `price` while not marked down.
    pub list_price: Money,
    /// The step of the shop's markdown rule that set `price` (`None` at list price).
    pub markdown: Option<MarkdownStep>,
    /// The florist keeps this bouquet at its list price whatever its freshness.
    pub markdown_opt_out: bool,
    /// The occasions its florist tagged it with (issue 54).
    pub occasions: Vec<Occasion>,
    pub vase_id: Option<VaseId>,
    pub status: BouquetStatus,
    /// Bumped by every change; the `ETag` and the `If-Match` precondition.
    pub version: u64,
    /// 0..=100 once the bouquet's vase has reported; `None` before.
    pub freshness: Option<u8>,
    /// The vendor's photo, once one was uploaded and processed.
    pub photo: Option<Photo>,
    /// When it was taken off sale with its suspended shop (`None` while the shop trades):
    /// off the catalogue, not for sale, whatever its status.
    pub suspended_at: Option<Timestamp>,
    pub listed_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a vendor supplies to list a bouquet, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewBouquet {
    pub name: String,
    pub description: String,
    pub price: Money,
    pub vase_id: Option<VaseId>,
    pub markdown_opt_out: bool,
    pub occasions: Vec<Occasion>,
}

impl NewBouquet {
    pub fn validate(
        name: &str,
        description: Option<&str>,
        price: (&str, &str),
        vase_id: Option<&str>,
    ) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        let name = v.check("name", text::name(name));
        let description = v.check("description", text::description(description.unwrap_or("")));
        let price = price_field(&mut v, price);
        let vase_id = match vase_id {
            Some(raw) => v.check("vaseId", VaseId::parse(raw)).map(Some),
            None => Some(None),
        };
        v.finish(|| NewBouquet {
            name: name.unwrap_or_default(),
            description: description.unwrap_or_default(),
            price: price.expect("checked"),
            vase_id: vase_id.flatten(),
            markdown_opt_out: false,
            occasions: Vec::new(),
        })
    }
}

/// A partial update (PATCH): each field that is present replaces the current value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BouquetChange {
    pub name: Option<String>,
    pub description: Option<String>,
    pub price: Option<Money>,
    pub markdown_opt_out: Option<bool>,
    pub occasions: Option<Vec<Occasion>>,
}

impl BouquetChange {
    pub fn validate(
        name: Option<&str>,
        description: Option<&str>,
        price: Option<(&str, &str)>,
        markdown_opt_out: Option<bool>,
        occasions: Option<&[String]>,
    ) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        let name = name.map(|n| v.check("name", text::name(n)));
        let description = description.map(|d| v.check("description", text::description(d)));
        let price = price.map(|p| price_field(&mut v, p));
        let occasions = occasions.map(|o| {
            v.check(
                "occasions",
                crate::search::occasions(o).map_err(|e| e.message),
            )
        });
        if name.is_none()
            && description.is_none()
            && price.is_none()
            && markdown_opt_out.is_none()
            && occasions.is_none()
        {
            v.add(
                "",
                "give at least one of name, description, price, markdownOptOut",
            );
        }
        v.finish(|| BouquetChange {
            name: name.flatten(),
            description: description.flatten(),
            price: price.flatten(),
            markdown_opt_out,
            occasions: occasions.flatten(),
        })
    }
}

fn price_field(v: &mut Validation, (amount, currency): (&str, &str)) -> Option<Money> {
    match Money::parse_price(amount, currency) {
        Ok(money) => Some(money),
        Err(error @ crate::money::MoneyError::UnknownCurrency(_)) => {
            v.add("price.currency", error);
            None
        }
        Err(error) => {
            v.add("price.amount", error);
            None
        }
    }
}

impl Bouquet {
    pub fn list(vendor_id: VendorId, new: NewBouquet, now: Timestamp) -> Bouquet {
        Bouquet {
            bouquet_id: BouquetId::generate(),
            vendor_id,
            name: new.name,
            description: new.description,
            price: new.price,
            list_price: new.price,
            markdown: None,
            markdown_opt_out: new.markdown_opt_out,
            occasions: new.occasions,
            vase_id: new.vase_id,
            status: BouquetStatus::Available,
            version: 1,
            freshness: None,
            photo: None,
            suspended_at: None,
            listed_at: now,
            updated_at: now,
        }
    }

    /// Available, or held by a reservation whose deadline has passed, and its shop not
    /// suspended.
    pub fn is_available(&self, now: Timestamp) -> bool {
        if self.is_suspended() {
            return false;
        }
        match self.status {
            BouquetStatus::Available => true,
            BouquetStatus::Reserved { until, .. } => until < now,
            BouquetStatus::Sold { .. } | BouquetStatus::Withdrawn => false,
        }
    }

    /// The status a reader should see: an expired hold shows as available.
    pub fn effective_status(&self, now: Timestamp) -> BouquetStatus {
        if self.is_available(now) {
            BouquetStatus::Available
        } else {
            self.status
        }
    }

    pub fn reserve(
        &mut self,
        order_id: OrderId,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<(), DomainError> {
        if !self.is_available(now) {
            return Err(DomainError::BouquetUnavailable(vec![self.bouquet_id]));
        }
        self.status = BouquetStatus::Reserved { order_id, until };
        self.touch(now);
        Ok(())
    }

    pub fn change(&mut self, change: BouquetChange, now: Timestamp) -> Result<(), DomainError> {
        if !self.is_available(now) {
            return Err(DomainError::BouquetNotAvailableForChange);
        }
        if let Some(name) = change.name {
            self.name = name;
        }
        if let Some(description) = change.description {
            self.description = description;
        }
        // A price the florist sets is the new list price: any markdown starts again from it.
        if let Some(price) = change.price {
            self.price = price;
            self.list_price = price;
            self.markdown = None;
        }
        if let Some(opt_out) = change.markdown_opt_out {
            self.markdown_opt_out = opt_out;
        }
        if let Some(occasions) = change.occasions {
            self.occasions = occasions;
        }
        // Changing a bouquet whose hold expired also ends that hold.
        self.status = BouquetStatus::Available;
        self.touch(now);
        Ok(())
    }

    pub fn withdraw(&mut self, now: Timestamp) -> Result<(), DomainError> {
        if !self.is_available(now) {
            return Err(DomainError::BouquetNotAvailableForChange);
        }
        self.status = BouquetStatus::Withdrawn;
        self.touch(now);
        Ok(())
    }

    /// Releases the hold of `order_id` (cancel or expiry). A hold taken over by another
    /// order is not touched.
    pub fn release(&mut self, order_id: OrderId, now: Timestamp) -> bool {
        match self.status {
            BouquetStatus::Reserved {
                order_id: holder, ..
            } if holder == order_id => {
                self.status = BouquetStatus::Available;
                self.touch(now);
                true
            }
            _ => false,
        }
    }

    /// Moves the end of the hold of `order_id` (a payment attempt extends it, a decline
    /// restores it). A hold taken over by another order is not touched.
    pub fn hold(&mut self, order_id: OrderId, until: Timestamp, now: Timestamp) -> bool {
        match self.status {
            BouquetStatus::Reserved {
                order_id: holder, ..
            } if holder == order_id => {
                self.status = BouquetStatus::Reserved { order_id, until };
                self.touch(now);
                true
            }
            _ => false,
        }
    }

    /// Sells the bouquet to the order that holds it.
    pub fn sell(&mut self, order_id: OrderId, now: Timestamp) -> Result<(), DomainError> {
        match self.status {
            BouquetStatus::Reserved {
                order_id: holder, ..
            } if holder == order_id => {
                self.status = BouquetStatus::Sold { order_id };
                self.touch(now);
                Ok(())
            }
            _ => Err(DomainError::BouquetUnavailable(vec![self.bouquet_id])),
        }
    }

    /// A sale undone (its order rejected by the vendor, the customer refunded): the bouquet
    /// is on sale again. `false`, and no change, unless it was sold to `order_id`.
    pub fn return_to_sale(&mut self, order_id: OrderId, now: Timestamp) -> bool {
        self.undo_sale(order_id, BouquetStatus::Available, now)
    }

    /// Sold to `order_id`, taken off sale for good (the vendor rejected the order and will not
    /// sell the bouquet again). `false`, and no change, when it is not that order's.
    pub fn withdraw_sold(&mut self, order_id: OrderId, now: Timestamp) -> bool {
        self.undo_sale(order_id, BouquetStatus::Withdrawn, now)
    }

    /// Moves a bouquet sold to `order_id` to `status`; `false`, and no change, otherwise.
    fn undo_sale(&mut self, order_id: OrderId, status: BouquetStatus, now: Timestamp) -> bool {
        match self.status {
            BouquetStatus::Sold { order_id: buyer } if buyer == order_id => {
                self.status = status;
                self.touch(now);
                true
            }
            _ => false,
        }
    }

    /// Its shop is suspended: off the catalogue, not for sale.
    pub fn is_suspended(&self) -> bool {
        self.suspended_at.is_some()
    }

    /// Takes the bouquet off sale with its suspended shop (`true`), or puts it back
    /// (`false`). `false`, and no change, when it already is so.
    pub fn set_suspended(&mut self, suspended: bool, now: Timestamp) -> bool {
        if self.is_suspended() == suspended {
            return false;
        }
        self.suspended_at = suspended.then_some(now);
        self.touch(now);
        true
    }

    /// Shows `photo` from now on, whatever the bouquet's status (a photo is not a change of
    /// what was sold). `false`, and no change, when the bouquet already shows this upload or a
    /// later one.
    pub fn set_photo(&mut self, photo: Photo, now: Timestamp) -> bool {
        if !photo.replaces(self.photo.as_ref()) {
            return false;
        }
        self.photo = Some(photo);
        self.touch(now);
        true
    }

    /// What its new freshness `score` does to its price under the shop's `rule` (an opted-out
    /// bouquet keeps its list price; a sold or withdrawn one is never repriced).
    pub fn reprice(&self, rule: &MarkdownRule, score: u8, now: Timestamp) -> Repricing {
        if self.markdown_opt_out || !self.status.is_on_sale() || self.is_suspended() {
            return Repricing::Unchanged;
        }
        rule.reprice(self.list_price, self.price, score, self.is_available(now))
    }

    /// Sells at `price` by `step` from now on (a [`Repricing::MarkDown`]).
    pub fn mark_down(&mut self, price: Money, step: MarkdownStep, now: Timestamp) {
        self.price = price;
        self.markdown = Some(step);
        self.touch(now);
    }

    fn touch(&mut self, now: Timestamp) {
        self.version += 1;
        self.updated_at = now;
    }

    /// The public view: no order ids, the effective status.
    pub fn view(&self, now: Timestamp) -> BouquetView {
        let status = self.effective_status(now);
        BouquetView {
            bouquet_id: self.bouquet_id,
            vendor_id: self.vendor_id,
            name: self.name.clone(),
            description: self.description.clone(),
            price: self.price,
            list_price: self.markdown.map(|_| self.list_price),
            markdown: self.markdown,
            markdown_opt_out: self.markdown_opt_out,
            occasions: self.occasions.clone(),
            vase_id: self.vase_id,
            status: status.name(),
            reserved_until: match status {
                BouquetStatus::Reserved { until, .. } => Some(until),
                _ => None,
            },
            freshness: self.freshness,
            photo: self.photo.clone(),
            suspended: self.is_suspended(),
            version: self.version,
            vendor_name: None,
            shop_rating: None,
            listed_at: self.listed_at,
            updated_at: self.updated_at,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BouquetView {
    pub bouquet_id: BouquetId,
    pub vendor_id: VendorId,
    pub name: String,
    pub description: String,
    pub price: Money,
    /// Present while marked down: the price it was listed at ("was").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_price: Option<Money>,
    /// The markdown step that applies, while marked down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub markdown: Option<MarkdownStep>,
    pub markdown_opt_out: bool,
    pub occasions: Vec<Occasion>,
    pub vase_id: Option<VaseId>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_until: Option<Timestamp>,
    pub freshness: Option<u8>,
    pub photo: Option<Photo>,
    /// Its shop is suspended: not for sale.
    pub suspended: bool,
    pub version: u64,
    pub listed_at: Timestamp,
    pub updated_at: Timestamp,
    /// The shop's name, where the reader joined it (the catalogue's pages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor_name: Option<String>,
    /// The shop's rating, where the reader joined it (the catalogue's pages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shop_rating: Option<crate::rating::Rating>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::money::Currency;
    use std::time::Duration;

    pub fn bouquet(vendor: VendorId, price_minor: i64, now: Timestamp) -> Bouquet {
        let price = Money::from_minor(price_minor, Currency::parse("EUR").unwrap());
        Bouquet::list(
            vendor,
            NewBouquet {
                name: "Peonies".into(),
                description: String::new(),
                price,
                vase_id: None,
                markdown_opt_out: false,
                occasions: Vec::new(),
            },
            now,
        )
    }

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

    #[test]
    fn a_hold_blocks_others_until_its_deadline_passes() {
        let mut b = bouquet(VendorId::generate(), 2450, T0);
        let first = OrderId::generate();
        let until = T0.plus(Duration::from_secs(900));
        b.reserve(first, until, T0).unwrap();
        assert_eq!(b.version, 2);
        assert!(b.reserve(OrderId::generate(), until, T0).is_err());
        assert!(!b.is_available(until), "the deadline itself is still held");
        let later = until.plus(Duration::from_millis(1));
        assert!(b.is_available(later));
        assert_eq!(b.view(later).status, "available");
        let second = OrderId::generate();
        b.reserve(second, later.plus(Duration::from_secs(900)), later)
            .unwrap();
        assert!(
            !b.release(first, later),
            "the first order no longer holds it"
        );
        assert!(b.sell(first, later).is_err(), "nor can it buy it");
        b.sell(second, later).unwrap();
        assert_eq!(b.status, BouquetStatus::Sold { order_id: second });
    }

    #[test]
    fn changes_and_withdrawal_only_while_available() {
        let mut b = bouquet(VendorId::generate(), 2450, T0);
        let change = BouquetChange {
            name: Some("Tulips".into()),
            ..Default::default()
        };
        b.change(change.clone(), T0).unwrap();
        assert_eq!((b.name.as_str(), b.version), ("Tulips", 2));
        b.reserve(OrderId::generate(), T0.plus(Duration::from_secs(60)), T0)
            .unwrap();
        assert_eq!(
            b.change(change, T0),
            Err(DomainError::BouquetNotAvailableForChange)
        );
        assert_eq!(
            b.withdraw(T0),
            Err(DomainError::BouquetNotAvailableForChange)
        );
        b.withdraw(T0.plus(Duration::from_secs(61))).unwrap();
        assert_eq!(b.status, BouquetStatus::Withdrawn);
        assert!(!b.is_available(T0));
    }

    #[test]
    fn validation_reports_every_field() {
        let errors = NewBouquet::validate("", None, ("1.234", "EUR"), Some("nope")).unwrap_err();
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "price.amount", "vaseId"]);
        let errors = NewBouquet::validate("Roses", None, ("10.00", "ABC"), None).unwrap_err();
        assert_eq!(errors[0].field, "price.currency");
        assert!(BouquetChange::validate(None, None, None, None, None).is_err());
    }
}
