use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::json;

use bouquet_app::domain::channels::{Refusal, Viewer};
use bouquet_app::live::{self, LiveError};
use bouquet_app::realtime::{PushError, Pusher};

use crate::support::*;

/// Records what it is asked to push; connections named `gone-...` answer 410.
#[derive(Default)]
struct Recorder {
    frames: Mutex<HashMap<String, Vec<serde_json::Value>>>,
}

impl Pusher for Recorder {
    fn post<'a>(
        &'a self,
        connection_id: &'a str,
        frame: &'a [u8],
    ) -> BoxFuture<'a, Result<(), PushError>> {
        Box::pin(async move {
            if connection_id.starts_with("gone-") {
                return Err(PushError::Gone(connection_id.to_owned()));
            }
            let frame = serde_json::from_slice(frame).expect("frames are JSON");
            self.frames
                .lock()
                .unwrap()
                .entry(connection_id.to_owned())
                .or_default()
                .push(frame);
            Ok(())
        })
    }
}

#[tokio::test]
async fn a_viewer_subscribes_to_what_it_may_read_and_is_refused_the_rest() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    live::connect(&world.app, "c-1", &Viewer::Anonymous, world.now())
        .await
        .unwrap();
    let requested: Vec<String> = [
        "catalogue",
        "orders",
        &format!("vendor:{}", vendor.vendor_id),
        "nonsense:1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let outcome = live::subscribe(
        &world.app,
        "c-1",
        &Viewer::Anonymous,
        &requested,
        None,
        world.now(),
    )
    .await
    .unwrap();
    assert_eq!(outcome.subscribed, vec!["catalogue".to_owned()]);
    let refused: Vec<_> = outcome
        .refused
        .iter()
        .map(|(c, r)| (c.as_str(), *r))
        .collect();
    assert_eq!(
        refused,
        vec![
            ("orders", Refusal::Forbidden),
            (requested[2].as_str(), Refusal::Forbidden),
            ("nonsense:1", Refusal::Invalid)
        ]
    );
    // A connection that is gone cannot subscribe.
    live::disconnect(&world.app, "c-1").await.unwrap();
    let gone = live::subscribe(
        &world.app,
        "c-1",
        &Viewer::Anonymous,
        &requested[..1],
        None,
        world.now(),
    )
    .await;
    assert!(matches!(gone, Err(LiveError::ConnectionGone)), "{gone:?}");
}

#[tokio::test]
async fn a_broadcast_reaches_each_subscriber_once_and_removes_gone_connections() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let catalogue = vec!["catalogue".to_owned()];
    let both = vec![
        "catalogue".to_owned(),
        format!("bouquet:{}", bouquet.bouquet_id),
    ];
    for (connection, channels) in [("c-a", &catalogue), ("c-b", &both), ("gone-c", &catalogue)] {
        live::connect(&world.app, connection, &Viewer::Anonymous, world.now())
            .await
            .unwrap();
        live::subscribe(
            &world.app,
            connection,
            &Viewer::Anonymous,
            channels,
            None,
            world.now(),
        )
        .await
        .unwrap();
    }
    let pusher = Recorder::default();
    let detail = json!({ "eventId": "e-1", "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id, "freshness": 80 } });
    let report = live::broadcast(&world.app, &pusher, "BouquetFreshnessChanged", &detail)
        .await
        .unwrap();
    // catalogue: a, b, gone; bouquet: b. Three delivered, one gone.
    assert_eq!(
        (report.frames, report.delivered, report.gone, report.failed),
        (4, 3, 1, 0),
        "{report:?}"
    );
    let frames = pusher.frames.lock().unwrap().clone();
    assert_eq!(frames["c-a"].len(), 1);
    assert_eq!(frames["c-b"].len(), 2, "one frame per channel subscribed");
    // The gone connection was removed: the next broadcast does not try it.
    let again = live::broadcast(&world.app, &pusher, "BouquetFreshnessChanged", &detail)
        .await
        .unwrap();
    assert_eq!((again.frames, again.gone), (3, 0), "{again:?}");
    // An event no channel carries goes nowhere.
    let nowhere = live::broadcast(&world.app, &pusher, "SomethingElse", &detail)
        .await
        .unwrap();
    assert_eq!((nowhere.channels, nowhere.frames), (0, 0));
}

#[tokio::test]
async fn every_role_connects_subscribes_is_refused_cleanly_and_leaves_nothing_behind() {
    let world = World::new().await;
    let (mine, theirs) = (world.vendor().await, world.vendor().await);
    let viewers = [
        ("c-anon", Viewer::Anonymous),
        ("c-customer", Viewer::Customer(customer("ana"))),
        ("c-vendor", Viewer::Vendor(mine.vendor_id)),
        ("c-admin", Viewer::Admin),
    ];
    let others_channel = vec![format!("vendor:{}", theirs.vendor_id)];
    for (connection, viewer) in &viewers {
        live::connect(&world.app, connection, viewer, world.now())
            .await
            .unwrap();
        let channels = ["catalogue".to_owned()];
        live::subscribe(&world.app, connection, viewer, &channels, None, world.now())
            .await
            .unwrap();
        // Another vendor's channel: `auth.forbidden` for every role, never an error.
        let outcome = live::subscribe(
            &world.app,
            connection,
            viewer,
            &others_channel,
            None,
            world.now(),
        )
        .await
        .unwrap_or_else(|error| panic!("{viewer:?}: {error:?}"));
        assert_eq!(
            outcome.refused,
            vec![(others_channel[0].clone(), Refusal::Forbidden)],
            "{viewer:?}"
        );
        live::disconnect(&world.app, connection)
            .await
            .unwrap_or_else(|error| panic!("{viewer:?}: {error:?}"));
        assert!(
            world
                .app
                .store
                .connection(connection)
                .await
                .unwrap()
                .is_none(),
            "{viewer:?}"
        );
    }
    let catalogue = bouquet_app::domain::channels::Channel::Catalogue;
    let left = world
        .app
        .store
        .subscribers(&catalogue, world.now())
        .await
        .unwrap();
    assert!(left.is_empty(), "subscriptions left behind: {left:?}");
}

#[tokio::test]
async fn a_subscription_past_its_expiry_is_never_pushed_to() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    live::connect(&world.app, "c-old", &Viewer::Anonymous, world.now())
        .await
        .unwrap();
    let catalogue = vec!["catalogue".to_owned()];
    live::subscribe(
        &world.app,
        "c-old",
        &Viewer::Anonymous,
        &catalogue,
        None,
        world.now(),
    )
    .await
    .unwrap();
    let detail = json!({ "eventId": "e-1", "data": { "vendorId": vendor.vendor_id } });
    let pusher = Recorder::default();
    let fresh = live::broadcast(&world.app, &pusher, "BouquetListed", &detail)
        .await
        .unwrap();
    assert_eq!(fresh.delivered, 1, "{fresh:?}");
    // Past `expiresAt`, whenever DynamoDB's TTL gets round to deleting the item.
    world.advance(bouquet_app::store::CONNECTION_RETENTION + std::time::Duration::from_secs(1));
    let stale = live::broadcast(&world.app, &pusher, "BouquetListed", &detail)
        .await
        .unwrap();
    assert_eq!((stale.frames, stale.delivered), (0, 0), "{stale:?}");
}

#[tokio::test]
async fn a_private_channel_stops_at_the_tokens_expiry_and_a_public_one_goes_on() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let ana = Viewer::Customer(customer("ana"));
    live::connect(&world.app, "c-ana", &ana, world.now())
        .await
        .unwrap();
    let channels = vec!["orders".to_owned(), "catalogue".to_owned()];
    let token_expires = world.now().plus(std::time::Duration::from_secs(60));
    live::subscribe(
        &world.app,
        "c-ana",
        &ana,
        &channels,
        Some(token_expires),
        world.now(),
    )
    .await
    .unwrap();
    let detail = json!({ "eventId": "e-1", "aggregateId": "o", "data": { "customerId": "ana", "vendorId": vendor.vendor_id, "bouquetIds": [] } });
    let pusher = Recorder::default();
    let before = live::broadcast(&world.app, &pusher, "OrderPaid", &detail)
        .await
        .unwrap();
    assert_eq!(before.delivered, 2, "orders and catalogue: {before:?}");
    world.advance(std::time::Duration::from_secs(61));
    let after = live::broadcast(&world.app, &pusher, "OrderPaid", &detail)
        .await
        .unwrap();
    assert_eq!(after.delivered, 1, "the catalogue only: {after:?}");
    let frames = pusher.frames.lock().unwrap().clone();
    let channels: Vec<_> = frames["c-ana"]
        .iter()
        .map(|f| f["channel"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        channels.iter().filter(|c| *c == "orders").count(),
        1,
        "{channels:?}"
    );
}

#[test]
fn the_authorizers_context_carries_the_tokens_expiry_to_every_message() {
    let vendor = bouquet_app::domain::VendorId::generate();
    for viewer in [
        Viewer::Customer(customer("ana")),
        Viewer::Vendor(vendor),
        Viewer::Admin,
    ] {
        let context: HashMap<String, serde_json::Value> =
            live::context_of(&viewer, Some("1796228271"))
                .into_iter()
                .collect();
        assert_eq!(live::viewer_of(&context), viewer);
        assert_eq!(
            live::token_expiry_of(&context),
            Some(bouquet_app::domain::Timestamp::from_millis(
                1_796_228_271_000
            ))
        );
    }
    let anonymous: HashMap<String, serde_json::Value> =
        live::context_of(&Viewer::Anonymous, Some("1796228271"))
            .into_iter()
            .collect();
    assert_eq!(
        live::token_expiry_of(&anonymous),
        None,
        "no token, no expiry"
    );
}
