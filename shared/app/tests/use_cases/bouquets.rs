use bouquet_app::bouquets::{self, BouquetError};
use bouquet_app::domain::bouquet::BouquetChange;
use bouquet_app::domain::BouquetStatus;

use crate::support::*;

fn new_price(amount: &str) -> BouquetChange {
    BouquetChange::validate(None, None, Some((amount, "EUR"))).expect("a valid change")
}

#[tokio::test]
async fn its_vendor_changes_a_bouquet_at_the_version_it_saw() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let caller = vendor_caller(&vendor);
    let id = bouquet.bouquet_id;
    let needs_version = bouquets::change(
        &world.app,
        &caller,
        id,
        None,
        new_price("30.00"),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(needs_version, Err(BouquetError::VersionRequired)),
        "{needs_version:?}"
    );
    let changed = bouquets::change(
        &world.app,
        &caller,
        id,
        Some(bouquet.version),
        new_price("30.00"),
        CORRELATION,
        world.now(),
    )
    .await
    .expect("changed");
    assert_eq!(
        (changed.price.minor(), changed.version),
        (3000, bouquet.version + 1)
    );
    // The version it saw is gone now: a second change at it is refused, nothing lost.
    let stale = bouquets::change(
        &world.app,
        &caller,
        id,
        Some(bouquet.version),
        new_price("1.00"),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(matches!(stale, Err(BouquetError::Changed)), "{stale:?}");
    assert_eq!(world.bouquet_now(id).await.price.minor(), 3000);
}

#[tokio::test]
async fn another_vendor_may_not_change_or_withdraw_it() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let stranger = vendor_caller(&world.vendor().await);
    let id = bouquet.bouquet_id;
    let changed = bouquets::change(
        &world.app,
        &stranger,
        id,
        Some(bouquet.version),
        new_price("1.00"),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(changed, Err(BouquetError::Forbidden(_))),
        "{changed:?}"
    );
    let withdrawn =
        bouquets::withdraw(&world.app, &stranger, id, None, CORRELATION, world.now()).await;
    assert!(
        matches!(withdrawn, Err(BouquetError::Forbidden(_))),
        "{withdrawn:?}"
    );
    assert_eq!(world.bouquet_now(id).await, bouquet);
}

#[tokio::test]
async fn a_reserved_bouquet_is_neither_changed_nor_withdrawn() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    world.reserved(&customer("ana"), &[&bouquet]).await;
    let caller = vendor_caller(&vendor);
    let read = world.bouquet_now(bouquet.bouquet_id).await;
    let changed = bouquets::change(
        &world.app,
        &caller,
        bouquet.bouquet_id,
        Some(read.version),
        new_price("1.00"),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(changed, Err(BouquetError::NotAvailable)),
        "{changed:?}"
    );
    let withdrawn = bouquets::withdraw(
        &world.app,
        &caller,
        bouquet.bouquet_id,
        None,
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(withdrawn, Err(BouquetError::NotAvailable)),
        "{withdrawn:?}"
    );
}

#[tokio::test]
async fn a_withdrawn_bouquet_leaves_the_catalogue() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let listed = bouquets::catalogue(&world.app, Some(vendor.vendor_id), None, 10, world.now())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let withdrawn = bouquets::withdraw(
        &world.app,
        &vendor_caller(&vendor),
        bouquet.bouquet_id,
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("withdrawn");
    assert_eq!(withdrawn.status, BouquetStatus::Withdrawn);
    let listed = bouquets::catalogue(&world.app, Some(vendor.vendor_id), None, 10, world.now())
        .await
        .unwrap();
    assert!(listed.items.is_empty(), "{:?}", listed.items);
    let unknown = bouquets::bouquet(&world.app, bouquet_app::domain::BouquetId::generate()).await;
    assert!(
        matches!(unknown, Err(BouquetError::NotFound)),
        "{unknown:?}"
    );
}
