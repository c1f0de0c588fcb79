use bouquet_app::cart::{self, CartViewError};
use bouquet_app::domain::{BouquetId, DomainError};

use crate::support::*;

#[tokio::test]
async fn a_cart_holds_one_vendors_available_bouquets_once() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let (a, b) = world.two_bouquets_of(&vendor).await;
    let ana = customer("ana");
    assert!(cart::current(&world.app, &ana, world.now())
        .await
        .unwrap()
        .items
        .is_empty());
    cart::add(&world.app, &ana, a.bouquet_id, world.now())
        .await
        .unwrap();
    cart::add(&world.app, &ana, a.bouquet_id, world.now())
        .await
        .unwrap();
    let view = cart::add(&world.app, &ana, b.bouquet_id, world.now())
        .await
        .unwrap();
    assert_eq!(view.items.len(), 2, "adding twice is a no-op");
    assert_eq!(view.total.map(|t| t.minor()), Some(4900));
    assert_eq!(view.vendor_id, Some(vendor.vendor_id));

    // Another vendor's bouquet is refused and changes nothing.
    let other = world.bouquet().await;
    let mixed = cart::add(&world.app, &ana, other.bouquet_id, world.now()).await;
    assert_matches!(
        mixed,
        Err(CartViewError::Domain(DomainError::CartVendorMismatch))
    );
    assert_eq!(
        cart::current(&world.app, &ana, world.now())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    let view = cart::remove(&world.app, &ana, a.bouquet_id, world.now())
        .await
        .unwrap();
    assert_eq!(view.items.len(), 1);
    let again = cart::remove(&world.app, &ana, a.bouquet_id, world.now())
        .await
        .unwrap();
    assert_eq!(
        again.items.len(),
        1,
        "removing what is not there answers the cart unchanged"
    );
}

#[tokio::test]
async fn an_unknown_or_reserved_bouquet_is_not_added() {
    let world = World::new().await;
    let unknown = BouquetId::generate();
    let result = cart::add(&world.app, &customer("ana"), unknown, world.now()).await;
    assert_matches!(result, Err(CartViewError::Unavailable(id)) if id == unknown);
    let bouquet = world.bouquet().await;
    world.reserved(&customer("ben"), &[&bouquet]).await;
    let taken = cart::add(
        &world.app,
        &customer("ana"),
        bouquet.bouquet_id,
        world.now(),
    )
    .await;
    assert_matches!(
        taken,
        Err(CartViewError::Domain(DomainError::BouquetUnavailable(_)))
    );
}

#[tokio::test]
async fn concurrent_adds_of_two_vendors_bouquets_leave_one_vendor_in_the_cart() {
    let world = World::new().await;
    let ana = customer("ana");
    let bouquets: Vec<_> = futures::future::join_all((0..6).map(|_| world.bouquet())).await;
    let results = futures::future::join_all(bouquets.iter().map(|b| {
        let (app, ana, now) = (world.app.clone(), ana.clone(), world.now());
        let id = b.bouquet_id;
        async move { cart::add(&app, &ana, id, now).await }
    }))
    .await;
    let added = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(CartViewError::Domain(DomainError::CartVendorMismatch))
            )
        })
        .count();
    assert_eq!((added, refused), (1, 5), "{results:?}");
    let view = cart::current(&world.app, &ana, world.now()).await.unwrap();
    assert_eq!(view.items.len(), 1);
}
