//! The event catalogue's JSON Schemas (`infra/events/`) against what the system writes.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{json, Value};

use bouquet_app::domain::events::EventData;
use bouquet_app::domain::Clock;
use system_tests::vases::{heartbeat, reading};
use system_tests::{
    by_customer, by_vendor, fixture, repository_root, ApiRequest, PathParams, TestCloud,
};

fn schemas() -> HashMap<String, Value> {
    std::fs::read_dir(repository_root().join("infra/events"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            let name = e.path().file_stem().unwrap().to_string_lossy().into_owned();
            (
                name,
                serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_event_has_a_schema_and_every_schema_an_event() {
    let files: BTreeSet<String> = schemas().into_keys().collect();
    let names: BTreeSet<String> = EventData::NAMES.iter().map(|n| n.to_string()).collect();
    assert_eq!(files, names);
}

#[tokio::test]
async fn every_detail_the_system_writes_validates_against_its_schema() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let [a, b, c, d] = cloud
        .bouquets(&vendor, ["10.00", "12.50", "3.00", "4.00"])
        .await;
    let patch = ApiRequest::fixture("update-bouquet")
        .vendor(&vendor)
        .bouquet_id(&a)
        .header("if-match", "\"1\"");
    assert_eq!(cloud.call("update-bouquet", patch).await.status, 200);
    assert_eq!(
        cloud
            .send(by_vendor("withdraw-bouquet", &vendor).bouquet_id(&d))
            .await
            .status,
        200
    );
    let paid = cloud.reserved_order_id("customer-1", &[&a]).await;
    assert_eq!(cloud.pay_by_card("customer-1", &paid).await.status, 200);
    for step in ["accept-order", "dispatch-order", "fulfil-order"] {
        assert_eq!(
            cloud
                .send(by_vendor(step, &vendor).order_id(&paid))
                .await
                .status,
            200,
            "{step}"
        );
    }
    // The delivered order reviewed (its route), edited, answered and hidden (the use cases:
    // their routes come next).
    let reviewed = cloud
        .send(
            by_customer("create-review", "customer-1")
                .order_id(&paid)
                .json(json!({ "stars": 3, "text": "Pretty" })),
        )
        .await;
    assert_eq!(reviewed.status, 201, "{}", reviewed.body);
    let order_id = bouquet_app::domain::OrderId::parse(&paid).unwrap();
    let now = bouquet_app::domain::Clock::now(cloud.clock.as_ref());
    let identity = |subject: &str, role, vendor_id| bouquet_app::domain::identity::Identity {
        subject: bouquet_app::domain::CustomerId::parse(subject).unwrap(),
        role,
        vendor_id,
        email: None,
    };
    use bouquet_app::domain::identity::Role;
    let shop = bouquet_app::domain::VendorId::parse(&vendor).ok();
    let draft = bouquet_app::domain::review::ReviewDraft {
        stars: Some(4),
        text: None,
    };
    bouquet_app::reviews::edit(
        &cloud.app,
        &identity("customer-1", Role::Customer, None),
        order_id,
        &draft,
        "schemas",
        now,
    )
    .await
    .unwrap();
    bouquet_app::reviews::answer(
        &cloud.app,
        &identity("florist", Role::Vendor, shop),
        order_id,
        "Thank you!",
        "schemas",
        now,
    )
    .await
    .unwrap();
    bouquet_app::reviews::hide(
        &cloud.app,
        &identity("ada", Role::Admin, None),
        order_id,
        "Test",
        "schemas",
        now,
    )
    .await
    .unwrap();
    // The rating projector, given the review as EventBridge delivers it, moves the rating.
    let written = serde_json::json!({
        "detail-type": "ReviewWritten",
        "detail": {"eventId": ulid::Ulid::new().to_string(), "data": {"orderId": order_id, "vendorId": vendor, "stars": 5}},
    });
    assert!(bouquet_app::reviews::project_rating(&cloud.app, &written)
        .await
        .unwrap());
    let settings = cloud
        .send(fixture("put-delivery-settings").own_shop(&vendor))
        .await;
    assert_eq!(settings.status, 200, "{}", settings.body);
    let rejected_bouquet = cloud.bouquet(&vendor, "7.00").await;
    let rejected = cloud
        .reserved_order_id("customer-4", &[&rejected_bouquet])
        .await;
    assert_eq!(cloud.pay_by_card("customer-4", &rejected).await.status, 200);
    let answer = cloud
        .send(by_vendor("reject-order", &vendor).order_id(&rejected))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body["refundedAt"].is_string(), "{}", answer.body);
    let cancelled = cloud.reserved_order_id("customer-2", &[&b]).await;
    assert_eq!(
        cloud
            .send(by_customer("cancel-order", "customer-2").order_id(&cancelled))
            .await
            .status,
        200
    );
    assert_eq!(cloud.reserve("customer-3", &[&c]).await.status, 201);
    cloud.clock.advance(Duration::from_secs(16 * 60));
    assert_eq!(
        cloud.run_scheduled("expire-reservations").await["expired"],
        1
    );
    // Vases: registered, online, a reading that scores its bouquet, silent for two hours.
    let vase = cloud.vase(&vendor).await;
    cloud.bouquet_in_vase(&vendor, &vase).await;
    let now = cloud.clock.now();
    // The shop turns its markdown rule on (its example: 10 % below 80, 25 % below 60).
    let rules = cloud
        .send(by_vendor("put-vase-rules", &vendor).path("vendorId", &vendor))
        .await;
    assert_eq!(rules.status, 200, "{}", rules.body);
    let minute = |m: u32| now.plus(Duration::from_secs(60) * m);
    // Full and cool, then dry and hot: marked down, two care alerts.
    cloud
        .send_vase_messages(&[
            heartbeat(&vase, now),
            reading(&vase, now, 50.0, 18.0),
            reading(&vase, minute(1), 10.0, 30.0),
        ])
        .await;
    let alerts = cloud
        .send(by_vendor("list-vase-alerts", &vendor).path("vendorId", &vendor))
        .await;
    let alert_id = alerts.body["items"][0]["alertId"]
        .as_str()
        .expect("an alert")
        .to_owned();
    let acknowledged = cloud
        .send(
            by_vendor("acknowledge-vase-alert", &vendor)
                .path("vendorId", &vendor)
                .path("alertId", &alert_id),
        )
        .await;
    assert_eq!(acknowledged.status, 200, "{}", acknowledged.body);
    // Refilled and cooled for the clear time: both close.
    cloud
        .send_vase_messages(&[
            reading(&vase, minute(2), 80.0, 18.0),
            reading(&vase, minute(13), 80.0, 18.0),
        ])
        .await;
    let later = cloud.app_at(now.plus(Duration::from_secs(2 * 60 * 60)));
    assert_eq!(
        cloud.run_scheduled_with("flag-offline-vases", later).await["wentOffline"],
        1
    );
    // A week on, dry and hot: past its best, off the storefront.
    cloud
        .send_vase_messages(&[reading(&vase, minute(7 * 24 * 60), 0.0, 40.0)])
        .await;
    // Another vase: its certificate rotated, then decommissioned.
    let spare = cloud.vase(&vendor).await;
    for (binary, status) in [("rotate-vase-certificate", 200), ("decommission-vase", 204)] {
        let response = cloud
            .send(by_vendor(binary, &vendor).path("vaseId", &spare))
            .await;
        assert_eq!(response.status, status, "{binary}: {}", response.body);
    }

    // A photo: the upload through the test's buckets, processed by the photo function.
    cloud.photos().await;
    let functions = cloud.in_process(cloud.app.clone());
    let ticket = cloud
        .send(
            by_vendor("request-photo-upload", &vendor)
                .bouquet_id(&a)
                .json(serde_json::json!({ "contentType": "image/png" })),
        )
        .await;
    let key = ticket.body["fields"]["key"].as_str().unwrap().to_owned();
    let mut png = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut png),
        &[90u8; 300],
        10,
        10,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
    let png_again = png.clone();
    cloud
        .s3
        .put_object()
        .bucket(&cloud.photo_buckets.uploads)
        .key(&key)
        .body(aws_sdk_s3::primitives::ByteStream::from(png.clone()))
        .send()
        .await
        .unwrap();
    let processed = bouquet_app::photos::process_upload(
        &cloud.app,
        functions.photo_objects.as_ref(),
        &bouquet_photos::render::ImageRenderer,
        &key,
        "event-schemas",
        cloud.app.clock.now(),
    )
    .await
    .unwrap();
    assert!(
        matches!(processed, bouquet_app::photos::Processed::Shown(_)),
        "{processed:?}"
    );
    // The delivered order's proof of delivery, the same way.
    let delivery = cloud
        .send(
            by_vendor("request-delivery-photo-upload", &vendor)
                .order_id(&paid)
                .json(serde_json::json!({ "contentType": "image/png" })),
        )
        .await;
    assert_eq!(delivery.status, 201, "{}", delivery.body);
    let delivery_key = delivery.body["fields"]["key"].as_str().unwrap().to_owned();
    cloud
        .s3
        .put_object()
        .bucket(&cloud.photo_buckets.uploads)
        .key(&delivery_key)
        .body(aws_sdk_s3::primitives::ByteStream::from(png_again))
        .send()
        .await
        .unwrap();
    let attached = bouquet_app::photos::process_upload(
        &cloud.app,
        functions.photo_objects.as_ref(),
        &bouquet_photos::render::ImageRenderer,
        &delivery_key,
        "event-schemas",
        cloud.app.clock.now(),
    )
    .await
    .unwrap();
    assert!(
        matches!(attached, bouquet_app::photos::Processed::Shown(_)),
        "{attached:?}"
    );

    // The shop's commission set, then back to the marketplace's (a null in the detail);
    // the shop suspended and reinstated.
    for basis_points in [json!(1200), Value::Null] {
        let request = fixture("set-vendor-commission")
            .admin()
            .vendor_id(&vendor)
            .json(json!({ "basisPoints": basis_points }));
        assert_eq!(cloud.send(request).await.status, 200);
    }
    for binary in ["suspend-vendor", "reinstate-vendor"] {
        let response = cloud.send(fixture(binary).admin().vendor_id(&vendor)).await;
        assert_eq!(response.status, 200, "{binary}: {}", response.body);
    }

    let schemas = schemas();
    let mut seen = BTreeSet::new();
    for item in cloud.items_of("event").await {
        let name = item["eventName"].as_s().unwrap().clone();
        let detail: Value = serde_json::from_str(item["detail"].as_s().unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schemas[&name]).expect("a valid schema");
        let errors: Vec<String> = validator
            .iter_errors(&detail)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?} in {detail}");
        // Not vacuous: the same detail without a field of its data is refused.
        let mut broken = detail.clone();
        let first = broken["data"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        broken["data"].as_object_mut().unwrap().remove(&first);
        assert!(
            !validator.is_valid(&broken),
            "{name} accepts a detail without {first}"
        );
        seen.insert(name);
    }
    let all: BTreeSet<String> = EventData::NAMES.iter().map(|n| n.to_string()).collect();
    assert_eq!(seen, all, "the flow emits every event of the catalogue");
}
