//! Verified reviews (issue 42): only the customer of a delivered order reviews it, once, within
//! [`REVIEW_WINDOW`] of the delivery: 1 to 5 stars and an optional plain text; editable for
//! [`EDIT_WINDOW`]; the shop answers once; an administrator may hide it, with a reason. A shop's
//! rating is the count and star sum of its visible reviews ([`RatingChange`]). Pure: "now" is the
//! caller's clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::identity::{Identity, Role};
use crate::ids::{CustomerId, OrderId, ReviewId, VendorId};
use crate::order::{Order, OrderStatus};
use crate::text;
use crate::validation::{FieldError, Validation};

pub use crate::rating::{CataloguePlace, Rating, RatingChange};

/// How long after its delivery an order may be reviewed.
pub const REVIEW_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long after it is written a review may be edited.
pub const EDIT_WINDOW: Duration = Duration::from_secs(48 * 3600);
/// The most characters a review's text, a shop's answer or a hiding reason may have.
pub const REVIEW_TEXT_MAX: usize = 1_000;

/// What a customer sends (a new review, or an edit: what is left out stays).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewDraft {
    #[serde(default)]
    pub stars: Option<i64>,
    #[serde(default)]
    pub text: Option<String>,
}

/// The shop's one answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub text: String,
    pub answered_at: Timestamp,
}

/// Why and when an administrator hid a review (the author is told; readers see it no more).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hidden {
    pub reason: String,
    pub hidden_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// What the public knows it by (the shop's page, the catalogue's frames).
    pub review_id: ReviewId,
    /// Never in a review's own view: shown only where the caller may read the order
    /// ([`Review::readable_by`]).
    #[serde(skip)]
    pub order_id: OrderId,
    pub vendor_id: VendorId,
    #[serde(skip)]
    pub customer_id: CustomerId,
    /// 1 to 5.
    pub stars: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub written_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Hidden>,
    pub version: u64,
}

/// Why a review, an edit, an answer or a hiding is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    /// The caller is not the one who may do this (another's order, another shop's review).
    #[error(
        "only the order's customer reviews it; only its shop answers; only an administrator hides"
    )]
    NotAllowed,
    #[error("the order is {0}: only a delivered order is reviewed")]
    NotDelivered(OrderStatus),
    #[error("the order was delivered more than 30 days ago: its review window has closed")]
    WindowClosed,
    #[error("this order has its review already; edit it instead")]
    AlreadyReviewed,
    #[error("a review is editable for 48 hours after it was written")]
    EditWindowClosed,
    #[error("the shop has answered this review already")]
    AlreadyAnswered,
}

fn stars(value: Option<i64>, v: &mut Validation) -> Option<u8> {
    match value {
        Some(n @ 1..=5) => u8::try_from(n).ok(),
        _ => {
            v.add("stars", "must be a whole number from 1 to 5");
            None
        }
    }
}

/// Plain text of at most [`REVIEW_TEXT_MAX`] characters; empty is none.
fn plain(field: &str, value: &str, v: &mut Validation) -> Option<String> {
    v.check(field, text::clean(value, 0, REVIEW_TEXT_MAX, true))
        .filter(|t| !t.is_empty())
}

/// Only the customer of the reviewed order writes or edits its review.
fn require_customer(caller: &Identity, customer_id: &CustomerId) -> Result<(), ReviewError> {
    if caller.role == Role::Customer && *customer_id == caller.subject {
        Ok(())
    } else {
        Err(ReviewError::NotAllowed)
    }
}

/// A [`plain`] text that must not be empty; `missing` is the field's error when it is.
fn required_plain(field: &str, value: &str, missing: &str) -> Result<String, ReviewError> {
    let mut v = Validation::new();
    let text = plain(field, value, &mut v);
    if text.is_none() && v.is_empty() {
        v.add(field, missing);
    }
    // Without an error the text is there.
    v.finish(|| text.unwrap_or_default())
        .map_err(ReviewError::Invalid)
}

impl Review {
    /// Whether `caller` may know of this review beyond its public view: as of its order.
    pub fn readable_by(&self, caller: &Identity) -> bool {
        caller.may_read(&self.customer_id, self.vendor_id)
    }

    /// Its author asked for erasure: the text goes, the stars stay (the shop's rating is not
    /// personal data, and a review never shows who wrote it). `false` when it had no text.
    pub fn erase_text(&mut self) -> bool {
        if self.text.take().is_none() {
            return false;
        }
        self.version += 1;
        true
    }

    /// `caller` reviews `order` at `now`: its customer, once it was delivered, within the window.
    /// (That it is the first review of the order is the store's condition.)
    pub fn write(
        order: &Order,
        caller: &Identity,
        draft: &ReviewDraft,
        now: Timestamp,
    ) -> Result<Review, ReviewError> {
        require_customer(caller, &order.customer_id)?;
        if order.status != OrderStatus::Fulfilled {
            return Err(ReviewError::NotDelivered(order.status));
        }
        let delivered = order.fulfilled_at.unwrap_or(order.updated_at);
        if now > delivered.plus(REVIEW_WINDOW) {
            return Err(ReviewError::WindowClosed);
        }
        let mut v = Validation::new();
        let stars = stars(draft.stars, &mut v);
        let text = draft.text.as_deref().and_then(|t| plain("text", t, &mut v));
        let stars = v.finish(|| stars).map_err(ReviewError::Invalid)?;
        Ok(Review {
            review_id: ReviewId::generate(),
            order_id: order.order_id,
            vendor_id: order.vendor_id,
            customer_id: order.customer_id.clone(),
            stars: stars.unwrap_or(1),
            text,
            written_at: now,
            edited_at: None,
            answer: None,
            hidden: None,
            version: 1,
        })
    }

    /// Its author changes it within [`EDIT_WINDOW`]: the fields given. Returns the stars it had.
    pub fn edit(
        &mut self,
        caller: &Identity,
        draft: &ReviewDraft,
        now: Timestamp,
    ) -> Result<u8, ReviewError> {
        require_customer(caller, &self.customer_id)?;
        if now > self.written_at.plus(EDIT_WINDOW) {
            return Err(ReviewError::EditWindowClosed);
        }
        let mut v = Validation::new();
        let stars = draft.stars.map(|n| stars(Some(n), &mut v));
        let text = draft.text.as_deref().map(|t| plain("text", t, &mut v));
        v.finish(|| ()).map_err(ReviewError::Invalid)?;
        let previous = self.stars;
        if let Some(Some(stars)) = stars {
            self.stars = stars;
        }
        if let Some(text) = text {
            self.text = text;
        }
        self.edited_at = Some(now);
        self.version += 1;
        Ok(previous)
    }

    /// Its shop answers, once.
    pub fn answer(
        &mut self,
        caller: &Identity,
        text: &str,
        now: Timestamp,
    ) -> Result<(), ReviewError> {
        caller
            .require_vendor(self.vendor_id)
            .map_err(|_| ReviewError::NotAllowed)?;
        if self.answer.is_some() {
            return Err(ReviewError::AlreadyAnswered);
        }
        let text = required_plain("text", text, "must not be empty")?;
        self.answer = Some(Answer {
            text,
            answered_at: now,
        });
        self.version += 1;
        Ok(())
    }

    /// An administrator hides it with a reason. `Ok(false)`: it was hidden already.
    pub fn hide(
        &mut self,
        caller: &Identity,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool, ReviewError> {
        if caller.role != Role::Admin {
            return Err(ReviewError::NotAllowed);
        }
        let reason = required_plain("reason", reason, "must say why")?;
        if self.hidden.is_some() {
            return Ok(false);
        }
        self.hidden = Some(Hidden {
            reason,
            hidden_at: now,
        });
        self.version += 1;
        Ok(true)
    }

    pub fn visible(&self) -> bool {
        self.hidden.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bouquet::tests::bouquet;
    use crate::order::DEFAULT_HOLD;
    use proptest::prelude::*;

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);
    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn identity(name: &str, role: Role, vendor_id: Option<VendorId>) -> Identity {
        Identity {
            subject: CustomerId::parse(name).unwrap(),
            role,
            vendor_id,
            email: None,
        }
    }

    fn customer(name: &str) -> Identity {
        identity(name, Role::Customer, None)
    }

    fn delivered(at: Timestamp) -> Order {
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order =
            Order::reserve(CustomerId::parse("ana").unwrap(), &[b], DEFAULT_HOLD, T0).unwrap();
        order.status = OrderStatus::Fulfilled;
        order.fulfilled_at = Some(at);
        order
    }

    fn draft(stars: i64, text: &str) -> ReviewDraft {
        ReviewDraft {
            stars: Some(stars),
            text: Some(text.into()),
        }
    }

    #[test]
    fn a_rating_reads_as_its_average_to_a_tenth_its_count_and_its_stars() {
        let rating = Rating {
            by_stars: [0, 0, 1, 0, 2],
        };
        // (3 + 5 + 5) / 3 = 4.333... → 4.3; 4.25 → 4.3 (half up).
        assert_eq!(rating.average_tenths(), Some(43));
        assert_eq!(
            serde_json::to_value(rating).unwrap(),
            serde_json::json!({"average": 4.3, "count": 3, "byStars": [0, 0, 1, 0, 2]})
        );
        let half = Rating {
            by_stars: [0, 0, 0, 3, 1],
        };
        assert_eq!(half.average_tenths(), Some(43));
        assert_eq!(
            serde_json::to_value(Rating::default()).unwrap(),
            serde_json::json!({"average": null, "count": 0, "byStars": [0, 0, 0, 0, 0]})
        );
    }

    #[test]
    fn only_the_customer_of_a_delivered_order_reviews_it_within_thirty_days() {
        let order = delivered(T0);
        let review = Review::write(
            &order,
            &customer("ana"),
            &draft(5, "  Lovely peonies  "),
            T0.plus(DAY),
        )
        .unwrap();
        assert_eq!(
            (review.stars, review.text.as_deref()),
            (5, Some("Lovely peonies"))
        );
        assert_eq!(
            Review::write(&order, &customer("bob"), &draft(5, ""), T0),
            Err(ReviewError::NotAllowed)
        );
        let mut paid = order.clone();
        paid.status = OrderStatus::Paid;
        assert_eq!(
            Review::write(&paid, &customer("ana"), &draft(5, ""), T0),
            Err(ReviewError::NotDelivered(OrderStatus::Paid))
        );
        assert!(Review::write(
            &order,
            &customer("ana"),
            &draft(4, ""),
            T0.plus(REVIEW_WINDOW)
        )
        .is_ok());
        assert_eq!(
            Review::write(
                &order,
                &customer("ana"),
                &draft(4, ""),
                T0.plus(REVIEW_WINDOW).plus(Duration::from_millis(1))
            ),
            Err(ReviewError::WindowClosed)
        );
        let errors =
            match Review::write(&order, &customer("ana"), &draft(6, &"x".repeat(1_001)), T0) {
                Err(ReviewError::Invalid(errors)) => errors,
                other => panic!("{other:?}"),
            };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["stars", "text"]);
    }

    #[test]
    fn a_review_is_edited_for_48_hours_answered_once_and_hidden_with_a_reason() {
        let order = delivered(T0);
        let mut review = Review::write(&order, &customer("ana"), &draft(2, "Late"), T0).unwrap();
        assert_eq!(
            review.edit(
                &customer("ana"),
                &draft(4, "Late, but lovely"),
                T0.plus(EDIT_WINDOW)
            ),
            Ok(2)
        );
        assert_eq!((review.stars, review.version), (4, 2));
        assert_eq!(
            review.edit(
                &customer("ana"),
                &draft(5, ""),
                T0.plus(EDIT_WINDOW).plus(Duration::from_millis(1))
            ),
            Err(ReviewError::EditWindowClosed)
        );
        assert_eq!(
            review.edit(&customer("bob"), &draft(1, ""), T0),
            Err(ReviewError::NotAllowed)
        );
        let shop = identity("florist", Role::Vendor, Some(order.vendor_id));
        assert_eq!(
            review.answer(&customer("ana"), "Thanks", T0),
            Err(ReviewError::NotAllowed)
        );
        assert!(matches!(
            review.answer(&shop, "  ", T0),
            Err(ReviewError::Invalid(_))
        ));
        review.answer(&shop, "Thank you!", T0).unwrap();
        assert_eq!(
            review.answer(&shop, "Again", T0),
            Err(ReviewError::AlreadyAnswered)
        );
        let admin = identity("ada", Role::Admin, None);
        assert_eq!(review.hide(&shop, "spam", T0), Err(ReviewError::NotAllowed));
        assert!(matches!(
            review.hide(&admin, "", T0),
            Err(ReviewError::Invalid(_))
        ));
        assert_eq!(
            review.hide(&admin, "Personal data in the text", T0),
            Ok(true)
        );
        assert_eq!(review.hide(&admin, "Again", T0), Ok(false));
        assert!(!review.visible());
    }

    proptest! {
        /// However reviews are written, edited and hidden (through `Review`'s own methods), the
        /// rating kept by the changes those report equals the visible reviews, star by star.
        #[test]
        fn the_rating_kept_by_changes_equals_the_visible_reviews(
            steps in proptest::collection::vec((0usize..8, 1i64..=5, 0u8..3), 1..60)
        ) {
            let orders: Vec<Order> = (0..8).map(|_| delivered(T0)).collect();
            let admin = identity("ada", Role::Admin, None);
            let mut reviews: Vec<Option<Review>> = vec![None; 8];
            let mut rating = Rating::default();
            for (slot, stars, action) in steps {
                let change = match (&mut reviews[slot], action) {
                    (None, _) => {
                        let review = Review::write(&orders[slot], &customer("ana"), &draft(stars, ""), T0).unwrap();
                        let change = RatingChange::written(review.stars);
                        reviews[slot] = Some(review);
                        Some(change)
                    }
                    (Some(review), 1) if review.visible() => {
                        let previous = review.edit(&customer("ana"), &draft(stars, ""), T0).unwrap();
                        Some(RatingChange::edited(previous, review.stars))
                    }
                    (Some(review), 2) => review
                        .hide(&admin, "off topic", T0)
                        .unwrap()
                        .then(|| RatingChange::hidden(review.stars)),
                    _ => None,
                };
                if let Some(change) = change {
                    rating.apply(change);
                }
            }
            let mut expected = [0i64; 5];
            for review in reviews.iter().flatten().filter(|r| r.visible()) {
                expected[usize::from(review.stars) - 1] += 1;
            }
            prop_assert_eq!(rating.by_stars, expected);
            prop_assert!(rating.average().is_none_or(|a| (1.0..=5.0).contains(&a)));
        }
    }
}
