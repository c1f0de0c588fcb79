use std::time::Duration;

use bouquet_app::checkout::CheckoutError;
use bouquet_app::delivery::{self, DeliveryError};
use bouquet_app::domain::delivery::{DeliverySettings, REDACTED};
use bouquet_app::domain::order::FulfilmentStep;
use bouquet_app::domain::{DomainError, Order, OrderId, OrderStatus};
use bouquet_app::erasure::{self, Erasure};
use bouquet_app::expiry::sweep;
use bouquet_app::orders::Action;
use bouquet_app::payment::PayError;
use bouquet_app::queries::{self, OrderFilter};

use crate::support::*;

fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(20)
}

fn paris_settings() -> DeliverySettings {
    serde_json::from_value(serde_json::json!({
        "countries": ["FR"],
        "postcodePrefixes": ["75"],
        "days": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
        "horizonDays": 7,
        "sameDayCutoff": "11:00",
        "timeZone": "Europe/Paris",
    }))
    .unwrap()
}

async fn set(
    world: &World,
    who: &str,
    order: &Order,
    request: serde_json::Value,
    if_match: Option<u64>,
) -> Result<Order, DeliveryError> {
    delivery::set_order_delivery(
        &world.app,
        &customer_caller(who),
        order.order_id,
        &serde_json::from_value(request).unwrap(),
        if_match,
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .map(done)
}

fn request(world: &World) -> serde_json::Value {
    serde_json::to_value(delivery_request("ana", world.now())).unwrap()
}

#[tokio::test]
async fn an_order_without_delivery_details_is_not_charged() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world
        .reserved_without_delivery(&customer("ana"), &[&bouquet])
        .await;
    let refused = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(
        refused,
        Err(PayError::Checkout(CheckoutError::Domain(
            DomainError::DeliveryRequired
        )))
    );
    assert_eq!(world.gateway.charges_made(), 0, "nothing charged");
    assert_eq!(world.status_of(order.order_id).await, OrderStatus::Reserved);
    world.give_delivery(&customer("ana"), &order).await;
    world
        .pay("ana", order.order_id, "tok_visa")
        .await
        .expect("paid once the details are given");
}

#[tokio::test]
async fn delivery_details_need_the_version_seen_the_owner_and_the_shops_area_until_accepted() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    delivery::change_settings(
        &world.app,
        &vendor_caller(&vendor),
        vendor.vendor_id,
        paris_settings(),
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("settings saved");
    let bouquet = world.bouquet_of(&vendor).await;
    let order = world
        .reserved_without_delivery(&customer("ana"), &[&bouquet])
        .await;
    let good = request(&world);
    assert!(matches!(
        set(&world, "ana", &order, good.clone(), None).await,
        Err(DeliveryError::VersionRequired)
    ));
    assert!(matches!(
        set(&world, "ana", &order, good.clone(), Some(order.version + 1)).await,
        Err(DeliveryError::Changed)
    ));
    assert!(matches!(
        set(&world, "ben", &order, good.clone(), Some(order.version)).await,
        Err(DeliveryError::NotFound("order"))
    ));
    let mut outside = good.clone();
    outside["address"]["postcode"] = "69001".into();
    outside["cardMessage"] = "x".repeat(201).into();
    // Mail goes only to the address Ana's sign-in verified, not to one she types.
    outside["contactEmail"] = "ben@example.com".into();
    match set(&world, "ana", &order, outside, Some(order.version)).await {
        Err(DeliveryError::Invalid(errors)) => {
            let mut fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
            fields.sort();
            assert_eq!(
                fields,
                [
                    "delivery.address.postcode",
                    "delivery.cardMessage",
                    "delivery.contactEmail"
                ],
                "{errors:?}"
            );
        }
        other => panic!("expected field errors, got {other:?}"),
    }
    assert_eq!(
        world.order_now(order.order_id).await.version,
        order.version,
        "no write"
    );

    let given = set(&world, "ana", &order, good.clone(), Some(order.version))
        .await
        .expect("given");
    assert_eq!(given.version, order.version + 1);
    assert_eq!(
        given.delivery.as_ref().unwrap().recipient_phone,
        "+33612345678"
    );
    world.pay_by_card("ana", order.order_id).await;
    let paid = world.order_now(order.order_id).await;
    let mut changed = good.clone();
    changed["recipient"]["name"] = "Louise Martin".into();
    let changed = set(&world, "ana", &paid, changed, Some(paid.version))
        .await
        .expect("changed while paid");
    world
        .transition(&vendor_caller(&vendor), order.order_id, Action::Accept)
        .await
        .unwrap();
    let accepted = world.order_now(order.order_id).await;
    assert_eq!(accepted.version, changed.version + 1);
    assert!(matches!(
        set(&world, "ana", &accepted, good, Some(accepted.version)).await,
        Err(DeliveryError::Domain(DomainError::OrderInvalidState(
            OrderStatus::Accepted
        )))
    ));
    let events = world.events().await;
    let changes: Vec<&String> = events
        .iter()
        .filter(|(name, _)| name == "OrderDeliveryChanged")
        .map(|(_, detail)| detail)
        .collect();
    assert_eq!(changes.len(), 2, "one event per change: {events:?}");
    for (_, detail) in &events {
        for personal in ["Camille", "Louise", "+336", "Fleurs", "Happy birthday"] {
            assert!(
                !detail.contains(personal),
                "no personal data in events: {detail}"
            );
        }
    }
}

#[tokio::test]
async fn a_shops_settings_are_its_own_and_change_at_the_version_seen() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let unset = delivery::settings(&world.app, vendor.vendor_id)
        .await
        .unwrap();
    assert_eq!(
        (unset.settings, unset.version),
        (DeliverySettings::unset(), 0)
    );
    let other = world.vendor().await;
    let save = |by: &bouquet_app::domain::Vendor, if_match: Option<u64>, settings| {
        let caller = vendor_caller(by);
        let app = world.app.clone();
        let now = world.now();
        async move {
            delivery::change_settings(
                &app,
                &caller,
                vendor.vendor_id,
                settings,
                if_match,
                CORRELATION,
                now,
            )
            .await
        }
    };
    assert!(matches!(
        save(&other, None, paris_settings()).await,
        Err(DeliveryError::Forbidden(_))
    ));
    let mut bad = paris_settings();
    bad.time_zone = "Mars/Olympus".into();
    assert!(matches!(
        save(&vendor, None, bad).await,
        Err(DeliveryError::Invalid(errors)) if errors[0].field == "timeZone"
    ));
    let first = save(&vendor, None, paris_settings()).await.unwrap();
    assert_eq!(first.version, 1);
    assert!(matches!(
        save(&vendor, None, paris_settings()).await,
        Err(DeliveryError::VersionRequired)
    ));
    assert!(matches!(
        save(&vendor, Some(0), paris_settings()).await,
        Err(DeliveryError::Changed)
    ));
    assert_eq!(
        save(&vendor, Some(1), paris_settings())
            .await
            .unwrap()
            .version,
        2
    );
    assert_eq!(
        delivery::settings(&world.app, vendor.vendor_id)
            .await
            .unwrap()
            .version,
        2
    );
}

#[tokio::test]
async fn a_vendor_lists_the_days_deliveries_in_order_and_its_orders_by_state_without_a_scan() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let tomorrow = bouquet_app::domain::delivery::date_after(world.now(), 1, "UTC").unwrap();
    let later = bouquet_app::domain::delivery::date_after(world.now(), 3, "UTC").unwrap();
    let mut ids = Vec::new();
    // (date, slot): paid in this order, delivered in another.
    for (date, slot) in [
        (&later, "morning"),
        (&tomorrow, "evening"),
        (&tomorrow, "morning"),
        (&tomorrow, "afternoon"),
    ] {
        let bouquet = world.bouquet_of(&vendor).await;
        let order = world
            .reserved_without_delivery(&customer("ana"), &[&bouquet])
            .await;
        let mut details = request(&world);
        details["date"] = date.as_str().into();
        details["slot"] = slot.into();
        set(&world, "ana", &order, details, Some(order.version))
            .await
            .unwrap();
        world.pay_by_card("ana", order.order_id).await;
        ids.push(order.order_id);
    }
    // One unpaid reservation with details: not a delivery.
    let bouquet = world.bouquet_of(&vendor).await;
    world.reserved(&customer("ben"), &[&bouquet]).await;
    let caller = vendor_caller(&vendor);
    let list = |filter: OrderFilter, cursor: Option<String>, limit| {
        let app = world.app.clone();
        let caller = caller.clone();
        async move {
            queries::orders(&app, &caller, &filter, cursor.as_deref(), limit)
                .await
                .unwrap()
        }
    };
    let day = OrderFilter::parse(None, Some(&tomorrow), None).unwrap();
    let first = list(day.clone(), None, 2).await;
    let second = list(day.clone(), first.next_cursor.clone(), 2).await;
    let order_of = |page: &bouquet_app::store::Page<Order>| {
        page.items.iter().map(|o| o.order_id).collect::<Vec<_>>()
    };
    assert_eq!(order_of(&first), [ids[2], ids[3]], "morning, afternoon");
    assert_eq!(order_of(&second), [ids[1]], "then the evening, paged");
    assert_eq!(second.next_cursor, None);
    let upcoming = list(
        OrderFilter::parse(None, Some(&tomorrow), Some(&later)).unwrap(),
        None,
        10,
    )
    .await;
    assert_eq!(order_of(&upcoming), [ids[2], ids[3], ids[1], ids[0]]);

    world
        .transition(&caller, ids[3], Action::Accept)
        .await
        .unwrap();
    let accepted = list(
        OrderFilter::parse(Some("accepted"), None, None).unwrap(),
        None,
        10,
    )
    .await;
    assert_eq!(order_of(&accepted), [ids[3]]);
    let open = list(
        OrderFilter::parse(Some("paid,accepted"), None, None).unwrap(),
        None,
        10,
    )
    .await;
    assert_eq!(order_of(&open), [ids[2], ids[3], ids[1], ids[0]]);
    let reserved = list(
        OrderFilter::parse(Some("reserved"), None, None).unwrap(),
        None,
        10,
    )
    .await;
    assert_eq!(reserved.items.len(), 1);
    assert!(OrderFilter::parse(Some("shipped"), Some("tomorrow"), None).is_err());
    let _ = FulfilmentStep::Accept;
}

/// An order of `who` for a new bouquet of `vendor`, paid and then fulfilled by its shop.
async fn delivered_order(world: &World, vendor: &bouquet_app::domain::Vendor, who: &str) -> Order {
    let bouquet = world.bouquet_of(vendor).await;
    let order = world.reserved(&customer(who), &[&bouquet]).await;
    world.pay_by_card(who, order.order_id).await;
    world
        .transition(&vendor_caller(vendor), order.order_id, Action::Fulfil)
        .await
        .map(done)
        .expect("fulfilled")
}

#[tokio::test]
async fn delivery_details_are_redacted_their_retention_after_the_order_ends_and_at_once_on_erasure()
{
    let world = World::new().await;
    let vendor = world.vendor().await;
    let delivered = delivered_order(&world, &vendor, "ana").await.order_id;
    // Its proof of delivery, in two sizes, and another order's photo.
    let photo = |order: OrderId, width: u32| {
        format!("delivered/{order}/01JF0000000000000000000000/{width}.jpg")
    };
    let other = OrderId::generate();
    for key in [
        photo(delivered, 320),
        photo(delivered, 640),
        photo(other, 640),
    ] {
        world.private_photos.add_upload(&key, vec![1, 2, 3]);
    }
    world.advance(Duration::from_secs(29 * 86_400));
    let early = sweep(&world.app, CORRELATION, deadline()).await.unwrap();
    assert_eq!(early.redacted, 0, "{early:?}");
    assert!(world.order_now(delivered).await.holds_personal_data());
    assert!(world.private_photos.has_upload(&photo(delivered, 640)));
    world.advance(Duration::from_secs(86_400 + 60));
    let due = sweep(&world.app, CORRELATION, deadline()).await.unwrap();
    assert_eq!(due.redacted, 1, "{due:?}");
    // Issue 51: the photos go with the details (a URL signed before reads nothing).
    assert!(!world.private_photos.has_upload(&photo(delivered, 320)));
    assert!(!world.private_photos.has_upload(&photo(delivered, 640)));
    assert!(
        world.private_photos.has_upload(&photo(other, 640)),
        "only its own"
    );
    let redacted = world.order_now(delivered).await;
    let details = redacted.delivery.clone().unwrap();
    assert_eq!(details.recipient_name, REDACTED);
    assert_eq!(details.address.street, REDACTED);
    assert_eq!(
        details.address.city, "Paris",
        "the vendor's books keep the area"
    );
    assert_eq!(redacted.status, OrderStatus::Fulfilled);
    let again = sweep(&world.app, CORRELATION, deadline()).await.unwrap();
    assert_eq!(again.redacted, 0, "once");

    // Erasure: the ended orders now (one delivered with its photo, one cancelled), the open
    // one when it ends.
    let bouquet = world.bouquet_of(&vendor).await;
    let cancelled = world.reserved(&customer("ben"), &[&bouquet]).await;
    world
        .transition(&customer_caller("ben"), cancelled.order_id, Action::Cancel)
        .await
        .unwrap();
    let received = delivered_order(&world, &vendor, "ben").await;
    let bouquet = world.bouquet_of(&vendor).await;
    let open = world.reserved(&customer("ben"), &[&bouquet]).await;
    world.pay_by_card("ben", open.order_id).await;
    // (A cancelled order never went out for delivery: no upload was ever signed for it.)
    for order in [received.order_id, open.order_id] {
        world.private_photos.add_upload(&photo(order, 640), vec![1]);
    }
    let ben = customer_caller("ben");
    let erase = || erasure::erase(&world.app, &ben, CORRELATION, world.now());
    assert_eq!(
        erase().await.unwrap(),
        Erasure {
            redacted: 2,
            when_ended: 1,
            reviews: 0
        }
    );
    assert_eq!(
        erase().await.unwrap(),
        Erasure::default(),
        "repeating changes nothing"
    );
    // The ended order's photos go now; the open one's when it ends (the sweeper's).
    assert!(!world
        .private_photos
        .has_upload(&photo(received.order_id, 640)));
    assert!(world.private_photos.has_upload(&photo(open.order_id, 640)));
    assert!(!world
        .order_now(cancelled.order_id)
        .await
        .holds_personal_data());
    let still_open = world.order_now(open.order_id).await;
    assert!(
        still_open.holds_personal_data(),
        "the vendor still delivers it"
    );
    assert!(matches!(
        erasure::erase(
            &world.app,
            &vendor_caller(&vendor),
            CORRELATION,
            world.now()
        )
        .await,
        Err(erasure::ErasureError::Forbidden(_))
    ));
    world
        .transition(&vendor_caller(&vendor), open.order_id, Action::Fulfil)
        .await
        .unwrap();
    world.advance(Duration::from_secs(60));
    let swept = sweep(&world.app, CORRELATION, deadline()).await.unwrap();
    assert_eq!(swept.redacted, 1, "{swept:?}");
    assert!(!world.order_now(open.order_id).await.holds_personal_data());
}

#[tokio::test]
async fn a_date_whose_same_day_cutoff_passed_before_payment_is_refused_and_nothing_charged() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    // 2026-12-02 16:16 UTC now: same-day orders until 16:20.
    let mut settings = DeliverySettings::unset();
    settings.countries = vec!["FR".into()];
    settings.same_day_cutoff = "16:20".into();
    world.first_settings(&vendor, settings).await;
    let bouquet = world.bouquet_of(&vendor).await;
    let order = world
        .reserved_without_delivery(&customer("ana"), &[&bouquet])
        .await;
    let mut today = request(&world);
    today["date"] = "2026-12-02".into();
    let given = set(&world, "ana", &order, today, Some(order.version))
        .await
        .expect("today, before the cut-off");
    world.advance(Duration::from_secs(5 * 60));
    let refused = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(
        refused,
        Err(PayError::Checkout(CheckoutError::Domain(DomainError::DeliveryDateLapsed(ref why))))
            if why.contains("same-day delivery closes at 16:20")
    );
    assert_eq!(world.gateway.charges_made(), 0, "nothing charged");
    let tomorrow = request(&world);
    set(&world, "ana", &given, tomorrow, Some(given.version))
        .await
        .expect("another date");
    world
        .pay("ana", order.order_id, "tok_visa")
        .await
        .expect("paid for tomorrow");
}
