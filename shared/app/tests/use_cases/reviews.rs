//! Verified reviews and a shop's rating: who may review, once, within the window; the edit
//! window; one answer; hiding with a reason; and the rating, kept by its projector, equal to
//! the visible reviews under concurrent reviews and redelivered events.

use std::time::Duration;

use bouquet_app::domain::review::{ReviewDraft, ReviewError, EDIT_WINDOW, REVIEW_WINDOW};
use bouquet_app::domain::{Order, OrderStatus};
use bouquet_app::reviews::{self, ReviewsError};

use crate::support::*;

fn draft(stars: i64, text: &str) -> ReviewDraft {
    ReviewDraft {
        stars: Some(stars),
        text: Some(text.into()),
    }
}

/// `customer_name`'s order of one bouquet of `vendor`, paid and delivered.
async fn delivered(
    world: &World,
    vendor: &bouquet_app::domain::Vendor,
    customer_name: &str,
) -> Order {
    let bouquet = world.listed(vendor, "30.00", None).await;
    let order = world.reserved(&customer(customer_name), &[&bouquet]).await;
    world.pay_by_card(customer_name, order.order_id).await;
    let paid = world.order_now(order.order_id).await;
    bouquet_app::checkout::fulfil(&world.app.store, &paid, CORRELATION, &|_| None, world.now())
        .await
        .expect("delivered")
}

async fn write(
    world: &World,
    who: &str,
    order: &Order,
    stars: i64,
) -> Result<bouquet_app::domain::review::Review, ReviewsError> {
    reviews::write(
        &world.app,
        &customer_caller(who),
        order.order_id,
        &draft(stars, "Fresh and on time"),
        CORRELATION,
        world.now(),
    )
    .await
}

/// Every review event of the outbox, as EventBridge delivers it, in each review's order.
async fn review_events(world: &World) -> Vec<serde_json::Value> {
    let mut events: Vec<serde_json::Value> = world
        .events()
        .await
        .into_iter()
        .filter(|(name, _)| name.starts_with("Review"))
        .map(|(name, detail)| {
            let detail: serde_json::Value = serde_json::from_str(&detail).expect("a detail");
            serde_json::json!({ "source": "bouquet.marketplace", "detail-type": name, "detail": detail })
        })
        .collect();
    events.sort_by_key(|e| {
        (
            e["detail"]["aggregateId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            e["detail"]["aggregateVersion"].as_u64(),
        )
    });
    events
}

#[tokio::test]
async fn only_the_customer_of_a_delivered_order_reviews_it_once_within_the_window() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let order = delivered(&world, &vendor, "ana").await;
    assert_eq!(order.status, OrderStatus::Fulfilled);
    // A stranger is not told the order exists (404); its shop, which may read it, may not
    // review it (403).
    assert!(matches!(
        write(&world, "bob", &order, 5).await,
        Err(ReviewsError::NotFound("order"))
    ));
    assert!(matches!(
        reviews::write(
            &world.app,
            &vendor_caller(&vendor),
            order.order_id,
            &draft(5, "Self-praise"),
            CORRELATION,
            world.now(),
        )
        .await,
        Err(ReviewsError::Refused(ReviewError::NotAllowed))
    ));
    let bouquet = world.listed(&vendor, "12.00", None).await;
    let undelivered = world.reserved(&customer("ana"), &[&bouquet]).await;
    assert!(matches!(
        write(&world, "ana", &undelivered, 5).await,
        Err(ReviewsError::Refused(ReviewError::NotDelivered(
            OrderStatus::Reserved
        )))
    ));
    let review = write(&world, "ana", &order, 5).await.expect("reviewed");
    assert_eq!(
        (review.stars, review.text.as_deref()),
        (5, Some("Fresh and on time"))
    );
    // Its events and its public view are the review's own: no order id.
    let written = review_events(&world).await;
    assert_eq!(
        written[0]["detail"]["aggregateId"],
        review.review_id.to_string()
    );
    let view = serde_json::to_value(&review).unwrap();
    assert!(view.get("orderId").is_none(), "{view}");
    assert_eq!(view["reviewId"], review.review_id.to_string());
    assert!(matches!(
        write(&world, "ana", &order, 4).await,
        Err(ReviewsError::Refused(ReviewError::AlreadyReviewed))
    ));

    let late = delivered(&world, &vendor, "cleo").await;
    world.advance(REVIEW_WINDOW + Duration::from_secs(1));
    assert!(matches!(
        write(&world, "cleo", &late, 4).await,
        Err(ReviewsError::Refused(ReviewError::WindowClosed))
    ));
}

#[tokio::test]
async fn a_review_is_edited_for_48_hours_answered_once_and_hidden_with_a_reason() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let order = delivered(&world, &vendor, "ana").await;
    write(&world, "ana", &order, 2).await.unwrap();
    let edited = reviews::edit(
        &world.app,
        &customer_caller("ana"),
        order.order_id,
        &draft(4, "Late but lovely"),
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    assert_eq!((edited.stars, edited.version), (4, 2));
    world.advance(EDIT_WINDOW + Duration::from_secs(1));
    assert!(matches!(
        reviews::edit(
            &world.app,
            &customer_caller("ana"),
            order.order_id,
            &draft(5, ""),
            CORRELATION,
            world.now()
        )
        .await,
        Err(ReviewsError::Refused(ReviewError::EditWindowClosed))
    ));
    // Another shop, or another customer, may not know the review exists: 404, as for none.
    let other_shop = world.vendor().await;
    for stranger in [vendor_caller(&other_shop), customer_caller("bob")] {
        assert!(matches!(
            reviews::answer(
                &world.app,
                &stranger,
                order.order_id,
                "Not ours",
                CORRELATION,
                world.now()
            )
            .await,
            Err(ReviewsError::NotFound("review"))
        ));
    }
    let shop = vendor_caller(&vendor);
    reviews::answer(
        &world.app,
        &shop,
        order.order_id,
        "Sorry for the wait!",
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    assert!(matches!(
        reviews::answer(
            &world.app,
            &shop,
            order.order_id,
            "Again",
            CORRELATION,
            world.now()
        )
        .await,
        Err(ReviewsError::Refused(ReviewError::AlreadyAnswered))
    ));
    let hidden = reviews::hide(
        &world.app,
        &admin_caller(),
        order.order_id,
        "Names the courier",
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    assert_eq!(
        hidden.hidden.as_ref().map(|h| h.reason.as_str()),
        Some("Names the courier")
    );
    let page = reviews::shop_reviews(&world.app, None, vendor.vendor_id, None, 20)
        .await
        .unwrap()
        .page;
    assert!(
        page.items.is_empty(),
        "a hidden review leaves the shop's page"
    );
    let names: Vec<String> = review_events(&world)
        .await
        .iter()
        .map(|e| e["detail-type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "ReviewWritten",
            "ReviewEdited",
            "ReviewAnswered",
            "ReviewHidden"
        ]
    );
}

#[tokio::test]
async fn twenty_reviews_at_once_and_every_event_twice_give_the_exact_rating() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    // On sale while the reviews arrive: the projector moves it in the rating order.
    let early = world.listed(&vendor, "20.00", None).await;
    let mut orders = Vec::new();
    for n in 0..20 {
        let who = format!("buyer-{n}");
        orders.push((who.clone(), delivered(&world, &vendor, &who).await));
    }
    let writes = orders
        .iter()
        .enumerate()
        .map(|(n, (who, order))| write(&world, who, order, (n % 5) as i64 + 1));
    for written in futures::future::join_all(writes).await {
        written.expect("reviewed");
    }
    // One review moves from 1 to 5 stars, another is hidden.
    reviews::edit(
        &world.app,
        &customer_caller("buyer-0"),
        orders[0].1.order_id,
        &draft(5, ""),
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    reviews::hide(
        &world.app,
        &admin_caller(),
        orders[1].1.order_id,
        "Spam",
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    let events = review_events(&world).await;
    assert_eq!(events.len(), 22);
    let projections = events
        .iter()
        .chain(events.iter())
        .map(|event| reviews::project_rating(&world.app, event));
    let applied = futures::future::join_all(projections)
        .await
        .into_iter()
        .map(|r| r.expect("projected"))
        .filter(|applied| *applied)
        .count();
    assert_eq!(applied, 22, "each event once, its redelivery not");
    let reviews::ShopReviews { name, rating, page } =
        reviews::shop_reviews(&world.app, None, vendor.vendor_id, None, 100)
            .await
            .unwrap();
    // Anonymous: no review names its order; the shop's member sees each one's.
    assert!(page.items.iter().all(|r| r.order_id.is_none()));
    let as_shop = reviews::shop_reviews(
        &world.app,
        Some(&vendor_caller(&vendor)),
        vendor.vendor_id,
        None,
        100,
    )
    .await
    .unwrap()
    .page;
    assert!(as_shop
        .items
        .iter()
        .all(|r| r.order_id == Some(r.review.order_id)));
    assert_eq!(name, vendor.name);
    // 4 reviews of each star; 1★ → 5★ once, one 2★ hidden.
    assert_eq!(rating.by_stars, [3, 3, 4, 4, 5]);
    assert_eq!(rating.count(), 19);
    let mut visible = [0i64; 5];
    for review in &page.items {
        visible[usize::from(review.review.stars) - 1] += 1;
    }
    assert_eq!(
        visible, rating.by_stars,
        "the rating equals the visible reviews"
    );
    assert!(
        page.items
            .windows(2)
            .all(|w| w[0].review.written_at >= w[1].review.written_at),
        "newest first"
    );

    // Each applied event wrote the rating at its next version with a ShopRatingChanged.
    let changes: Vec<serde_json::Value> = world
        .events()
        .await
        .into_iter()
        .filter(|(name, _)| name == "ShopRatingChanged")
        .map(|(_, detail)| serde_json::from_str(&detail).expect("a detail"))
        .collect();
    let mut versions: Vec<u64> = changes
        .iter()
        .map(|c| c["aggregateVersion"].as_u64().unwrap())
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, (1..=22).collect::<Vec<u64>>());
    let last = changes
        .iter()
        .max_by_key(|c| c["aggregateVersion"].as_u64())
        .unwrap();
    assert_eq!(
        last["data"]["rating"],
        serde_json::json!({"average": 3.3, "count": 19, "byStars": [3, 3, 4, 4, 5]})
    );

    // The catalogue by rating: the rated shop's bouquets first, a bouquet listed after the
    // reviews once its BouquetListed is projected, shops without a review last.
    let late = world.listed(&vendor, "25.00", None).await;
    let other_shop = world.vendor().await;
    let unrated = world.listed(&other_shop, "10.00", None).await;
    let by_rating = || async {
        let page = world
            .catalogue_page(bouquet_app::bouquets::CatalogueScope::All(
                bouquet_app::store::CatalogueSort::Rating,
            ))
            .await;
        bouquet_app::bouquets::with_shops(&world.app, &page.items, world.now())
            .await
            .unwrap()
    };
    let ids = |views: &[bouquet_app::domain::bouquet::BouquetView]| -> Vec<_> {
        views.iter().map(|v| v.bouquet_id).collect()
    };
    assert_eq!(
        ids(&by_rating().await),
        [early.bouquet_id, unrated.bouquet_id, late.bouquet_id]
    );
    let listed = serde_json::json!({
        "source": "bouquet.marketplace",
        "detail-type": "BouquetListed",
        "detail": {"data": {"bouquetId": late.bouquet_id, "vendorId": vendor.vendor_id}},
    });
    assert!(reviews::rate_listed_bouquet(&world.app, &listed)
        .await
        .unwrap());
    assert!(
        !reviews::rate_listed_bouquet(&world.app, &listed)
            .await
            .unwrap(),
        "a redelivery moves nothing"
    );
    let cards = by_rating().await;
    assert_eq!(
        ids(&cards),
        [late.bouquet_id, early.bouquet_id, unrated.bouquet_id]
    );
    assert_eq!(
        cards[0].shop_rating,
        Some(rating),
        "each card shows its shop's rating"
    );
    assert_eq!(cards[2].shop_rating.map(|r| r.count()), Some(0));
}

/// Issue 51: erasure reaches its author's reviews: the text goes, the stars stay in the
/// rating (a review never names its author), announced as an edit of the same stars.
#[tokio::test]
async fn an_erased_customers_reviews_lose_their_text_and_keep_their_stars() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let order = delivered(&world, &vendor, "ana").await;
    write(&world, "ana", &order, 4).await.expect("reviewed");
    let ana = customer_caller("ana");
    let erase = || bouquet_app::erasure::erase(&world.app, &ana, CORRELATION, world.now());
    let erasure = erase().await.expect("erased");
    assert_eq!((erasure.redacted, erasure.reviews), (1, 1));
    let review = reviews::of_order(&world.app, order.order_id)
        .await
        .unwrap()
        .expect("the review stays");
    assert_eq!((review.stars, review.text.as_deref()), (4, None));
    let again = erase().await.unwrap();
    assert_eq!(again.reviews, 0, "once");
    let edits: Vec<serde_json::Value> = review_events(&world)
        .await
        .into_iter()
        .filter(|e| e["detail-type"] == "ReviewEdited")
        .collect();
    assert_eq!(edits.len(), 1);
    let data = &edits[0]["detail"]["data"];
    assert_eq!(
        (data["previousStars"].as_u64(), data["stars"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(
        reviews::rating_change("ReviewEdited", data).unwrap(),
        Some(bouquet_app::domain::review::RatingChange::edited(4, 4)),
        "the rating does not move"
    );
}

/// The bouquet's place in the catalogue's rating order, as stored.
async fn rating_sort_of(world: &World, id: bouquet_app::domain::BouquetId) -> String {
    world.bouquet_item(id).await["ratingSort"]
        .as_s()
        .expect("a rating place")
        .clone()
}

/// A review that leaves the shop's catalogue place as it was (its average in tenths, its
/// reviews' power of two) rewrites none of its bouquets; one that moves it rewrites them all.
#[tokio::test]
async fn only_a_review_that_moves_the_shops_place_rewrites_its_bouquets() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let on_sale = world.listed(&vendor, "20.00", None).await;
    let mut orders = Vec::new();
    for n in 0..4 {
        let who = format!("regular-{n}");
        orders.push((who.clone(), delivered(&world, &vendor, &who).await));
    }
    let raw = || async {
        let item = world.bouquet_item(on_sale.bouquet_id).await;
        let text = |name: &str| match item.get(name) {
            Some(aws_sdk_dynamodb::types::AttributeValue::S(s)) => s.clone(),
            Some(aws_sdk_dynamodb::types::AttributeValue::N(n)) => n.clone(),
            _ => "-".to_owned(),
        };
        (text("ratingSort"), text("ratingVersion"))
    };
    let id = on_sale.bouquet_id;
    // Each five stars: one review (band 1), two (band 2), three (still 2), four (band 3).
    let mut seen = Vec::new();
    for (who, order) in &orders {
        write(&world, who, order, 5).await.expect("reviewed");
        let events = review_events(&world).await;
        let written = events
            .iter()
            .find(|e| e["detail"]["data"]["orderId"] == order.order_id.to_string())
            .expect("its ReviewWritten");
        assert!(reviews::project_rating(&world.app, written).await.unwrap());
        seen.push(raw().await);
    }
    assert_eq!(
        seen,
        [
            (format!("50#01#{id}"), "1".to_owned()),
            (format!("50#02#{id}"), "2".to_owned()),
            (format!("50#02#{id}"), "2".to_owned()),
            (format!("50#03#{id}"), "4".to_owned()),
        ],
        "the third review moved no bouquet"
    );

    // A sold bouquet is in no catalogue order: spreads pass it over. Put back on sale by a
    // rejection, it takes the shop's rating with the `OrderRejected`.
    let sold = world.listed(&vendor, "40.00", None).await;
    let order = world.reserved(&customer("late"), &[&sold]).await;
    world.pay_by_card("late", order.order_id).await;
    // Listed after the reviews and never projected: it stands unrated.
    assert_eq!(
        rating_sort_of(&world, sold.bouquet_id).await,
        format!("-#{}", sold.bouquet_id)
    );
    world.rejected_by_shop(&order, "No van today", false).await;
    let rejected = world
        .events()
        .await
        .into_iter()
        .find(|(name, _)| name == "OrderRejected")
        .map(|(name, detail)| {
            serde_json::json!({"detail-type": name, "detail": serde_json::from_str::<serde_json::Value>(&detail).unwrap()})
        })
        .expect("its OrderRejected");
    assert!(reviews::rate_returned_bouquets(&world.app, &rejected)
        .await
        .unwrap());
    assert_eq!(
        rating_sort_of(&world, sold.bouquet_id).await,
        format!("50#03#{}", sold.bouquet_id),
        "back on sale at the shop's place"
    );
    assert!(
        !reviews::rate_returned_bouquets(&world.app, &rejected)
            .await
            .unwrap(),
        "a redelivery moves nothing"
    );
}
