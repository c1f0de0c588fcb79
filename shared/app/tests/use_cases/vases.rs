use std::time::Duration;

use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::vase::Connection;
use bouquet_app::domain::{Reading, VaseMessage};
use bouquet_app::vases::{self, Applied};
use bouquet_app::Config;

use crate::support::*;

fn heartbeat(
    vase_id: bouquet_app::domain::VaseId,
    sent_minutes: u64,
    world: &World,
) -> VaseMessage {
    VaseMessage::Heartbeat {
        vase_id,
        sent_at: T0.plus(Duration::from_secs(sent_minutes * 60)),
        received_at: world.now(),
    }
}

/// A reading sent now with the water at 20 % (a score of 85).
fn low_water(vase_id: bouquet_app::domain::VaseId, world: &World) -> VaseMessage {
    VaseMessage::Telemetry {
        vase_id,
        reading: Reading {
            sent_at: world.now(),
            water_level_pct: 20.0,
            temperature_c: 18.0,
            humidity_pct: 60.0,
            light_lux: 500.0,
        },
        received_at: world.now(),
    }
}

/// The vase `message` applied, as its queue's consumer applies it.
async fn apply(world: &World, message: &VaseMessage) -> Applied {
    vases::apply(&world.app, message, CORRELATION)
        .await
        .unwrap()
}

/// A [`low_water`] reading of `vase_id` applied: it scores `bouquet_id` 85, with a
/// `BouquetFreshnessChanged` if `announced`. Returns the reading.
async fn low_water_scores(
    world: &World,
    vase_id: bouquet_app::domain::VaseId,
    bouquet_id: bouquet_app::domain::BouquetId,
    announced: bool,
) -> VaseMessage {
    let reading = low_water(vase_id, world);
    assert_eq!(
        apply(world, &reading).await,
        Applied::LatestReading {
            freshness_event: announced
        }
    );
    assert_eq!(world.bouquet_now(bouquet_id).await.freshness, Some(85));
    reading
}

#[tokio::test]
async fn heartbeats_bring_a_vase_online_and_never_move_it_backwards() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let id = vase.vase_id;
    // In this order; the late and the duplicated heartbeats change nothing.
    for (sent_minute, expected) in [
        (2, Applied::CameOnline),
        (3, Applied::Heartbeat),
        (1, Applied::StaleHeartbeat),
        (3, Applied::StaleHeartbeat),
    ] {
        assert_eq!(
            apply(&world, &heartbeat(id, sent_minute, &world)).await,
            expected,
            "the heartbeat sent at minute {sent_minute}"
        );
    }
    let now = world.vase_now(id).await;
    assert_eq!(
        now.last_heartbeat_at,
        Some(T0.plus(Duration::from_secs(180)))
    );
    assert_eq!(now.connection, Connection::Online);
}

#[tokio::test]
async fn a_reading_scores_the_bouquet_in_the_vase_once() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let vase_text = vase.vase_id.to_string();
    let new = NewBouquet::validate("Tulips", None, ("20.00", "EUR"), Some(&vase_text)).unwrap();
    let bouquet = match world.list_bouquet(vendor.vendor_id, new).await.unwrap() {
        bouquet_app::Replayable::Done(b) => b,
        other => panic!("{other:?}"),
    };
    let reading = low_water_scores(&world, vase.vase_id, bouquet.bouquet_id, true).await;
    // The same reading redelivered (at-least-once queues): nothing changes.
    assert_eq!(apply(&world, &reading).await, Applied::DuplicateReading);
}

/// Issue 38: a suspended shop's bouquet keeps its score, but no `BouquetFreshnessChanged`
/// goes out on the public channels for it.
#[tokio::test]
async fn a_suspended_shops_bouquet_is_scored_without_an_announcement() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let bouquet = world.listed(&vendor, "20.00", Some(vase.vase_id)).await;
    bouquet_app::shops::suspend(
        &world.app,
        &admin_caller(),
        vendor.vendor_id,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("an administrator suspends");
    low_water_scores(&world, vase.vase_id, bouquet.bouquet_id, false).await;
    assert!(!world
        .events()
        .await
        .iter()
        .any(|(name, _)| name == "BouquetFreshnessChanged"));
}

#[tokio::test]
async fn a_silent_vase_is_taken_offline_once() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let (quiet, chatty) = (world.vase_of(&vendor).await, world.vase_of(&vendor).await);
    for vase in [&quiet, &chatty] {
        apply(&world, &heartbeat(vase.vase_id, 0, &world)).await;
    }
    let offline_after = Config::default().offline_after;
    world.advance(offline_after - Duration::from_secs(60));
    apply(
        &world,
        &VaseMessage::Heartbeat {
            vase_id: chatty.vase_id,
            sent_at: world.now(),
            received_at: world.now(),
        },
    )
    .await;
    world.advance(Duration::from_secs(120));
    let report = vases::sweep_offline(&world.app, world.now(), offline_after, CORRELATION)
        .await
        .unwrap();
    assert_eq!((report.went_offline, report.failed), (1, 0), "{report:?}");
    assert_eq!(
        world.vase_now(quiet.vase_id).await.connection,
        Connection::Offline
    );
    assert_eq!(
        world.vase_now(chatty.vase_id).await.connection,
        Connection::Online
    );
    let again = vases::sweep_offline(&world.app, world.now(), offline_after, CORRELATION)
        .await
        .unwrap();
    assert_eq!(again.went_offline, 0, "{again:?}");
}

#[tokio::test]
async fn a_queued_message_is_applied_or_said_to_be_one_that_never_will() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let body = |vase_id: &str| {
        serde_json::json!({
            "vaseId": vase_id,
            "messageType": "heartbeat",
            "sentAt": "2026-12-02T16:16:51Z",
            "receivedAt": world.now().as_millis(),
        })
        .to_string()
    };
    let known = body(&vase.vase_id.to_string());
    assert_eq!(vases::vase_of(&known), Some(vase.vase_id));
    assert_eq!(
        vases::receive(&world.app, &known, CORRELATION)
            .await
            .unwrap(),
        Applied::CameOnline
    );
    // Malformed, or for a vase nobody registered: parked at once, never retried.
    let malformed = vases::receive(&world.app, "{not json", CORRELATION)
        .await
        .unwrap_err();
    assert!(
        matches!(malformed, vases::VaseError::Malformed(_)) && malformed.is_permanent(),
        "{malformed:?}"
    );
    assert_eq!(vases::vase_of("{not json"), None);
    let stranger = bouquet_app::domain::VaseId::generate();
    let unknown = vases::receive(&world.app, &body(&stranger.to_string()), CORRELATION)
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, vases::VaseError::UnknownVase(id) if id == stranger)
            && unknown.is_permanent(),
        "{unknown:?}"
    );
}
