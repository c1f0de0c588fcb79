use std::sync::Arc;

use aws_credential_types::Credentials;
use bouquet_app::domain::photo::{PhotoUpload, Refusal, UploadStatus, MAX_UPLOAD_BYTES};
use bouquet_app::domain::{Bouquet, BouquetId};
use bouquet_app::photo_storage::render::ImageRenderer;
use bouquet_app::photo_storage::{MemoryObjects, PostPolicySigner};
use bouquet_app::photos::{self, PhotoError, Processed};

use crate::support::*;

fn signer() -> PostPolicySigner {
    PostPolicySigner::with_credentials(
        Credentials::new("AKIDTEST", "secret", None, None, "test"),
        "eu-west-1",
        "uploads",
        "http://127.0.0.1:3000/local/s3/uploads",
    )
}

/// A PNG of `width` × `height`, each call's pixels different (`seed`).
fn png(width: u32, height: u32, seed: u8) -> Vec<u8> {
    use image::ImageEncoder;
    let pixels: Vec<u8> = (0..width * height)
        .flat_map(|i| [(i % 251) as u8, seed, 90])
        .collect();
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&pixels, width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// The vendor asks for an upload of `bouquet` and "sends" `bytes` under its key.
async fn uploaded(
    world: &World,
    bouquet: &Bouquet,
    objects: &MemoryObjects,
    bytes: Vec<u8>,
) -> PhotoUpload {
    let ticket = photos::request_upload(
        &world.app,
        &signer(),
        &shop_caller(bouquet.vendor_id),
        bouquet.bouquet_id,
        bouquet_app::domain::photo::ImageType::Png,
        None,
        world.now(),
    )
    .await
    .map(done)
    .expect("an upload is allowed");
    assert_eq!(ticket.post.fields["key"], ticket.upload.object_key());
    assert_eq!(ticket.post.fields["Content-Type"], "image/png");
    objects.add_upload(&ticket.upload.object_key(), bytes);
    ticket.upload
}

async fn process(
    world: &World,
    objects: &MemoryObjects,
    upload: &PhotoUpload,
) -> Result<Processed, PhotoError> {
    photos::process_upload(
        &world.app,
        objects,
        &ImageRenderer,
        &upload.object_key(),
        CORRELATION,
        world.now(),
    )
    .await
}

async fn status(world: &World, bouquet: &Bouquet, upload: &PhotoUpload) -> UploadStatus {
    photos::upload_status(
        &world.app,
        &shop_caller(bouquet.vendor_id),
        bouquet.bouquet_id,
        upload.upload_id,
    )
    .await
    .expect("the vendor reads its upload")
    .status
}

fn photo_events(events: &[(String, String)]) -> usize {
    count_named(events, "BouquetPhotoChanged")
}

#[tokio::test]
async fn only_the_bouquets_vendor_may_upload_and_read_an_upload() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let other = world.vendor().await;
    let refused = photos::request_upload(
        &world.app,
        &signer(),
        &vendor_caller(&other),
        bouquet.bouquet_id,
        bouquet_app::domain::photo::ImageType::Jpeg,
        None,
        world.now(),
    )
    .await;
    assert_matches!(refused, Err(PhotoError::Forbidden(_)));
    let missing = photos::request_upload(
        &world.app,
        &signer(),
        &vendor_caller(&other),
        BouquetId::generate(),
        bouquet_app::domain::photo::ImageType::Jpeg,
        None,
        world.now(),
    )
    .await;
    assert_matches!(missing, Err(PhotoError::NotFound));

    let objects = MemoryObjects::default();
    let upload = uploaded(&world, &bouquet, &objects, png(8, 8, 1)).await;
    assert_eq!(
        status(&world, &bouquet, &upload).await,
        UploadStatus::Pending
    );
    let read = photos::upload_status(
        &world.app,
        &vendor_caller(&other),
        bouquet.bouquet_id,
        upload.upload_id,
    )
    .await;
    // Upload ids are not public: another vendor's is unknown to it (404), not refused (403).
    assert_matches!(read, Err(PhotoError::UnknownUpload));
    let wrong_bouquet = photos::upload_status(
        &world.app,
        &shop_caller(bouquet.vendor_id),
        BouquetId::generate(),
        upload.upload_id,
    )
    .await;
    assert_matches!(wrong_bouquet, Err(PhotoError::UnknownUpload));
}

#[tokio::test]
async fn an_upload_becomes_the_bouquets_photo_once_whatever_the_redeliveries() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = Arc::new(MemoryObjects::default());
    let upload = uploaded(&world, &bouquet, &objects, png(1000, 750, 2)).await;

    // S3 delivers an event at least once: eight copies of it at the same time.
    let runs = (0..8).map(|_| process(&world, &objects, &upload));
    let outcomes = futures::future::join_all(runs).await;
    let shown = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Processed::Shown(_))))
        .count();
    let duplicates = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Processed::Duplicate)))
        .count();
    assert_eq!((shown, duplicates), (1, 7), "{outcomes:?}");

    let now = world.bouquet_now(bouquet.bouquet_id).await;
    let photo = now.photo.expect("the bouquet shows the photo");
    assert_eq!(photo.upload_id, upload.upload_id);
    let widths: Vec<u32> = photo.variants.iter().map(|v| v.width).collect();
    assert_eq!(widths, [320, 640]);
    assert_eq!((photo.width, photo.height), (640, 480));
    for variant in &photo.variants {
        let stored = objects
            .variant(variant.path.trim_start_matches('/'))
            .expect("each size is stored");
        assert_eq!(&stored[..2], &[0xFF, 0xD8], "a JPEG");
    }
    assert_eq!(now.version, bouquet.version + 1);
    assert_eq!(status(&world, &bouquet, &upload).await, UploadStatus::Ready);
    assert!(
        !objects.has_upload(&upload.object_key()),
        "the upload is deleted"
    );
    assert_eq!(photo_events(&world.events().await), 1, "one event");

    // A redelivery after the upload was deleted changes nothing either.
    assert_eq!(
        process(&world, &objects, &upload).await.unwrap(),
        Processed::Duplicate
    );
    assert_eq!(photo_events(&world.events().await), 1);
}

#[tokio::test]
async fn a_refused_file_is_recorded_with_why_and_the_old_photo_stays() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let first = uploaded(&world, &bouquet, &objects, png(400, 400, 3)).await;
    assert!(matches!(
        process(&world, &objects, &first).await,
        Ok(Processed::Shown(_))
    ));
    let shown = world.bouquet_now(bouquet.bouquet_id).await.photo;

    let not_an_image = uploaded(&world, &bouquet, &objects, b"%PDF-1.7 a brochure".to_vec()).await;
    assert_eq!(
        process(&world, &objects, &not_an_image).await.unwrap(),
        Processed::Rejected(Refusal::NotAnImage)
    );
    let oversized = uploaded(
        &world,
        &bouquet,
        &objects,
        vec![0xFF; MAX_UPLOAD_BYTES as usize + 1],
    )
    .await;
    assert_eq!(
        process(&world, &objects, &oversized).await.unwrap(),
        Processed::Rejected(Refusal::TooLarge {
            limit: MAX_UPLOAD_BYTES
        })
    );
    assert_eq!(
        status(&world, &bouquet, &not_an_image).await,
        UploadStatus::Rejected {
            refusal: Refusal::NotAnImage
        }
    );
    assert!(!objects.has_upload(&not_an_image.object_key()));
    assert_eq!(
        world.bouquet_now(bouquet.bouquet_id).await.photo,
        shown,
        "the old photo stays"
    );
    assert_eq!(photo_events(&world.events().await), 1);
}

#[tokio::test]
async fn a_later_upload_wins_whichever_is_processed_first() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let earlier = uploaded(&world, &bouquet, &objects, png(320, 320, 4)).await;
    let later = uploaded(&world, &bouquet, &objects, png(320, 320, 5)).await;
    assert!(matches!(
        process(&world, &objects, &later).await,
        Ok(Processed::Shown(_))
    ));
    assert_eq!(
        process(&world, &objects, &earlier).await.unwrap(),
        Processed::Superseded
    );
    let photo = world.bouquet_now(bouquet.bouquet_id).await.photo.unwrap();
    assert_eq!(photo.upload_id, later.upload_id);
    assert_eq!(
        status(&world, &bouquet, &earlier).await,
        UploadStatus::Superseded
    );
}

#[tokio::test]
async fn a_storage_failure_leaves_the_upload_pending_for_the_retry() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let upload = uploaded(&world, &bouquet, &objects, png(320, 200, 6)).await;
    objects.fail_writes(true);
    let failed = process(&world, &objects, &upload).await;
    assert_matches!(failed, Err(PhotoError::Storage(_)));
    assert_eq!(
        status(&world, &bouquet, &upload).await,
        UploadStatus::Pending
    );
    assert_eq!(world.bouquet_now(bouquet.bouquet_id).await.photo, None);
    objects.fail_writes(false);
    assert!(matches!(
        process(&world, &objects, &upload).await,
        Ok(Processed::Shown(_))
    ));
    assert_eq!(photo_events(&world.events().await), 1);
}

#[tokio::test]
async fn a_photo_lands_on_a_bouquet_that_changed_meanwhile_without_undoing_the_change() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let upload = uploaded(&world, &bouquet, &objects, png(320, 240, 7)).await;
    // Reserved while the photo was on its way: the hold stays, the photo shows.
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    assert!(matches!(
        process(&world, &objects, &upload).await,
        Ok(Processed::Shown(_))
    ));
    let now = world.bouquet_now(bouquet.bouquet_id).await;
    assert!(now.photo.is_some());
    assert!(matches!(
        now.status,
        bouquet_app::domain::BouquetStatus::Reserved { order_id, .. } if order_id == order.order_id
    ));
    assert_eq!(
        photos::process_upload(
            &world.app,
            &objects,
            &ImageRenderer,
            "uploads/not-ours",
            CORRELATION,
            world.now()
        )
        .await
        .unwrap(),
        Processed::Unknown
    );
}

/// A file that arrived before its shop's suspension and is processed after it is refused:
/// nothing of a suspended shop is shown or announced.
#[tokio::test]
async fn a_photo_processed_after_its_shop_was_suspended_is_refused_and_never_shown() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let upload = uploaded(&world, &bouquet, &objects, png(8, 8, 3)).await;
    bouquet_app::shops::suspend(
        &world.app,
        &admin_caller(),
        bouquet.vendor_id,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("an administrator suspends");
    let processed = process(&world, &objects, &upload).await;
    assert_matches!(processed, Ok(Processed::Rejected(Refusal::ShopSuspended)));
    assert!(world.bouquet_now(bouquet.bouquet_id).await.photo.is_none());
    assert_eq!(photo_events(&world.events().await), 0);
    // A new upload while suspended is refused before this use case runs: the pipeline
    // checks the shop's standing for every route (system test `shops`).
}

/// The shop asks for a proof-of-delivery upload of `order` as `caller`.
async fn delivery_upload(
    world: &World,
    caller: &bouquet_app::domain::identity::Identity,
    order: bouquet_app::domain::OrderId,
) -> Result<bouquet_app::idempotency::Replayable<photos::UploadTicket>, PhotoError> {
    bouquet_app::proof_of_delivery::request_upload(
        &world.app,
        &signer(),
        caller,
        order,
        bouquet_app::domain::photo::ImageType::Png,
        None,
        world.now(),
    )
    .await
}

#[tokio::test]
async fn a_delivery_photo_is_the_shops_private_proof_signed_for_its_readers_and_redacted() {
    use bouquet_app::domain::OrderStatus;
    use bouquet_app::proof_of_delivery::{signed_photo, SIGNED_FOR};
    let world = World::new().await;
    let objects = MemoryObjects::default();
    let vendor = world.vendor().await;
    let shop = shop_caller(vendor.vendor_id);
    let bouquet = world.listed(&vendor, "30.00", None).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world.pay_by_card("ana", order.order_id).await;
    // Paid, not yet on its way: no photo of a delivery yet.
    assert_matches!(
        delivery_upload(&world, &shop, order.order_id).await,
        Err(PhotoError::OrderState(OrderStatus::Paid))
    );
    let paid = world.order_now(order.order_id).await;
    bouquet_app::checkout::fulfil(&world.app.store, &paid, CORRELATION, &|_| None, world.now())
        .await
        .expect("delivered");
    // Another shop may not know the order exists (404); its customer may read it but is not
    // its shop (403).
    let other = world.vendor().await;
    assert_matches!(
        delivery_upload(&world, &shop_caller(other.vendor_id), order.order_id).await,
        Err(PhotoError::OrderNotFound)
    );
    assert_matches!(
        delivery_upload(&world, &customer_caller("ana"), order.order_id).await,
        Err(PhotoError::Forbidden(_))
    );
    let ticket = done(
        delivery_upload(&world, &shop, order.order_id)
            .await
            .expect("the shop may upload"),
    );
    let key = ticket.upload.object_key();
    objects.add_upload(&key, png(800, 600, 7));
    let process = || {
        photos::process_upload(
            &world.app,
            &objects,
            &ImageRenderer,
            &key,
            CORRELATION,
            world.now(),
        )
    };
    assert_matches!(process().await, Ok(Processed::Shown(_)));
    assert_matches!(process().await, Ok(Processed::Duplicate));

    // Its sizes are private keys under the order: nothing went to the public photo bucket.
    assert_eq!(objects.variant_count(), 0);
    let shown = world.order_now(order.order_id).await;
    let photo = shown.delivery_photo.clone().expect("the order carries it");
    assert_eq!(photo.upload_id, ticket.upload.upload_id);
    for size in &photo.variants {
        assert!(
            size.path
                .starts_with(&format!("delivered/{}/", order.order_id)),
            "{}",
            size.path
        );
        assert!(objects.has_upload(&size.path), "{} stored", size.path);
    }
    let signed = signed_photo(&signer(), &shown, world.now())
        .await
        .unwrap()
        .expect("signed for its readers");
    let largest = photo.variants.last().unwrap();
    assert!(signed.url.contains(&largest.path), "{}", signed.url);
    assert!(signed.url.contains("X-Amz-Expires=900"), "{}", signed.url);
    assert!(signed.url.contains("X-Amz-Signature="), "{}", signed.url);
    assert_eq!(signed.expires_at, world.now().plus(SIGNED_FOR));
    assert_eq!(
        (signed.width, signed.height),
        (largest.width, largest.height)
    );
    let attached = count_named(&world.events().await, "OrderDeliveryPhotoAttached");
    assert_eq!(attached, 1, "one event, the redelivery none");

    // Personal data: the customer's erasure redacts it with the delivery details, after
    // which nothing can be signed, and no new photo is taken.
    bouquet_app::erasure::erase(
        &world.app,
        &customer_caller("ana"),
        CORRELATION,
        world.now(),
    )
    .await
    .expect("erased");
    let erased = world.order_now(order.order_id).await;
    assert!(erased.delivery_photo.is_none());
    assert!(signed_photo(&signer(), &erased, world.now())
        .await
        .unwrap()
        .is_none());
    assert_matches!(
        delivery_upload(&world, &shop, order.order_id).await,
        Err(PhotoError::OrderState(OrderStatus::Fulfilled))
    );
}

/// The photo queue's messages as S3 sends them: each created key processed (URL-decoded),
/// S3's test event and other events ignored, a body that is no notification an error.
#[tokio::test]
async fn an_s3_notification_processes_each_created_key_and_ignores_the_rest() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let objects = MemoryObjects::default();
    let upload = uploaded(&world, &bouquet, &objects, png(320, 240, 7)).await;
    let notification = |event: &str, key: &str| {
        serde_json::json!({ "Records": [{ "eventName": event, "s3": { "object": { "key": key } } }] })
            .to_string()
    };
    let receive = |body: String| {
        let (world, objects) = (&world, &objects);
        async move {
            photos::receive_notification(&world.app, objects, &ImageRenderer, &body, CORRELATION)
                .await
        }
    };
    assert_eq!(
        receive(notification("ObjectRemoved:Delete", &upload.object_key()))
            .await
            .unwrap(),
        vec![photos::Received::Ignored]
    );
    assert_eq!(
        receive(r#"{"Event":"s3:TestEvent"}"#.to_owned())
            .await
            .unwrap(),
        vec![photos::Received::Ignored]
    );
    let shown = receive(notification("ObjectCreated:Post", &upload.object_key()))
        .await
        .unwrap();
    assert!(
        matches!(
            shown[..],
            [photos::Received::Processed(Processed::Shown(_))]
        ),
        "{shown:?}"
    );
    assert!(matches!(
        receive("{not json".to_owned()).await,
        Err(PhotoError::NotANotification(_))
    ));
}
