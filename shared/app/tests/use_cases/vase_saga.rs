//! The vase saga against the emulator's IoT Core: what it makes there and what it undoes.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_iot::config::{Credentials, Region};
use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::identity::Identity;
use bouquet_app::domain::{Bouquet, BouquetId, BouquetStatus, VaseId, Vendor, VendorId};
use bouquet_app::iot::{AwsDeviceRegistry, Registrar};
use bouquet_app::vase_saga::{self, Registered, Rotated, VaseSagaError};
use bouquet_app::{bouquets, Replayable};

use crate::support::*;

/// IoT Core on the emulator, with a vase policy of this test's own.
async fn registrar() -> Registrar {
    let endpoint =
        std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:4566".to_owned());
    let config = aws_sdk_iot::Config::builder()
        .behavior_version_latest()
        .endpoint_url(endpoint)
        .region(Region::new("eu-west-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "app-tests"))
        .build();
    let client = aws_sdk_iot::Client::from_conf(config);
    let policy = format!("app-test-VasePolicy-{}", ulid::Ulid::new());
    client
        .create_policy()
        .policy_name(&policy)
        .policy_document(r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"iot:Publish","Resource":"*"}]}"#)
        .send()
        .await
        .expect("a test vase policy");
    Registrar {
        registry: Arc::new(AwsDeviceRegistry::new(client)),
        policy,
    }
}

/// A new world, an IoT registrar of its own, and a vendor with its caller: where most saga
/// tests start.
async fn vendor_with_registrar() -> (World, Registrar, Vendor, Identity) {
    let world = World::new().await;
    let registrar = registrar().await;
    let vendor = world.vendor().await;
    let caller = vendor_caller(&vendor);
    (world, registrar, vendor, caller)
}

/// `caller` registers a vase for `vendor_id`.
async fn register(
    world: &World,
    registrar: &Registrar,
    caller: &Identity,
    vendor_id: VendorId,
) -> Result<Replayable<Registered>, VaseSagaError> {
    vase_saga::register(
        &world.app,
        registrar,
        caller,
        vendor_id,
        None,
        CORRELATION,
        world.now(),
    )
    .await
}

/// `caller` decommissions `vase_id` now.
async fn decommission(
    world: &World,
    registrar: &Registrar,
    caller: &Identity,
    vase_id: VaseId,
) -> Result<(), VaseSagaError> {
    vase_saga::decommission(
        &world.app,
        registrar,
        caller,
        vase_id,
        CORRELATION,
        world.now(),
    )
    .await
}

/// [`register`], which must register the vase.
async fn register_vase(
    world: &World,
    registrar: &Registrar,
    caller: &Identity,
    vendor_id: VendorId,
) -> Registered {
    done(
        register(world, registrar, caller, vendor_id)
            .await
            .expect("registered"),
    )
}

/// `caller` rotates `vase_id`'s certificate now.
async fn rotate(
    world: &World,
    registrar: &Registrar,
    caller: &Identity,
    vase_id: VaseId,
) -> Result<Replayable<Rotated>, VaseSagaError> {
    vase_saga::rotate(
        &world.app,
        registrar,
        caller,
        vase_id,
        None,
        CORRELATION,
        world.now(),
    )
    .await
}

/// `caller` withdraws `bouquet_id` from sale now.
async fn withdraw(world: &World, caller: &Identity, bouquet_id: BouquetId) {
    let read = bouquets::editable(&world.app, caller, bouquet_id)
        .await
        .unwrap();
    bouquets::withdraw(&world.app, caller, read, None, CORRELATION, world.now())
        .await
        .expect("withdrawn");
}

/// The certificates IoT Core still attaches to `vase_id`'s thing (none once it is gone).
async fn principals_left(registrar: &Registrar, vase_id: VaseId) -> Vec<String> {
    registrar
        .registry
        .thing_principals(&vase_id.to_string())
        .await
        .unwrap_or_default()
}

#[tokio::test]
async fn a_vase_is_registered_rotated_and_decommissioned_in_step_with_iot_core() {
    let (world, registrar, vendor, caller) = vendor_with_registrar().await;
    let registered = register_vase(&world, &registrar, &caller, vendor.vendor_id).await;
    let vase_id = registered.vase.vase_id;
    let thing = vase_id.to_string();
    assert_eq!(registered.credentials.thing_name, thing);
    assert!(!registered.credentials.certificate.private_key.is_empty());
    assert_eq!(world.vase_now(vase_id).await.vendor_id, vendor.vendor_id);
    let first = registered.credentials.certificate.arn.clone();
    assert_eq!(
        registrar.registry.thing_principals(&thing).await.unwrap(),
        vec![first.clone()]
    );

    // Rotated: the new certificate is the thing's only one.
    let rotated = done(
        rotate(&world, &registrar, &caller, vase_id)
            .await
            .expect("rotated"),
    );
    let second = rotated.credentials.certificate.arn;
    assert_ne!(second, first);
    assert_eq!(
        registrar.registry.thing_principals(&thing).await.unwrap(),
        vec![second]
    );

    // In use while a bouquet stands in it; then decommissioned, item and thing gone.
    let vase_text = vase_id.to_string();
    let new = NewBouquet::validate("Tulips", None, ("20.00", "EUR"), Some(&vase_text)).unwrap();
    let bouquet = done(world.list_bouquet(vendor.vendor_id, new).await.unwrap());
    let in_use = decommission(&world, &registrar, &caller, vase_id).await;
    assert_matches!(in_use, Err(VaseSagaError::InUse(id)) if id == bouquet.bouquet_id);
    // An empty vase is decommissioned: its item and its thing are gone.
    let empty = register_vase(&world, &registrar, &caller, vendor.vendor_id).await;
    let empty_id = empty.vase.vase_id;
    decommission(&world, &registrar, &caller, empty_id)
        .await
        .expect("decommissioned");
    assert!(!vase_saga::has_vase(&world.app, empty_id).await.unwrap());
    let left = principals_left(&registrar, empty_id).await;
    assert!(left.is_empty(), "{left:?}");
    let again = decommission(&world, &registrar, &caller, empty_id).await;
    assert_matches!(again, Err(VaseSagaError::NotFound));
}

#[tokio::test]
async fn another_vendor_and_an_unknown_vendor_register_nothing() {
    let world = World::new().await;
    let registrar = registrar().await;
    let vendor = world.vendor().await;
    let stranger = vendor_caller(&world.vendor().await);
    let refused = register(&world, &registrar, &stranger, vendor.vendor_id).await;
    assert_matches!(refused, Err(VaseSagaError::Forbidden(_)));
    let nobody = VendorId::generate();
    let caller = shop_caller(nobody);
    let unknown = register(&world, &registrar, &caller, nobody).await;
    assert_matches!(unknown, Err(VaseSagaError::UnknownVendor));
    // Nothing was made in IoT Core under this test's policy.
    let certificates = registrar
        .registry
        .policy_certificates(&registrar.policy, None)
        .await
        .unwrap();
    assert!(certificates.items.is_empty(), "{:?}", certificates.items);
}

#[tokio::test]
async fn another_vendors_vase_is_neither_rotated_nor_decommissioned() {
    let world = World::new().await;
    let registrar = registrar().await;
    let vendor = world.vendor().await;
    let registered = register_vase(
        &world,
        &registrar,
        &vendor_caller(&vendor),
        vendor.vendor_id,
    )
    .await;
    let vase_id = registered.vase.vase_id;
    let stranger = vendor_caller(&world.vendor().await);
    let rotated = rotate(&world, &registrar, &stranger, vase_id).await;
    // Vase ids are not public: another vendor's vase is unknown to it (404, issue 38).
    assert_matches!(rotated, Err(VaseSagaError::NotFound));
    let removed = decommission(&world, &registrar, &stranger, vase_id).await;
    assert_matches!(removed, Err(VaseSagaError::NotFound));
    assert!(vase_saga::has_vase(&world.app, vase_id).await.unwrap());
    let thing = vase_id.to_string();
    assert_eq!(
        registrar.registry.thing_principals(&thing).await.unwrap(),
        vec![registered.credentials.certificate.arn]
    );
}

/// A vase of `vendor` registered through the saga, with a bouquet listed in it.
async fn vase_with_bouquet(
    world: &World,
    registrar: &Registrar,
    vendor: &Vendor,
) -> (VaseId, Bouquet) {
    let caller = vendor_caller(vendor);
    let vase_id = register_vase(world, registrar, &caller, vendor.vendor_id)
        .await
        .vase
        .vase_id;
    let bouquet = world.listed(vendor, "20.00", Some(vase_id)).await;
    assert!(world.vase_now(vase_id).await.holds(bouquet.bouquet_id));
    (vase_id, bouquet)
}

/// Finding 9: a vase was 409 `vase.in_use` for ever once a bouquet had stood in it.
#[tokio::test]
async fn a_vase_whose_bouquet_was_withdrawn_is_decommissioned() {
    let (world, registrar, vendor, caller) = vendor_with_registrar().await;
    let (vase_id, bouquet) = vase_with_bouquet(&world, &registrar, &vendor).await;

    // On sale: the vase is in use.
    let in_use = decommission(&world, &registrar, &caller, vase_id).await;
    assert_matches!(in_use, Err(VaseSagaError::InUse(id)) if id == bouquet.bouquet_id);

    // Withdrawn: out of the vase in the same write; the bouquet still says where it stood.
    withdraw(&world, &caller, bouquet.bouquet_id).await;
    let vase = world.vase_now(vase_id).await;
    assert_eq!(vase.bouquet, None, "the vase holds nothing");
    let withdrawn = world.bouquet_now(bouquet.bouquet_id).await;
    assert_eq!(withdrawn.status, BouquetStatus::Withdrawn);
    assert_eq!(withdrawn.vase_id, Some(vase_id));

    decommission(&world, &registrar, &caller, vase_id)
        .await
        .expect("decommissioned");
    assert!(!vase_saga::has_vase(&world.app, vase_id).await.unwrap());
    assert!(principals_left(&registrar, vase_id).await.is_empty());
}

/// A vase is decommissioned once its bouquet has left sale by any road: sold, withdrawn by a
/// rejection (which takes it out of the vase too), or withdrawn before withdrawals took
/// bouquets out of their vases (the vase item still names it).
#[tokio::test]
async fn a_vase_whose_bouquet_left_sale_is_decommissioned_however_it_left() {
    let (world, registrar, vendor, caller) = vendor_with_registrar().await;

    // Sold (not delivered yet): the vase still names it, and may go.
    let (sold_vase, sold) = vase_with_bouquet(&world, &registrar, &vendor).await;
    let order = world.reserved(&customer("ana"), &[&sold]).await;
    // Reserved: still on sale.
    let held = decommission(&world, &registrar, &caller, sold_vase).await;
    assert_matches!(held, Err(VaseSagaError::InUse(id)) if id == sold.bouquet_id);
    world.pay_by_card("ana", order.order_id).await;
    assert!(world.vase_now(sold_vase).await.holds(sold.bouquet_id));
    decommission(&world, &registrar, &caller, sold_vase)
        .await
        .expect("a vase of a sold bouquet is decommissioned");
    assert!(!vase_saga::has_vase(&world.app, sold_vase).await.unwrap());

    // Withdrawn by its vendor's rejection: out of the vase.
    let (rejected_vase, rejected) = vase_with_bouquet(&world, &registrar, &vendor).await;
    let order = world.reserved(&customer("bea"), &[&rejected]).await;
    world.pay_by_card("bea", order.order_id).await;
    world
        .rejected_by_shop(&order, "The tulips wilted", true)
        .await;
    assert_eq!(
        world.bouquet_now(rejected.bouquet_id).await.status,
        BouquetStatus::Withdrawn
    );
    assert_eq!(world.vase_now(rejected_vase).await.bouquet, None);
    decommission(&world, &registrar, &caller, rejected_vase)
        .await
        .expect("a vase of a rejected, withdrawn bouquet is decommissioned");

    // Withdrawn while the vase kept naming it (as items written before the fix do).
    let (old_vase, old) = vase_with_bouquet(&world, &registrar, &vendor).await;
    withdraw(&world, &caller, old.bouquet_id).await;
    world
        .dynamodb
        .update_item()
        .table_name(&world.table)
        .key("pk", AttributeValue::S(format!("VASE#{old_vase}")))
        .key("sk", AttributeValue::S("VASE".into()))
        .update_expression("SET bouquetId = :id, bouquetListedAt = :at")
        .expression_attribute_values(":id", AttributeValue::S(old.bouquet_id.to_string()))
        .expression_attribute_values(
            ":at",
            AttributeValue::N(old.listed_at.as_millis().to_string()),
        )
        .send()
        .await
        .expect("the old link laid down");
    assert!(world.vase_now(old_vase).await.holds(old.bouquet_id));
    decommission(&world, &registrar, &caller, old_vase)
        .await
        .expect("a vase naming a withdrawn bouquet is decommissioned");
    assert!(!vase_saga::has_vase(&world.app, old_vase).await.unwrap());
    assert_eq!(count_named(&world.events().await, "VaseDecommissioned"), 3);
}
