use std::time::Duration;

use bouquet_app::domain::{BouquetId, DomainError, OrderStatus};
use bouquet_app::reservation::{reserve, ReserveError, ReserveFrom};
use bouquet_app::{Config, Replayable};

use crate::support::*;

#[tokio::test]
async fn holds_every_named_bouquet_for_the_configured_time() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let (a, b) = world.two_bouquets_of(&vendor).await;
    let order = world.reserved(&customer("ana"), &[&a, &b]).await;
    assert_eq!(order.status, OrderStatus::Reserved);
    assert_eq!(order.total.minor(), 4900);
    assert_eq!(order.reserved_until, T0.plus(Config::default().hold));
    for id in [a.bouquet_id, b.bouquet_id] {
        assert!(!is_available(&world.bouquet_now(id).await));
    }
    assert_eq!(world.order_now(order.order_id).await, order);
}

#[tokio::test]
async fn an_unknown_bouquet_is_unavailable_and_nothing_is_held() {
    let world = World::new().await;
    let known = world.bouquet().await;
    let unknown = BouquetId::generate();
    let result = world
        .reserve(
            &customer("ana"),
            &ReserveFrom::Bouquets(vec![known.bouquet_id, unknown]),
        )
        .await;
    assert!(matches!(result, Err(ReserveError::Unavailable(ids)) if ids == vec![unknown]));
    assert!(is_available(&world.bouquet_now(known.bouquet_id).await));
}

#[tokio::test]
async fn of_many_customers_racing_for_one_bouquet_exactly_one_wins() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let racers = 20;
    let results = futures::future::join_all((0..racers).map(|i| {
        let (app, now) = (world.app.clone(), world.now());
        let from = ReserveFrom::Bouquets(vec![bouquet.bouquet_id]);
        async move {
            let customer = customer(&format!("racer-{i}"));
            reserve(&app, &customer, &from, None, CORRELATION, now).await
        }
    }))
    .await;
    let won = results
        .iter()
        .filter(|r| matches!(r, Ok(Replayable::Done(_))))
        .count();
    let lost = results
        .iter()
        .filter(|r| matches!(r, Err(ReserveError::Unavailable(ids)) if ids == &vec![bouquet.bouquet_id]))
        .count();
    assert_eq!((won, lost), (1, racers - 1), "{results:?}");
}

#[tokio::test]
async fn the_same_key_reserves_once_and_replays_the_first_answer() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let ana = customer("ana");
    let from = ReserveFrom::Bouquets(vec![bouquet.bouquet_id]);
    let record = remembering("key-1", world.now());
    // The same request twice, with the same key.
    let reserve_with_the_key = || {
        reserve(
            &world.app,
            &ana,
            &from,
            Some(key("key-1", &record)),
            CORRELATION,
            world.now(),
        )
    };
    let first = reserve_with_the_key().await.expect("reserved");
    let order = done(first);
    let again = reserve_with_the_key().await.expect("replayed");
    match again {
        Replayable::Replayed(stored) => {
            assert_eq!(
                (stored.status, stored.body),
                (201, order.order_id.to_string())
            )
        }
        other => panic!("expected a replay, got {other:?}"),
    }
    let orders = world
        .app
        .store
        .customer_orders(&ana, None, 10)
        .await
        .expect("list");
    assert_eq!(orders.items.len(), 1);
}

#[tokio::test]
async fn a_lapsed_hold_is_taken_over_by_the_next_customer() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    world.reserved(&customer("ana"), &[&bouquet]).await;
    world.advance(Config::default().hold + Duration::from_secs(1));
    let order = world.reserved(&customer("ben"), &[&bouquet]).await;
    assert_eq!(order.customer_id, customer("ben"));
}

#[tokio::test]
async fn a_customer_cannot_hold_more_orders_than_the_cap() {
    let config = Config {
        max_holds_per_customer: 1,
        ..Config::default()
    };
    let world = World::with_config(config).await;
    let vendor = world.vendor().await;
    let (a, b) = world.two_bouquets_of(&vendor).await;
    world.reserved(&customer("ana"), &[&a]).await;
    let second = world
        .reserve(&customer("ana"), &ReserveFrom::Bouquets(vec![b.bouquet_id]))
        .await;
    assert_matches!(second, Err(ReserveError::Limit(1)));
    assert!(is_available(&world.bouquet_now(b.bouquet_id).await));
}

#[tokio::test]
async fn the_cart_is_reserved_and_emptied_in_one_transaction() {
    let world = World::new().await;
    let ana = customer("ana");
    let empty = world.reserve(&ana, &ReserveFrom::Cart).await;
    assert_matches!(empty, Err(ReserveError::Domain(DomainError::CartEmpty)));

    let bouquet = world.bouquet().await;
    world
        .app
        .store
        .add_to_cart(&ana, &bouquet, world.now())
        .await
        .expect("added");
    let order = done(
        world
            .reserve(&ana, &ReserveFrom::Cart)
            .await
            .expect("reserved"),
    );
    assert_eq!(
        order.bouquet_ids().collect::<Vec<_>>(),
        vec![bouquet.bouquet_id]
    );
    let cart = world.app.store.cart(&ana).await.expect("cart");
    assert!(cart.bouquet_ids.is_empty(), "{cart:?}");
}

#[tokio::test]
async fn bouquets_of_two_vendors_are_refused() {
    let world = World::new().await;
    let (a, b) = (world.bouquet().await, world.bouquet().await);
    let result = world
        .reserve(
            &customer("ana"),
            &ReserveFrom::Bouquets(vec![a.bouquet_id, b.bouquet_id]),
        )
        .await;
    assert_matches!(
        result,
        Err(ReserveError::Domain(DomainError::VendorMismatch))
    );
}

/// Holding and releasing bouquets in a loop is bounded per customer and minute (429
/// `rate.limited`); the refused reservation holds nothing, and the next minute is open.
#[tokio::test]
async fn reservations_past_the_minutes_bound_are_refused_and_hold_nothing() {
    let world = World::with_config(Config {
        reservations_per_minute: 2,
        ..Config::default()
    })
    .await;
    let vendor = world.vendor().await;
    for _ in 0..2 {
        let bouquet = world.bouquet_of(&vendor).await;
        world
            .reserved_without_delivery(&customer("ana"), &[&bouquet])
            .await;
    }
    let third = world.bouquet_of(&vendor).await;
    let refused = world
        .reserve(
            &customer("ana"),
            &ReserveFrom::Bouquets(vec![third.bouquet_id]),
        )
        .await;
    let Err(ReserveError::RateLimited { retry_after_secs }) = refused else {
        panic!("{refused:?}")
    };
    assert!((1..=60).contains(&retry_after_secs));
    assert!(is_available(&world.bouquet_now(third.bouquet_id).await));
    // Another customer reserves meanwhile.
    world
        .reserved_without_delivery(&customer("ben"), &[&third])
        .await;
    world.advance(Duration::from_secs(retry_after_secs));
    let next = world.bouquet_of(&vendor).await;
    world
        .reserved_without_delivery(&customer("ana"), &[&next])
        .await;
}
