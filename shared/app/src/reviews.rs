//! Verified reviews and a shop's rating (issue 42). The decisions are the domain's
//! ([`bouquet_domain::review`]); here each is read, decided and written with its event:
//!
//! - write: the order (`GetItem`), then the review and `ReviewWritten` in one transaction,
//!   on the condition that the order has no review yet;
//! - edit, answer, hide: the review (`GetItem`), then it at the version read with its event;
//! - the rating: a consumer of `ReviewWritten`, `ReviewEdited` and `ReviewHidden` writes each
//!   event's change to the shop's counters once per event (its dedupe record and a
//!   `ShopRatingChanged` in the same transaction, at the rating's next version), so the rating
//!   equals the visible reviews whenever none is in flight; then, when the shop's catalogue
//!   place moved (its average in tenths, or its reviews' power of two), it copies the rating
//!   onto the shop's bouquets on sale (`ratingSort`, for `?sort=rating`), as it does for
//!   each `BouquetListed` and each bouquet an `OrderRejected` puts back on sale.

use serde_json::Value;

use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::Identity;
use bouquet_domain::review::{Rating, RatingChange, Review, ReviewDraft, ReviewError};
use bouquet_domain::{BouquetId, OrderId, Timestamp, VendorId};
use bouquet_store::{Page, Processed, StoreError, Target};

use crate::analytics::ProjectionError;
use crate::problem::{ApiError, Refusal};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum ReviewsError {
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error(transparent)]
    Refused(#[from] ReviewError),
    /// The review changed while this request ran: read it again.
    #[error("the review changed meanwhile")]
    Changed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The dedupe scope of the rating projector.
pub const CONSUMER: &str = "shop-ratings";

fn event(review: &Review, now: Timestamp, correlation_id: &str, data: EventData) -> DomainEvent {
    // The review's own id: a public frame of it names no order.
    DomainEvent::new(review.review_id, review.version, now, correlation_id, data)
}

/// `caller` reviews its delivered order `order_id`.
pub async fn write(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    draft: &ReviewDraft,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Review, ReviewsError> {
    let order = crate::orders::readable(app, caller, order_id)
        .await?
        .ok_or(ReviewsError::NotFound("order"))?;
    let review = Review::write(&order, caller, draft, now)?;
    let written = event(
        &review,
        now,
        correlation_id,
        EventData::ReviewWritten {
            order_id,
            vendor_id: review.vendor_id,
            stars: review.stars,
        },
    );
    match app.store.write_review(&review, &written).await {
        Ok(()) => Ok(review),
        Err(StoreError::ConditionFailed(conflicts))
            if conflicts.iter().any(|c| matches!(c.target, Target::Review)) =>
        {
            Err(ReviewError::AlreadyReviewed.into())
        }
        Err(other) => Err(other.into()),
    }
}

/// Reads `order_id`'s review, changes it with `change` (which returns its event, or `None`
/// when nothing changed) and saves it at the version read.
async fn change(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    change: impl FnOnce(&mut Review) -> Result<Option<EventData>, ReviewError>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Review, ReviewsError> {
    // A caller who may not read the order learns nothing of it: 404, as for no review.
    let mut review = app
        .store
        .review(order_id)
        .await?
        .filter(|review| review.readable_by(caller))
        .ok_or(ReviewsError::NotFound("review"))?;
    let read_version = review.version;
    let Some(data) = change(&mut review)? else {
        return Ok(review);
    };
    let changed = event(&review, now, correlation_id, data);
    match app.store.save_review(&review, read_version, &changed).await {
        Ok(()) => Ok(review),
        Err(StoreError::ConditionFailed(_)) => Err(ReviewsError::Changed),
        Err(other) => Err(other.into()),
    }
}

/// Its author edits the review within the edit window.
pub async fn edit(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    draft: &ReviewDraft,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Review, ReviewsError> {
    let edit = |review: &mut Review| {
        let previous_stars = review.edit(caller, draft, now)?;
        Ok(Some(EventData::ReviewEdited {
            order_id,
            vendor_id: review.vendor_id,
            previous_stars,
            stars: review.stars,
            visible: review.visible(),
        }))
    };
    change(app, caller, order_id, edit, correlation_id, now).await
}

/// The review's shop answers it, once.
pub async fn answer(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    text: &str,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Review, ReviewsError> {
    let answer = |review: &mut Review| {
        review.answer(caller, text, now)?;
        Ok(Some(EventData::ReviewAnswered {
            order_id,
            vendor_id: review.vendor_id,
            customer_id: review.customer_id.clone(),
        }))
    };
    change(app, caller, order_id, answer, correlation_id, now).await
}

/// Its author's erasure reaches the review of `order_id`, if written: its text goes, its stars
/// stay (`ReviewEdited` with the same stars: the rating does not move, the shop's page
/// redraws); `Ok(false)` when there was nothing to erase.
pub async fn erase_text(
    app: &App,
    order_id: OrderId,
    correlation_id: &str,
    now: Timestamp,
) -> Result<bool, ReviewsError> {
    let mut retry = bouquet_store::retry::Retry::optimistic();
    loop {
        let Some(mut review) = app.store.review(order_id).await? else {
            return Ok(false);
        };
        let read_version = review.version;
        if !review.erase_text() {
            return Ok(false);
        }
        let edited = event(
            &review,
            now,
            correlation_id,
            EventData::ReviewEdited {
                order_id,
                vendor_id: review.vendor_id,
                previous_stars: review.stars,
                stars: review.stars,
                visible: review.visible(),
            },
        );
        match app.store.save_review(&review, read_version, &edited).await {
            Ok(()) => return Ok(true),
            Err(StoreError::ConditionFailed(_)) if retry.wait().await => continue,
            Err(StoreError::ConditionFailed(_)) => return Err(ReviewsError::Changed),
            Err(other) => return Err(other.into()),
        }
    }
}

/// An administrator hides the review with `reason` (hiding it again changes nothing).
pub async fn hide(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    reason: &str,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Review, ReviewsError> {
    let hide = |review: &mut Review| {
        Ok(review
            .hide(caller, reason, now)?
            .then(|| EventData::ReviewHidden {
                order_id,
                vendor_id: review.vendor_id,
                customer_id: review.customer_id.clone(),
                stars: review.stars,
                reason: review
                    .hidden
                    .as_ref()
                    .map(|h| h.reason.clone())
                    .unwrap_or_default(),
            }))
    };
    change(app, caller, order_id, hide, correlation_id, now).await
}

/// The review of `order_id`, if written: for a reader of the order the caller already
/// checked (the order's page shows it).
pub async fn of_order(app: &App, order_id: OrderId) -> Result<Option<Review>, ReviewsError> {
    Ok(app.store.review(order_id).await?)
}

/// A shop's page: its name, its rating and a page of its visible reviews, newest first (one
/// `BatchGetItem` and one `Query`, side by side). An unknown shop is `NotFound`. Each review
/// names its order only to a `caller` who may read it (the shop's members answer by it).
pub async fn shop_reviews(
    app: &App,
    caller: Option<&Identity>,
    vendor_id: VendorId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<ShopReviews, ReviewsError> {
    let shop = [vendor_id];
    let (mut shops, page) = tokio::try_join!(
        app.store.shop_names_and_ratings(&shop),
        app.store.shop_reviews(vendor_id, cursor, limit)
    )?;
    let (name, rating) = shops.remove(&vendor_id).unwrap_or_default();
    let items = page
        .items
        .into_iter()
        .map(|review| ShopPageReview {
            order_id: caller
                .filter(|caller| review.readable_by(caller))
                .map(|_| review.order_id),
            review,
        })
        .collect();
    Ok(ShopReviews {
        name: name.ok_or(ReviewsError::NotFound("shop"))?,
        rating,
        page: Page {
            items,
            next_cursor: page.next_cursor,
        },
    })
}

/// What [`shop_reviews`] reads.
#[derive(Debug)]
pub struct ShopReviews {
    pub name: String,
    pub rating: Rating,
    pub page: Page<ShopPageReview>,
}

/// A review on its shop's page: its public view, and its order's id for a reader of the order.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShopPageReview {
    #[serde(flatten)]
    pub review: Review,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<OrderId>,
}

/// What a review event does to its shop's rating; `None` for the others.
pub fn rating_change(name: &str, data: &Value) -> Result<Option<RatingChange>, ProjectionError> {
    let stars = |field: &str| -> Result<u8, ProjectionError> {
        data[field]
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .filter(|n| (1..=5).contains(n))
            .ok_or_else(|| ProjectionError::Unreadable(format!("{name} without {field} 1..5")))
    };
    Ok(match name {
        "ReviewWritten" => Some(RatingChange::written(stars("stars")?)),
        // An edit of a hidden review moves nothing the rating counts.
        "ReviewEdited" if data["visible"].as_bool() == Some(true) => Some(RatingChange::edited(
            stars("previousStars")?,
            stars("stars")?,
        )),
        "ReviewHidden" => Some(RatingChange::hidden(stars("stars")?)),
        _ => None,
    })
}

/// How many times the projector reads a shop's rating again when another of its events
/// moved it first (each read and write is one round trip; twenty reviews at once settle in a
/// few).
const RATING_ATTEMPTS: u32 = 40;

/// Applies one EventBridge event to its shop's rating (at the next version, with a
/// `ShopRatingChanged`), then, when the shop's catalogue place changed, moves its bouquets in
/// the catalogue's rating order; `Ok(false)` when it was a duplicate or not one of ours.
pub async fn project_rating(app: &App, event: &Value) -> Result<bool, ProjectionError> {
    let name = event["detail-type"]
        .as_str()
        .ok_or_else(|| ProjectionError::Unreadable("event without detail-type".into()))?;
    let detail = &event["detail"];
    let Some(change) = rating_change(name, &detail["data"])? else {
        return Ok(false);
    };
    let event_id = detail["eventId"]
        .as_str()
        .ok_or_else(|| ProjectionError::Unreadable("event without detail.eventId".into()))?;
    let vendor_id = vendor_of(detail)?;
    let correlation_id = detail["correlationId"].as_str().unwrap_or(event_id);
    let now = app.clock.now();
    let mut contention = bouquet_store::retry::Retry::attempts(RATING_ATTEMPTS);
    let (applied, moved) = loop {
        let (mut rating, version) = app.store.rating_at(vendor_id).await?;
        let place = rating.catalogue_place();
        rating.apply(change);
        let changed = DomainEvent::new(
            vendor_id,
            version + 1,
            now,
            correlation_id,
            EventData::ShopRatingChanged { vendor_id, rating },
        );
        match app
            .store
            .save_rating_once(
                CONSUMER, event_id, vendor_id, rating, version, &changed, now,
            )
            .await
        {
            Ok(processed) => {
                break (
                    processed == Processed::Applied,
                    rating.catalogue_place() != place,
                )
            }
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts
                    .iter()
                    .all(|c| c.target == Target::Vendor(vendor_id)) =>
            {
                if !contention.wait().await {
                    return Err(StoreError::Contention(vec![Target::Vendor(vendor_id)]).into());
                }
            }
            Err(other) => return Err(other.into()),
        }
    };
    // Only a change of the shop's catalogue place is spread (each spread rewrites every
    // bouquet of the shop); a later change spreads whatever stands then, never backwards. A
    // redelivery spreads too: a projector stopped between its write and this step is
    // completed by the retry.
    if moved || !applied {
        spread_rating(app, vendor_id, None).await?;
    }
    Ok(applied)
}

/// A newly listed bouquet takes its shop's rating in the catalogue's rating order
/// (`BouquetListed`); `Ok(false)` when it already had it or a newer one.
pub async fn rate_listed_bouquet(app: &App, event: &Value) -> Result<bool, ProjectionError> {
    let detail = &event["detail"];
    let bouquet_id = BouquetId::parse(detail["data"]["bouquetId"].as_str().unwrap_or_default())
        .map_err(|e| ProjectionError::Unreadable(format!("bouquetId: {e}")))?;
    let vendor_id = vendor_of(detail)?;
    Ok(spread_rating(app, vendor_id, Some(bouquet_id)).await? > 0)
}

/// Bouquets of a rejected order put back on sale take their shop's rating in the catalogue's
/// rating order (`OrderRejected`; spreads pass over sold bouquets); `Ok(false)` when none
/// moved (withdrawn, already there, or a redelivery).
pub async fn rate_returned_bouquets(app: &App, event: &Value) -> Result<bool, ProjectionError> {
    let data = &event["detail"]["data"];
    if event["detail-type"] != "OrderRejected" || data["bouquetsWithdrawn"] == true {
        return Ok(false);
    }
    let vendor_id = vendor_of(&event["detail"])?;
    let mut moved = 0;
    for id in data["bouquetIds"].as_array().into_iter().flatten() {
        let bouquet_id = BouquetId::parse(id.as_str().unwrap_or_default())
            .map_err(|e| ProjectionError::Unreadable(format!("bouquetIds: {e}")))?;
        moved += spread_rating(app, vendor_id, Some(bouquet_id)).await?;
    }
    Ok(moved > 0)
}

/// Copies the shop's rating as it now stands onto its bouquets on sale (or `only` one).
async fn spread_rating(
    app: &App,
    vendor_id: VendorId,
    only: Option<BouquetId>,
) -> Result<usize, StoreError> {
    let (rating, version) = app.store.rating_at(vendor_id).await?;
    if version == 0 {
        // No review yet: every bouquet was written unrated.
        return Ok(0);
    }
    app.store
        .spread_rating(vendor_id, rating, version, only)
        .await
}

fn vendor_of(detail: &Value) -> Result<VendorId, ProjectionError> {
    VendorId::parse(detail["data"]["vendorId"].as_str().unwrap_or_default())
        .map_err(|e| ProjectionError::Unreadable(format!("vendorId: {e}")))
}

/// A review refused by its rules (issue 42): the code names which.
fn refused(code: &'static str, said: String) -> ApiError {
    ApiError::Conflict(Refusal::new(code, "Review refused", said))
}

impl From<ReviewsError> for ApiError {
    fn from(error: ReviewsError) -> Self {
        let said = error.to_string();
        match error {
            ReviewsError::NotFound(what) => ApiError::NotFound(what),
            ReviewsError::Refused(ReviewError::Invalid(errors)) => ApiError::Invalid(errors),
            ReviewsError::Refused(ReviewError::NotAllowed) => ApiError::Forbidden(Refusal::new(
                "review.not_allowed",
                "Review not allowed",
                said,
            )),
            ReviewsError::Refused(ReviewError::NotDelivered(_)) => {
                refused("review.not_delivered", said)
            }
            ReviewsError::Refused(ReviewError::WindowClosed) => {
                refused("review.window_closed", said)
            }
            ReviewsError::Refused(ReviewError::AlreadyReviewed) => refused("review.exists", said),
            ReviewsError::Refused(ReviewError::EditWindowClosed) => {
                refused("review.edit_window_closed", said)
            }
            ReviewsError::Refused(ReviewError::AlreadyAnswered) => {
                refused("review.already_answered", said)
            }
            ReviewsError::Changed => {
                ApiError::PreconditionFailed("the review changed meanwhile; read it again")
            }
            ReviewsError::Store(error) => error.into(),
        }
    }
}
