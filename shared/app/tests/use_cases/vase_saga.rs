//! The vase saga against the emulator's IoT Core: what it makes there and what it undoes.

use std::sync::Arc;

use aws_sdk_iot::config::{Credentials, Region};
use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::identity::Identity;
use bouquet_app::domain::VendorId;
use bouquet_app::iot::{AwsDeviceRegistry, Registrar};
use bouquet_app::vase_saga::{self, Registered, VaseSagaError};
use bouquet_app::{listing, Replayable};

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

#[tokio::test]
async fn a_vase_is_registered_rotated_and_decommissioned_in_step_with_iot_core() {
    let world = World::new().await;
    let registrar = registrar().await;
    let vendor = world.vendor().await;
    let caller = vendor_caller(&vendor);
    let registered = done(
        register(&world, &registrar, &caller, vendor.vendor_id)
            .await
            .expect("registered"),
    );
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
        vase_saga::rotate(
            &world.app,
            &registrar,
            &caller,
            vase_id,
            None,
            CORRELATION,
            world.now(),
        )
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
    let bouquet = done(
        listing::list_bouquet(
            &world.app,
            vendor.vendor_id,
            new,
            None,
            CORRELATION,
            world.now(),
        )
        .await
        .unwrap(),
    );
    let in_use = vase_saga::decommission(
        &world.app,
        &registrar,
        &caller,
        vase_id,
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(in_use, Err(VaseSagaError::InUse(id)) if id == bouquet.bouquet_id),
        "{in_use:?}"
    );
    // An empty vase is decommissioned: its item and its thing are gone.
    let empty = done(
        register(&world, &registrar, &caller, vendor.vendor_id)
            .await
            .expect("registered"),
    );
    let empty_id = empty.vase.vase_id;
    vase_saga::decommission(
        &world.app,
        &registrar,
        &caller,
        empty_id,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("decommissioned");
    assert!(!vase_saga::has_vase(&world.app, empty_id).await.unwrap());
    let left = registrar
        .registry
        .thing_principals(&empty_id.to_string())
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let again = vase_saga::decommission(
        &world.app,
        &registrar,
        &caller,
        empty_id,
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(matches!(again, Err(VaseSagaError::NotFound)), "{again:?}");
}

#[tokio::test]
async fn another_vendor_and_an_unknown_vendor_register_nothing() {
    let world = World::new().await;
    let registrar = registrar().await;
    let vendor = world.vendor().await;
    let stranger = vendor_caller(&world.vendor().await);
    let refused = register(&world, &registrar, &stranger, vendor.vendor_id).await;
    assert!(
        matches!(refused, Err(VaseSagaError::Forbidden(_))),
        "{refused:?}"
    );
    let nobody = VendorId::generate();
    let caller = shop_caller(nobody);
    let unknown = register(&world, &registrar, &caller, nobody).await;
    assert!(
        matches!(unknown, Err(VaseSagaError::UnknownVendor)),
        "{unknown:?}"
    );
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
    let registered = done(
        register(
            &world,
            &registrar,
            &vendor_caller(&vendor),
            vendor.vendor_id,
        )
        .await
        .unwrap(),
    );
    let vase_id = registered.vase.vase_id;
    let stranger = vendor_caller(&world.vendor().await);
    let rotated = vase_saga::rotate(
        &world.app,
        &registrar,
        &stranger,
        vase_id,
        None,
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(rotated, Err(VaseSagaError::Forbidden(_))),
        "{rotated:?}"
    );
    let removed = vase_saga::decommission(
        &world.app,
        &registrar,
        &stranger,
        vase_id,
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(removed, Err(VaseSagaError::Forbidden(_))),
        "{removed:?}"
    );
    assert!(vase_saga::has_vase(&world.app, vase_id).await.unwrap());
    let thing = vase_id.to_string();
    assert_eq!(
        registrar.registry.thing_principals(&thing).await.unwrap(),
        vec![registered.credentials.certificate.arn]
    );
}
