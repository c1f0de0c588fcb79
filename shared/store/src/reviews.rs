//! Verified reviews (issue 42): one item per reviewed order (`ORDER#{id}` / `REVIEW`, beside
//! the order), written once on the condition that none exists, changed at the version read,
//! each with its event. Visible reviews sit in `VendorIndex` under `REVIEWS#{shop}`, newest
//! first; a hidden one leaves it. A shop's rating (`VENDOR#{id}` / `RATING`) counts its
//! visible reviews by stars, kept by the rating projector once per event at a version, and
//! copied (`ratingSort`) onto the shop's bouquets for the catalogue's `?sort=rating`.

use serde::{Deserialize, Serialize};

use aws_sdk_dynamodb::types::AttributeValue;
use bouquet_domain::events::DomainEvent;
use futures::StreamExt;

use bouquet_domain::review::{Answer, Hidden, Rating, Review};
use bouquet_domain::{BouquetId, CustomerId, OrderId, ReviewId, Timestamp, VendorId};

use crate::cursor::Page;
use crate::error::{StoreError, Target};
use crate::items::{to_item, Item};
use crate::keys;
use crate::processed::Processed;
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

const REVIEW_SK: &str = "REVIEW";
pub(crate) const RATING_SK: &str = "RATING";

fn review_key(order_id: &str) -> Item {
    keys::key(keys::order_pk(order_id), REVIEW_SK)
}

fn shop_reviews_key(vendor_id: &str) -> String {
    format!("REVIEWS#{vendor_id}")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewItem {
    pk: String,
    sk: String,
    entity: String,
    review_id: String,
    order_id: String,
    vendor_id: String,
    customer_id: String,
    stars: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    written_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edited_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answered_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hidden_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hidden_at: Option<i64>,
    version: u64,
    /// `VendorIndex` while visible: the shop's reviews, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vendor_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vendor_sort: Option<String>,
}

crate::items::stored!(ReviewItem => Review);

impl ReviewItem {
    fn from_domain(r: &Review) -> Self {
        let order_id = r.order_id.to_string();
        let visible = r.visible();
        Self {
            pk: keys::order_pk(&order_id),
            sk: REVIEW_SK.into(),
            entity: "review".into(),
            review_id: r.review_id.to_string(),
            vendor_id: r.vendor_id.to_string(),
            customer_id: r.customer_id.to_string(),
            stars: r.stars,
            text: r.text.clone(),
            written_at: r.written_at.as_millis(),
            edited_at: r.edited_at.map(Timestamp::as_millis),
            answer: r.answer.as_ref().map(|a| a.text.clone()),
            answered_at: r.answer.as_ref().map(|a| a.answered_at.as_millis()),
            hidden_reason: r.hidden.as_ref().map(|h| h.reason.clone()),
            hidden_at: r.hidden.as_ref().map(|h| h.hidden_at.as_millis()),
            version: r.version,
            vendor_key: visible.then(|| shop_reviews_key(&r.vendor_id.to_string())),
            // The review's id, not the order's: the sort value is the shop page's cursor.
            vendor_sort: visible
                .then(|| format!("{:013}#{}", r.written_at.as_millis(), r.review_id)),
            order_id,
        }
    }

    fn into_domain(self) -> Result<Review, StoreError> {
        Ok(Review {
            review_id: ReviewId::parse(&self.review_id).map_err(StoreError::corrupt)?,
            order_id: OrderId::parse(&self.order_id).map_err(StoreError::corrupt)?,
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            customer_id: CustomerId::parse(&self.customer_id).map_err(StoreError::corrupt)?,
            stars: self.stars,
            text: self.text,
            written_at: Timestamp::from_millis(self.written_at),
            edited_at: self.edited_at.map(Timestamp::from_millis),
            answer: self.answer.zip(self.answered_at).map(|(text, at)| Answer {
                text,
                answered_at: Timestamp::from_millis(at),
            }),
            hidden: self
                .hidden_reason
                .zip(self.hidden_at)
                .map(|(reason, at)| Hidden {
                    reason,
                    hidden_at: Timestamp::from_millis(at),
                }),
            version: self.version,
        })
    }
}

impl Store {
    /// The review of `order_id`, if written.
    pub async fn review(&self, order_id: OrderId) -> Result<Option<Review>, StoreError> {
        self.get_stored::<ReviewItem>(review_key(&order_id.to_string()), true)
            .await
    }

    /// Writes a new review with its event, on the condition that its order has none:
    /// a second one fails on [`Target::Review`].
    pub async fn write_review(
        &self,
        review: &Review,
        event: &DomainEvent,
    ) -> Result<(), StoreError> {
        self.put_review(review, Expr::new("attribute_not_exists(pk)"), event)
            .await
    }

    /// Replaces a review read at `read_version` with `changed`, and its event.
    pub async fn save_review(
        &self,
        changed: &Review,
        read_version: u64,
        event: &DomainEvent,
    ) -> Result<(), StoreError> {
        let condition = Expr::at_version(read_version);
        self.put_review(changed, condition, event).await
    }

    async fn put_review(
        &self,
        review: &Review,
        condition: Expr,
        event: &DomainEvent,
    ) -> Result<(), StoreError> {
        self.put_with_event(
            Target::Review,
            to_item(&ReviewItem::from_domain(review))?,
            condition,
            Some(event),
        )
        .await
    }

    /// A page of a shop's visible reviews, newest first (`VendorIndex`: no Scan).
    pub async fn shop_reviews(
        &self,
        vendor_id: VendorId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Review>, StoreError> {
        // The sort value: the time written (13 digits) and the review's id.
        let after: Option<String> = cursor.map(crate::cursor::decode).transpose()?;
        if let Some(after) = &after {
            let (at, review) = after.split_once('#').ok_or(StoreError::InvalidCursor)?;
            if at.len() != 13
                || !at.bytes().all(|b| b.is_ascii_digit())
                || ReviewId::parse(review).is_err()
            {
                return Err(StoreError::InvalidCursor);
            }
        }
        let page = self
            .query_index(
                IndexQuery {
                    index: keys::INDEX_VENDOR,
                    partition_attr: "vendorKey",
                    partition: shop_reviews_key(&vendor_id.to_string()),
                    sort_attr: "vendorSort",
                    filter: None,
                    newest_first: true,
                    after: after.as_deref(),
                    sort_between: None,
                    after_by_condition: true,
                    limit,
                },
                // Resumed by the key condition: no start key is made.
                |_| Item::new(),
            )
            .await?;
        page.into_page::<ReviewItem>()
    }

    /// A shop's rating as its projector kept it.
    pub async fn rating(&self, vendor_id: VendorId) -> Result<Rating, StoreError> {
        Ok(self.rating_at(vendor_id).await?.0)
    }

    /// A shop's rating and its version (0 before its first review), read consistently: the
    /// projector writes the next version on the condition that it is still this one.
    pub async fn rating_at(&self, vendor_id: VendorId) -> Result<(Rating, u64), StoreError> {
        let item = self
            .get_item(rating_key(vendor_id), true)
            .await?
            .unwrap_or_default();
        Ok(rating_of(&item))
    }

    /// Writes `rating` at `read_version + 1` with its event, once per (`consumer`,
    /// `event_id`): `Processed::Duplicate` when the event was applied already, and a
    /// [`StoreError::ConditionFailed`] on [`Target::Vendor`] when another event moved the
    /// rating since it was read (read it again).
    #[allow(clippy::too_many_arguments)]
    pub async fn save_rating_once(
        &self,
        consumer: &str,
        event_id: &str,
        vendor_id: VendorId,
        rating: Rating,
        read_version: u64,
        event: &DomainEvent,
        now: Timestamp,
    ) -> Result<Processed, StoreError> {
        let item = rating_item(vendor_id, &rating, read_version + 1);
        let condition = if read_version == 0 {
            Expr::new("attribute_not_exists(version)")
        } else {
            Expr::at_version(read_version)
        };
        let mut tx = Tx::new();
        tx.put(
            Target::Vendor(vendor_id),
            &self.table,
            item,
            Some(condition),
        )?;
        tx.event(&self.table, event)?;
        self.commit_once(consumer, event_id, tx, now).await
    }

    /// Writes the shop's rating at `version` into the catalogue place (`ratingSort`) of its
    /// bouquets on sale (a sold or withdrawn one is in no catalogue order; one put back on
    /// sale takes the rating then), or of `only` that one, never over a newer one: returns
    /// how many moved.
    pub async fn spread_rating(
        &self,
        vendor_id: VendorId,
        rating: Rating,
        version: u64,
        only: Option<BouquetId>,
    ) -> Result<usize, StoreError> {
        let ids: Vec<BouquetId> = match only {
            Some(id) => vec![id],
            None => {
                let mut ids = Vec::new();
                let mut cursor = None;
                loop {
                    let page = self
                        .vendor_bouquets(vendor_id, cursor.as_deref(), 100)
                        .await?;
                    ids.extend(
                        page.items
                            .iter()
                            .filter(|b| b.status.is_on_sale())
                            .map(|b| b.bouquet_id),
                    );
                    match page.next_cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                ids
            }
        };
        let moved = futures::stream::iter(ids)
            .map(|id| async move {
                let text = id.to_string();
                let written = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(keys::key(keys::bouquet_pk(&text), keys::BOUQUET_SK)))
                    .update_expression("SET ratingSort = :sort, ratingVersion = :version")
                    .condition_expression(
                        "attribute_exists(pk) AND vendorId = :vendor AND \
                         (attribute_not_exists(ratingVersion) OR ratingVersion < :version)",
                    )
                    .expression_attribute_values(
                        ":sort",
                        AttributeValue::S(keys::rating_sort(&rating, &text)),
                    )
                    .expression_attribute_values(":version", AttributeValue::N(version.to_string()))
                    .expression_attribute_values(
                        ":vendor",
                        AttributeValue::S(vendor_id.to_string()),
                    )
                    .send()
                    .await;
                match written {
                    Ok(_) => Ok(true),
                    // Gone, another shop's, or already at this rating or a newer one.
                    Err(error)
                        if error
                            .as_service_error()
                            .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                    {
                        Ok(false)
                    }
                    Err(error) => Err(StoreError::backend(error)),
                }
            })
            .buffer_unordered(8)
            .collect::<Vec<Result<bool, StoreError>>>()
            .await;
        let mut count = 0;
        for outcome in moved {
            count += usize::from(outcome?);
        }
        Ok(count)
    }
}

/// The shop's rating item at `version`.
pub(crate) fn rating_item(vendor_id: VendorId, rating: &Rating, version: u64) -> Item {
    let mut item = rating_key(vendor_id);
    item.insert("entity".into(), AttributeValue::S("shop_rating".into()));
    item.insert("version".into(), AttributeValue::N(version.to_string()));
    for (stars, count) in rating.by_stars.iter().enumerate() {
        item.insert(
            format!("stars{}", stars + 1),
            AttributeValue::N(count.to_string()),
        );
    }
    item
}

/// A review's item.
pub(crate) fn review_item(review: &Review) -> Result<Item, StoreError> {
    to_item(&ReviewItem::from_domain(review))
}

fn rating_key(vendor_id: VendorId) -> Item {
    keys::key(keys::vendor_pk(&vendor_id.to_string()), RATING_SK)
}

/// The rating and its version in a rating item (an empty item: none yet).
pub(crate) fn rating_of(item: &Item) -> (Rating, u64) {
    let number = |name: &str| -> i64 {
        item.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let mut rating = Rating::default();
    for (stars, count) in rating.by_stars.iter_mut().enumerate() {
        *count = number(&format!("stars{}", stars + 1));
    }
    (rating, number("version").max(0) as u64)
}
