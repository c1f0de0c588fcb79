use std::time::Duration;

use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::BouquetStatus;
use bouquet_app::listing::ListingError;
use bouquet_app::reservation::ReserveFrom;
use bouquet_app::shops::{self, ShopError};
use bouquet_app::store::{CatalogueFilter, CatalogueSort};

use crate::support::*;

/// What an administrator's suspension (`true`) or reinstatement of the shop did, now.
async fn by_an_administrator(
    world: &World,
    vendor_id: bouquet_app::domain::VendorId,
    suspend: bool,
) -> shops::ShopChange {
    let (app, admin, now) = (&world.app, admin_caller(), world.now());
    let change = if suspend {
        shops::suspend(app, &admin, vendor_id, CORRELATION, now).await
    } else {
        shops::reinstate(app, &admin, vendor_id, CORRELATION, now).await
    };
    change.expect("an administrator may")
}

/// The catalogue's bouquets, newest first.
async fn on_sale(world: &World) -> Vec<bouquet_app::domain::BouquetId> {
    let page = world
        .app
        .store
        .catalogue(
            &CatalogueFilter::default(),
            CatalogueSort::Newest,
            None,
            50,
            world.now(),
        )
        .await
        .unwrap();
    page.items.iter().map(|b| b.bouquet_id).collect()
}

fn events_named(events: &[(String, String)], name: &str) -> usize {
    events.iter().filter(|(n, _)| n == name).count()
}

#[tokio::test]
async fn a_suspension_takes_the_shops_bouquets_off_sale_once_and_a_reinstatement_brings_them_back()
{
    let world = World::new().await;
    let shop = world.vendor().await;
    let (kept, held) = (world.bouquet_of(&shop).await, world.bouquet_of(&shop).await);
    let order = world.reserved(&customer("ana"), &[&held]).await;

    let refused = shops::suspend(
        &world.app,
        &vendor_caller(&shop),
        shop.vendor_id,
        CORRELATION,
        world.now(),
    )
    .await;
    assert_matches!(refused, Err(ShopError::Forbidden(_)));
    // The request started a while before its sweep reached the bouquets: each is stamped
    // when it was taken off sale, so no order created before then is mistaken for a sale
    // after it.
    let request_started = world.now();
    world.advance(Duration::from_secs(3));
    let suspended = shops::suspend(
        &world.app,
        &admin_caller(),
        shop.vendor_id,
        CORRELATION,
        request_started,
    )
    .await
    .unwrap();
    assert!(suspended.vendor.is_suspended());
    assert_eq!(suspended.bouquets_moved, 2, "both, the held one too");
    assert_eq!(
        world.bouquet_now(kept.bouquet_id).await.suspended_at,
        Some(world.now())
    );

    assert!(on_sale(&world).await.is_empty(), "off the catalogue");
    let reserve = world
        .reserve(
            &customer("ben"),
            &ReserveFrom::Bouquets(vec![kept.bouquet_id]),
        )
        .await;
    assert!(reserve.is_err(), "not for sale");
    let new = NewBouquet::validate("Irises", None, ("8.00", "EUR"), None).unwrap();
    let listing = world.list_bouquet(shop.vendor_id, new).await;
    assert_matches!(listing, Err(ListingError::VendorSuspended));
    // The order placed before goes on.
    world.pay_by_card("ana", order.order_id).await;
    assert!(matches!(
        world.bouquet_now(held.bouquet_id).await.status,
        BouquetStatus::Sold { .. }
    ));

    let again = by_an_administrator(&world, shop.vendor_id, true).await;
    assert_eq!(again.bouquets_moved, 0);
    assert_eq!(events_named(&world.events().await, "VendorSuspended"), 1);

    let back = by_an_administrator(&world, shop.vendor_id, false).await;
    assert!(!back.vendor.is_suspended());
    assert_eq!(back.bouquets_moved, 2);
    assert_eq!(
        on_sale(&world).await,
        vec![kept.bouquet_id],
        "the sold one stays sold"
    );
    assert_eq!(events_named(&world.events().await, "VendorReinstated"), 1);
}

#[tokio::test]
async fn only_administrators_list_every_shop() {
    let world = World::new().await;
    let first = world.vendor().await;
    let second = world.vendor().await;
    shops::suspend(
        &world.app,
        &admin_caller(),
        second.vendor_id,
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap();
    let page = shops::list(&world.app, &admin_caller(), None, 10)
        .await
        .unwrap();
    let shops: Vec<_> = page
        .items
        .iter()
        .map(|v| (v.vendor_id, v.is_suspended()))
        .collect();
    assert_eq!(shops, [(first.vendor_id, false), (second.vendor_id, true)]);
    let refused = shops::list(&world.app, &vendor_caller(&first), None, 10).await;
    assert_matches!(refused, Err(ShopError::Forbidden(_)));
    let missing = shops::suspend(
        &world.app,
        &admin_caller(),
        bouquet_app::domain::VendorId::generate(),
        CORRELATION,
        world.now(),
    )
    .await;
    assert_matches!(missing, Err(ShopError::NotFound));
}

/// The raw item, to see which catalogue indexes it is in.
async fn in_catalogue_indexes(world: &World, bouquet_id: bouquet_app::domain::BouquetId) -> bool {
    world
        .bouquet_item(bouquet_id)
        .await
        .contains_key("catalogueShard")
}

#[tokio::test]
async fn a_rejection_while_the_shop_is_suspended_returns_its_bouquet_off_the_catalogue() {
    use bouquet_app::domain::OrderStatus;
    let world = World::new().await;
    let shop = world.vendor().await;
    let bouquet = world.bouquet_of(&shop).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world.pay_by_card("ana", order.order_id).await;
    by_an_administrator(&world, shop.vendor_id, true).await;
    // Open orders go on: the florist rejects this one, and its bouquet comes back unsold but
    // not on sale while the shop is suspended.
    let rejected = world
        .rejected_by_shop(&order, "Closed for now", false)
        .await;
    assert_eq!(rejected.status, OrderStatus::Rejected);
    let returned = world.bouquet_now(bouquet.bouquet_id).await;
    assert_eq!(returned.status, BouquetStatus::Available);
    assert!(returned.is_suspended() && !returned.is_available(world.now()));
    assert!(!in_catalogue_indexes(&world, bouquet.bouquet_id).await);

    by_an_administrator(&world, shop.vendor_id, false).await;
    assert!(world
        .bouquet_now(bouquet.bouquet_id)
        .await
        .is_available(world.now()));
    assert!(in_catalogue_indexes(&world, bouquet.bouquet_id).await);
}
