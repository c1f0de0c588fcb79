use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::{BouquetStatus, VendorId};
use bouquet_app::listing::{onboard_vendor, ListingError};

use crate::support::*;

#[tokio::test]
async fn a_vendor_is_onboarded_and_lists_an_available_bouquet() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    assert!(world
        .app
        .store
        .vendor_exists(vendor.vendor_id)
        .await
        .expect("read"));
    let bouquet = world.bouquet_of(&vendor).await;
    assert_eq!(bouquet.status, BouquetStatus::Available);
    assert_eq!(world.bouquet_now(bouquet.bouquet_id).await, bouquet);
}

#[tokio::test]
async fn a_vendor_needs_a_valid_name() {
    let world = World::new().await;
    let result = onboard_vendor(&world.app, "", None, CORRELATION, world.now()).await;
    assert_matches!(result, Err(ListingError::Invalid(ref e)) if e[0].field == "name");
}

#[tokio::test]
async fn an_unknown_vendor_lists_nothing() {
    let world = World::new().await;
    let new = NewBouquet::validate("Tulips", None, ("10.00", "EUR"), None).expect("valid");
    let result = world.list_bouquet(VendorId::generate(), new).await;
    assert_matches!(result, Err(ListingError::UnknownVendor));
}

#[tokio::test]
async fn a_vase_of_nobody_is_refused_by_field() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = bouquet_app::domain::VaseId::generate().to_string();
    let new = NewBouquet::validate("Tulips", None, ("10.00", "EUR"), Some(&vase)).expect("valid");
    let result = world.list_bouquet(vendor.vendor_id, new).await;
    assert_matches!(result, Err(ListingError::Invalid(ref e)) if e[0].field == "vaseId");
}
