use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::json;

use bouquet_app::domain::channels::{Refusal, Viewer};
use bouquet_app::live::{self, LiveError, PushUnit, Work};
use bouquet_app::realtime::{PushError, Pusher, QueueError, WorkQueue};

use crate::support::*;
use bouquet_app::Config;

/// The fan-out queue in memory: what the planner sent (now and later), what the workers
/// parked.
#[derive(Default)]
struct MemoryQueue {
    sent: Mutex<Vec<String>>,
    later: Mutex<Vec<(String, std::time::Duration)>>,
    parked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl WorkQueue for MemoryQueue {
    async fn send(&self, bodies: &[String]) -> Result<(), QueueError> {
        self.sent.lock().unwrap().extend_from_slice(bodies);
        Ok(())
    }

    async fn park(&self, bodies: &[String]) -> Result<(), QueueError> {
        self.parked.lock().unwrap().extend_from_slice(bodies);
        Ok(())
    }

    async fn send_later(&self, body: &str, delay: std::time::Duration) -> Result<(), QueueError> {
        self.later.lock().unwrap().push((body.to_owned(), delay));
        Ok(())
    }
}

impl MemoryQueue {
    /// The units sent, taken off the queue as a batch of messages.
    fn take(&self) -> Vec<(String, PushUnit)> {
        std::mem::take(&mut *self.sent.lock().unwrap())
            .iter()
            .enumerate()
            .map(|(i, body)| (format!("m-{i}"), serde_json::from_str(body).unwrap()))
            .collect()
    }

    /// The same as work for the workers.
    fn take_work(&self) -> Vec<(String, Work)> {
        self.take()
            .into_iter()
            .map(|(id, unit)| (id, Work::Push(unit)))
            .collect()
    }
}

fn as_work(units: Vec<(String, PushUnit)>) -> Vec<(String, Work)> {
    units
        .into_iter()
        .map(|(id, unit)| (id, Work::Push(unit)))
        .collect()
}

/// What a broadcast came to once the planner ran and the workers took its units as one batch.
#[derive(Debug, Default, PartialEq, Eq)]
struct Totals {
    channels: usize,
    queued: usize,
    frames: usize,
    delivered: usize,
    gone: usize,
    failed: usize,
}

async fn broadcast(
    world: &World,
    pusher: &dyn Pusher,
    name: &str,
    detail: &serde_json::Value,
) -> Totals {
    let queue = MemoryQueue::default();
    let planned = live::broadcast(&world.app, pusher, &queue, name, detail)
        .await
        .unwrap();
    let worked = live::fan_out(&world.app, pusher, &queue, queue.take_work()).await;
    assert!(worked.retried.is_empty(), "{worked:?}");
    Totals {
        channels: planned.channels,
        queued: planned.queued,
        frames: planned.private.frames + worked.pushes.frames,
        delivered: planned.private.delivered + worked.pushes.delivered,
        gone: planned.private.gone + worked.pushes.gone,
        failed: planned.private.failed + worked.pushes.failed,
    }
}

/// `viewer` opens `connection` now, counted against `limit` if one is given.
async fn connect(
    world: &World,
    connection: &str,
    viewer: &Viewer,
    limit: Option<&live::ConnectionLimit>,
) -> live::Admitted {
    live::connect(&world.app, connection, viewer, limit, world.now())
        .await
        .unwrap()
}

/// `viewer` asks `connection` for `channels` now, with a token that never expires.
async fn subscribe(
    world: &World,
    connection: &str,
    viewer: &Viewer,
    channels: &[String],
) -> Result<live::Subscription, LiveError> {
    live::subscribe(&world.app, connection, viewer, channels, None, world.now()).await
}

/// `viewer` opens `connection` and subscribes it to `channels`.
async fn watching(world: &World, connection: &str, viewer: &Viewer, channels: &[&str]) {
    connect(world, connection, viewer, None).await;
    let channels: Vec<String> = channels.iter().map(|c| c.to_string()).collect();
    subscribe(world, connection, viewer, &channels)
        .await
        .unwrap();
}

/// Records what it is asked to push; connections named `gone-...` answer 410.
#[derive(Default)]
struct Recorder {
    frames: Mutex<HashMap<String, Vec<serde_json::Value>>>,
}

#[async_trait::async_trait]
impl Pusher for Recorder {
    async fn post(&self, connection_id: &str, frame: &[u8]) -> Result<(), PushError> {
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
    }
}

#[tokio::test]
async fn a_viewer_subscribes_to_what_it_may_read_and_is_refused_the_rest() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    connect(&world, "c-1", &Viewer::Anonymous, None).await;
    let requested: Vec<String> = [
        "catalogue",
        "orders",
        &format!("vendor:{}", vendor.vendor_id),
        "nonsense:1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let outcome = subscribe(&world, "c-1", &Viewer::Anonymous, &requested)
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
    let gone = subscribe(&world, "c-1", &Viewer::Anonymous, &requested[..1]).await;
    assert_matches!(gone, Err(LiveError::ConnectionGone));
}

#[tokio::test]
async fn a_broadcast_reaches_each_subscriber_once_and_removes_gone_connections() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let bouquet_channel = format!("bouquet:{}", bouquet.bouquet_id);
    let catalogue: &[&str] = &["catalogue"];
    let both: &[&str] = &["catalogue", &bouquet_channel];
    for (connection, channels) in [("c-a", catalogue), ("c-b", both), ("gone-c", catalogue)] {
        watching(&world, connection, &Viewer::Anonymous, channels).await;
    }
    let pusher = Recorder::default();
    let detail = json!({ "eventId": "e-1", "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id, "freshness": 80 } });
    let report = broadcast(&world, &pusher, "BouquetFreshnessChanged", &detail).await;
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
    let again = broadcast(&world, &pusher, "BouquetFreshnessChanged", &detail).await;
    assert_eq!((again.frames, again.gone), (3, 0), "{again:?}");
    // An event no channel carries goes nowhere.
    let nowhere = broadcast(&world, &pusher, "SomethingElse", &detail).await;
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
        watching(&world, connection, viewer, &["catalogue"]).await;
        // Another vendor's channel: `auth.forbidden` for every role, never an error.
        let outcome = subscribe(&world, connection, viewer, &others_channel)
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
    watching(&world, "c-old", &Viewer::Anonymous, &["catalogue"]).await;
    let detail = json!({ "eventId": "e-1", "data": { "vendorId": vendor.vendor_id } });
    let pusher = Recorder::default();
    let fresh = broadcast(&world, &pusher, "BouquetListed", &detail).await;
    assert_eq!(fresh.delivered, 1, "{fresh:?}");
    // Past `expiresAt`, whenever DynamoDB's TTL gets round to deleting the item.
    world.advance(bouquet_app::store::CONNECTION_RETENTION + std::time::Duration::from_secs(1));
    let stale = broadcast(&world, &pusher, "BouquetListed", &detail).await;
    assert_eq!((stale.frames, stale.delivered), (0, 0), "{stale:?}");
}

#[tokio::test]
async fn a_private_channel_stops_at_the_tokens_expiry_and_a_public_one_goes_on() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let ana = Viewer::Customer(customer("ana"));
    connect(&world, "c-ana", &ana, None).await;
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
    let before = broadcast(&world, &pusher, "OrderPaid", &detail).await;
    assert_eq!(before.delivered, 2, "orders and catalogue: {before:?}");
    world.advance(std::time::Duration::from_secs(61));
    let after = broadcast(&world, &pusher, "OrderPaid", &detail).await;
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
            live::context_of(&viewer, Some("1796228271"), Some("user-7"))
                .into_iter()
                .collect();
        assert_eq!(live::viewer_of(&context), viewer);
        // Signed in, a connection is counted against its user, wherever it comes from.
        let user = context["user"].as_str();
        let limit = live::limit_for(&viewer, user, Some("203.0.113.9"), &Config::default());
        assert_eq!(
            limit,
            Some(live::ConnectionLimit {
                key: "user:user-7".into(),
                cap: Config::default().max_connections_per_user
            })
        );
        assert_eq!(
            live::token_expiry_of(&context),
            Some(bouquet_app::domain::Timestamp::from_millis(
                1_796_228_271_000
            ))
        );
    }
    let anonymous: HashMap<String, serde_json::Value> =
        live::context_of(&Viewer::Anonymous, Some("1796228271"), Some("user-7"))
            .into_iter()
            .collect();
    assert_eq!(
        live::token_expiry_of(&anonymous),
        None,
        "no token, no expiry"
    );
    assert!(!anonymous.contains_key("user"));
    assert_eq!(
        live::limit_for(
            &Viewer::Anonymous,
            None,
            Some("203.0.113.9"),
            &Config::default()
        ),
        Some(live::ConnectionLimit {
            key: "ip:203.0.113.9".into(),
            cap: Config::default().max_connections_per_ip
        }),
        "anonymous: counted against its source IP"
    );
}

/// Answers 429 `throttles` times per connection, then delivers; during an `outage`,
/// connections named `down-...` fail.
#[derive(Default)]
struct Throttling {
    throttles: usize,
    outage: bool,
    tries: Mutex<HashMap<String, usize>>,
    delivered: Mutex<Vec<(String, serde_json::Value)>>,
}

#[async_trait::async_trait]
impl Pusher for Throttling {
    async fn post(&self, connection_id: &str, frame: &[u8]) -> Result<(), PushError> {
        let tries = {
            let mut tries = self.tries.lock().unwrap();
            let n = tries.entry(connection_id.to_owned()).or_default();
            *n += 1;
            *n
        };
        if self.outage && connection_id.starts_with("down-") {
            return Err(PushError::Failed {
                connection: connection_id.to_owned(),
                source: "injected: the endpoint is down".into(),
            });
        }
        if tries <= self.throttles {
            return Err(PushError::Throttled(connection_id.to_owned()));
        }
        self.delivered.lock().unwrap().push((
            connection_id.to_owned(),
            serde_json::from_slice(frame).unwrap(),
        ));
        Ok(())
    }
}

#[tokio::test]
async fn the_planner_queues_a_unit_per_public_shard_and_pushes_private_channels_itself() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let ana = Viewer::Customer(customer("ana"));
    watching(&world, "c-ana", &ana, &["orders"]).await;
    watching(&world, "c-crowd", &Viewer::Anonymous, &["catalogue"]).await;
    let detail = json!({ "eventId": "e-1", "aggregateId": "o-1", "data": { "customerId": "ana", "vendorId": vendor.vendor_id, "bouquetIds": [bouquet.bouquet_id] } });
    let pusher = Throttling::default();
    let queue = MemoryQueue::default();
    let planned = live::broadcast(&world.app, &pusher, &queue, "OrderPaid", &detail)
        .await
        .unwrap();
    // The customer's frame went out before any worker ran; the crowd's waits on the queue.
    let delivered = pusher.delivered.lock().unwrap().clone();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].0, "c-ana");
    assert_eq!(delivered[0].1["event"]["data"]["customerId"], "ana");
    let units = queue.take();
    assert_eq!(planned.queued, units.len());
    let shard =
        bouquet_app::store::placement("c-crowd", bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS);
    assert_eq!(
        units
            .iter()
            .map(|(_, u)| (u.channel.as_str(), u.shard.map(|s| s.index)))
            .collect::<Vec<_>>(),
        [("catalogue", Some(shard))],
        "the catalogue's one occupied shard, of 16; nobody watches the bouquet's channel"
    );
    assert!(units.iter().all(|(_, u)| u.connections.is_empty()
        && u.frames[0].frame["event"].get("aggregateId").is_none()));
    // The public frame carries the bouquet as the storefront shows it: nobody reads it again.
    let shown = &units[0].1.frames[0].frame["event"]["bouquets"];
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "{shown}");
    assert_eq!(shown[0]["bouquetId"], bouquet.bouquet_id.to_string());
    assert_eq!(shown[0]["version"], bouquet.version);
    assert_eq!(shown[0]["status"], "available");
    assert!(
        delivered[0].1["event"].get("bouquets").is_none(),
        "a private frame is the event as it was"
    );
    let worked = live::fan_out(&world.app, &pusher, &queue, as_work(units)).await;
    assert_eq!((worked.pushes.delivered, worked.pushes.failed), (1, 0));
    assert_eq!(pusher.delivered.lock().unwrap()[1].0, "c-crowd");
}

#[tokio::test]
async fn freshness_moves_of_one_bouquet_in_a_batch_reach_the_crowd_as_the_newest_only() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let channel = format!("bouquet:{}", bouquet.bouquet_id);
    watching(&world, "c-1", &Viewer::Anonymous, &[&channel]).await;
    let pusher = Throttling::default();
    let queue = MemoryQueue::default();
    // Three moves and a listing change arrive while the worker is busy: one batch.
    for (version, name, freshness) in [
        (7, "BouquetFreshnessChanged", 80),
        (9, "BouquetFreshnessChanged", 60),
        (10, "BouquetChanged", 60),
        (8, "BouquetFreshnessChanged", 70),
    ] {
        let detail = json!({ "eventId": format!("e-{version}"), "aggregateId": bouquet.bouquet_id, "aggregateVersion": version, "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id, "freshness": freshness } });
        live::broadcast(&world.app, &pusher, &queue, name, &detail)
            .await
            .unwrap();
    }
    let units: Vec<_> = queue
        .take()
        .into_iter()
        .filter(|(_, u)| u.channel == channel)
        .collect();
    assert_eq!(units.len(), 4);
    let worked = live::fan_out(&world.app, &pusher, &queue, as_work(units)).await;
    assert_eq!(worked.coalesced, 2, "{worked:?}");
    let got: Vec<(String, u64)> = pusher
        .delivered
        .lock()
        .unwrap()
        .iter()
        .map(|(_, f)| {
            (
                f["event"]["name"].as_str().unwrap().to_owned(),
                f["event"]["aggregateVersion"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got.iter()
            .filter(|(n, _)| n == "BouquetFreshnessChanged")
            .collect::<Vec<_>>(),
        vec![&("BouquetFreshnessChanged".to_owned(), 9)],
        "the last state, once"
    );
    assert!(got.contains(&("BouquetChanged".to_owned(), 10)));
}

#[tokio::test]
async fn throttled_pushes_are_retried_and_failed_ones_are_parked_whole_and_redrivable() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    for connection in ["c-1", "down-2", "down-3"] {
        watching(&world, connection, &Viewer::Anonymous, &["catalogue"]).await;
    }
    let pusher = Throttling {
        throttles: 2,
        outage: true,
        ..Throttling::default()
    };
    let queue = MemoryQueue::default();
    let detail = json!({ "eventId": "e-1", "aggregateId": "b", "aggregateVersion": 1, "data": { "vendorId": vendor.vendor_id } });
    live::broadcast(&world.app, &pusher, &queue, "BouquetListed", &detail)
        .await
        .unwrap();
    let worked = live::fan_out(&world.app, &pusher, &queue, queue.take_work()).await;
    assert_eq!(
        (
            worked.pushes.delivered,
            worked.pushes.failed,
            worked.pushes.gone
        ),
        (1, 2, 0),
        "{worked:?}"
    );
    assert_eq!(
        pusher.tries.lock().unwrap()["c-1"],
        3,
        "two 429s, then delivered"
    );
    assert_eq!(
        pusher.tries.lock().unwrap()["down-2"],
        5,
        "five tries, then parked"
    );
    // Each shard's worker parks its own failures: between them, the two connections, each
    // once, with the frame.
    let parked: Vec<PushUnit> = std::mem::take(&mut *queue.parked.lock().unwrap())
        .iter()
        .map(|body| serde_json::from_str(body).unwrap())
        .collect();
    let mut named: Vec<String> = parked.iter().flat_map(|u| u.connections.clone()).collect();
    named.sort();
    assert_eq!(named, vec!["down-2", "down-3"]);
    assert!(parked
        .iter()
        .all(|u| u.frames.len() == 1 && u.frames[0].frame["event"]["eventId"] == "e-1"));
    // Redriven once the endpoint is back: exactly the two get the frame.
    let healthy = Throttling::default();
    let redriven = live::fan_out(
        &world.app,
        &healthy,
        &queue,
        parked
            .into_iter()
            .enumerate()
            .map(|(i, unit)| (format!("m-redrive-{i}"), Work::Push(unit)))
            .collect(),
    )
    .await;
    assert_eq!((redriven.pushes.delivered, redriven.pushes.failed), (2, 0));
    let mut reached: Vec<String> = healthy
        .delivered
        .lock()
        .unwrap()
        .iter()
        .map(|(c, f)| {
            assert_eq!(f["event"]["eventId"], "e-1");
            c.clone()
        })
        .collect();
    reached.sort();
    assert_eq!(reached, vec!["down-2", "down-3"]);
    assert!(queue.parked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_crowded_channel_grows_and_its_new_subscribers_land_in_the_new_shards() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let key = format!("bouquet:{}", bouquet.bouquet_id);
    // A crowd already in the channel's one shard: one more than a shard should hold, and
    // the shard's lease, as their subscribes wrote it.
    world
        .app
        .store
        .occupy_shard(
            &key,
            0,
            world.now().plus(bouquet_app::store::CONNECTION_RETENTION),
        )
        .await
        .unwrap();
    let crowd: Vec<String> = (0..=bouquet_app::store::SHARD_SUBSCRIBERS)
        .map(|i| format!("crowd-{i}"))
        .collect();
    subscribed(&world, &key, 0, &crowd).await;
    let pusher = Throttling::default();
    let detail = json!({ "eventId": "e-1", "aggregateId": bouquet.bouquet_id, "aggregateVersion": 2, "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id } });
    let first = broadcast(&world, &pusher, "BouquetChanged", &detail).await;
    assert_eq!(first.delivered, crowd.len(), "{first:?}");
    let shards = world
        .app
        .store
        .subscription_shards(std::slice::from_ref(&key))
        .await
        .unwrap();
    assert_eq!(
        shards[&key], 2,
        "the worker that read the crowded shard doubled the count"
    );
    // Newcomers (a fresh container: no cached count) spread over both shards, and every
    // one of them, with the crowd, gets the next frame once.
    let mut newcomer = world.app.clone();
    newcomer.shard_counts = Default::default();
    newcomer.shard_audiences = Default::default();
    let mut joined = Vec::new();
    for i in 0..20 {
        let connection = format!("new-{i}");
        live::connect(
            &newcomer,
            &connection,
            &Viewer::Anonymous,
            None,
            world.now(),
        )
        .await
        .unwrap();
        live::subscribe(
            &newcomer,
            &connection,
            &Viewer::Anonymous,
            std::slice::from_ref(&key),
            None,
            world.now(),
        )
        .await
        .unwrap();
        joined.push(connection);
    }
    let pusher = Throttling::default();
    let queue = MemoryQueue::default();
    let planned = live::broadcast(&newcomer, &pusher, &queue, "BouquetChanged", &detail)
        .await
        .unwrap();
    let units = queue.take();
    let of_channel = units.iter().filter(|(_, u)| u.channel == key).count();
    assert_eq!(of_channel, 2, "{planned:?}");
    live::fan_out(&newcomer, &pusher, &queue, as_work(units)).await;
    let delivered = pusher.delivered.lock().unwrap().clone();
    let mut reached: Vec<&str> = delivered
        .iter()
        .filter(|(_, f)| f["channel"] == key.as_str())
        .map(|(c, _)| c.as_str())
        .collect();
    reached.sort();
    reached.dedup();
    assert_eq!(reached.len(), crowd.len() + joined.len());
    let in_new_shard = world
        .app
        .store
        .shard_subscribers(&key, 1, world.now())
        .await
        .unwrap();
    assert!(
        !in_new_shard.is_empty(),
        "some newcomers went to the new shard"
    );
}

#[tokio::test]
async fn connections_past_a_holders_cap_are_refused_and_a_disconnect_gives_its_slot_back() {
    let world = World::new().await;
    let limit = live::ConnectionLimit {
        key: "ip:198.51.100.7".into(),
        cap: 3,
    };
    // Eight at once from one address: exactly the cap get in.
    let admitted = futures::future::join_all((0..8).map(|i| {
        let (app, limit, now) = (&world.app, &limit, world.now());
        async move {
            let connection = format!("c-{i}");
            let outcome = live::connect(app, &connection, &Viewer::Anonymous, Some(limit), now)
                .await
                .unwrap();
            (connection, outcome)
        }
    }))
    .await;
    let inside: Vec<&String> = admitted
        .iter()
        .filter(|(_, a)| *a == live::Admitted::Yes)
        .map(|(c, _)| c)
        .collect();
    assert_eq!(inside.len(), 3, "{admitted:?}");
    let store = &world.app.store;
    assert_eq!(store.open_connections(&limit.key).await.unwrap(), 3);
    for (connection, outcome) in &admitted {
        assert_eq!(
            store.connection(connection).await.unwrap().is_some(),
            *outcome == live::Admitted::Yes,
            "a refused connection leaves nothing behind"
        );
    }
    // Its $disconnect and a push's 410 remove one connection at once: one slot comes back.
    let leaving = inside[0].clone();
    let (a, b) = futures::join!(
        live::disconnect(&world.app, &leaving),
        live::disconnect(&world.app, &leaving)
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(store.open_connections(&limit.key).await.unwrap(), 2);
    assert_eq!(
        connect(&world, "c-late", &Viewer::Anonymous, Some(&limit)).await,
        live::Admitted::Yes
    );
    assert_eq!(
        connect(&world, "c-later", &Viewer::Anonymous, Some(&limit)).await,
        live::Admitted::Full
    );
}

#[tokio::test]
async fn a_connections_messages_past_its_minute_are_refused_until_the_next() {
    let world = World::with_config(Config {
        max_live_messages_per_minute: 3,
        ..Config::default()
    })
    .await;
    connect(&world, "c-1", &Viewer::Anonymous, None).await;
    let catalogue = vec!["catalogue".to_owned()];
    let subscribe = || subscribe(&world, "c-1", &Viewer::Anonymous, &catalogue);
    subscribe().await.unwrap();
    live::unsubscribe(
        &world.app,
        "c-1",
        &Viewer::Anonymous,
        &catalogue,
        world.now(),
    )
    .await
    .unwrap();
    subscribe().await.unwrap();
    assert!(matches!(subscribe().await, Err(LiveError::TooFast)));
    assert!(matches!(
        live::unsubscribe(
            &world.app,
            "c-1",
            &Viewer::Anonymous,
            &catalogue,
            world.now()
        )
        .await,
        Err(LiveError::TooFast)
    ));
    world.advance(std::time::Duration::from_secs(60));
    subscribe().await.unwrap();
    let held = world.app.store.connection("c-1").await.unwrap().unwrap();
    assert_eq!(held.subscriptions.len(), 1, "{held:?}");
}

#[tokio::test]
async fn a_crowded_channel_gets_one_digest_frame_per_window_with_the_last_state_of_each_bouquet() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let store = &world.app.store;
    // The catalogue has grown to the digest's threshold (a crowd of 16,000 or more).
    let mut of = bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS;
    while of < bouquet_app::store::DIGEST_FROM_SHARDS {
        assert!(store
            .grow_subscription_shards("catalogue", of, of * 2)
            .await
            .unwrap());
        of *= 2;
    }
    watching(&world, "c-1", &Viewer::Anonymous, &["catalogue"]).await;
    let pusher = Throttling::default();
    let queue = MemoryQueue::default();
    for (id, version, name, freshness) in [
        ("01A", 7, "BouquetFreshnessChanged", 80),
        ("01B", 9, "BouquetFreshnessChanged", 60),
        ("01C", 10, "BouquetChanged", 60),
    ] {
        let detail = json!({ "eventId": id, "aggregateId": bouquet.bouquet_id, "aggregateVersion": version, "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id, "freshness": freshness } });
        let planned = live::broadcast(&world.app, &pusher, &queue, name, &detail)
            .await
            .unwrap();
        assert_eq!(planned.digested, 1, "{planned:?}");
    }
    // No catalogue unit per event: only the bouquet's own (small) channel went frame by frame.
    assert!(queue.take().iter().all(|(_, u)| u.channel != "catalogue"));
    // The window's first frame scheduled one flush, due when the window closes.
    let later = std::mem::take(&mut *queue.later.lock().unwrap());
    assert_eq!(later.len(), 1, "{later:?}");
    assert!(later[0].1 <= live::DIGEST_WINDOW && later[0].1 >= std::time::Duration::from_secs(1));
    let flush: Work = serde_json::from_str(&later[0].0).unwrap();
    assert!(matches!(flush, Work::Flush(_)));

    let closed = live::fan_out(
        &world.app,
        &pusher,
        &queue,
        vec![("f".into(), flush.clone())],
    )
    .await;
    assert_eq!(
        closed.flushed, 1,
        "a unit per occupied catalogue shard: c-1's, of {of}"
    );
    live::fan_out(&world.app, &pusher, &queue, queue.take_work()).await;
    let frames: Vec<serde_json::Value> = pusher
        .delivered
        .lock()
        .unwrap()
        .iter()
        .filter(|(c, f)| c == "c-1" && f["channel"] == "catalogue")
        .map(|(_, f)| f.clone())
        .collect();
    assert_eq!(frames.len(), 1, "one frame for the window: {frames:?}");
    assert_eq!(frames[0]["type"], "events");
    let events: Vec<(String, u64)> = frames[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["aggregateVersion"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            ("BouquetFreshnessChanged".to_owned(), 9),
            ("BouquetChanged".to_owned(), 10)
        ],
        "the freshness move's last state and the change, in event order"
    );

    // A frame arriving after the window closed goes into the next window, with its own flush.
    let late = json!({ "eventId": "01D", "aggregateId": bouquet.bouquet_id, "aggregateVersion": 11, "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id } });
    live::broadcast(&world.app, &pusher, &queue, "BouquetChanged", &late)
        .await
        .unwrap();
    let later = std::mem::take(&mut *queue.later.lock().unwrap());
    assert_eq!(later.len(), 1);
    let (Work::Flush(first), Ok(Work::Flush(next))) = (flush, serde_json::from_str(&later[0].0))
    else {
        panic!("flushes")
    };
    assert_eq!(next.window, first.window + 1);
}

/// Fan-out only where someone listens: a public event nobody watches queues no unit; a
/// watcher's subscribe leases its shard (once per container while the lease covers a new
/// connection), and from then the event queues a unit for that shard alone, until the lease
/// lapses after the longest a connection lives.
#[tokio::test]
async fn a_public_event_queues_units_only_for_the_shards_someone_may_be_in() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let detail = json!({ "eventId": "e-1", "aggregateId": bouquet.bouquet_id, "aggregateVersion": 2, "data": { "bouquetId": bouquet.bouquet_id, "vendorId": vendor.vendor_id } });
    let pusher = Throttling::default();
    let queue = MemoryQueue::default();
    let unwatched = live::broadcast(&world.app, &pusher, &queue, "BouquetChanged", &detail)
        .await
        .unwrap();
    assert_eq!(
        (unwatched.queued, queue.take().len()),
        (0, 0),
        "nobody watches"
    );

    for watcher in ["w-1", "w-2", "w-3"] {
        watching(&world, watcher, &Viewer::Anonymous, &["catalogue"]).await;
    }
    let watched = live::broadcast(&world.app, &pusher, &queue, "BouquetChanged", &detail)
        .await
        .unwrap();
    let mut shards: Vec<u32> = queue
        .take()
        .iter()
        .filter(|(_, u)| u.channel == "catalogue")
        .filter_map(|(_, u)| u.shard.map(|s| s.index))
        .collect();
    shards.sort();
    let mut expected: Vec<u32> = ["w-1", "w-2", "w-3"]
        .iter()
        .map(|w| {
            bouquet_app::store::placement(w, bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS)
        })
        .collect();
    expected.sort();
    expected.dedup();
    assert_eq!(shards, expected, "{watched:?}");
    assert_eq!(watched.queued, expected.len());

    // After the longest a connection lives (and its margin), the leases have lapsed.
    world.advance(bouquet_app::store::CONNECTION_RETENTION + std::time::Duration::from_secs(1));
    let lapsed = live::broadcast(&world.app, &pusher, &queue, "BouquetChanged", &detail)
        .await
        .unwrap();
    assert_eq!(lapsed.queued, 0, "{lapsed:?}");
}

/// Subscriptions laid down as their subscribes would write them: `connections` in `shard` of
/// the channel `key`, live for a connection's retention.
async fn subscribed(world: &World, key: &str, shard: u32, connections: &[String]) {
    use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
    let expires = world
        .now()
        .plus(bouquet_app::store::CONNECTION_RETENTION)
        .as_epoch_seconds()
        .to_string();
    for chunk in connections.chunks(25) {
        let requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|c| {
                let item = HashMap::from([
                    (
                        "pk".to_owned(),
                        AttributeValue::S(format!("CHANNEL#{key}#{shard}")),
                    ),
                    (
                        "sk".to_owned(),
                        AttributeValue::S(format!("CONNECTION#{c}")),
                    ),
                    ("connectionId".to_owned(), AttributeValue::S(c.clone())),
                    ("expiresAt".to_owned(), AttributeValue::N(expires.clone())),
                ]);
                WriteRequest::builder()
                    .put_request(PutRequest::builder().set_item(Some(item)).build().unwrap())
                    .build()
            })
            .collect();
        world
            .dynamodb
            .batch_write_item()
            .request_items(&world.table, requests)
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_crowded_shards_subscribers_are_read_once_a_second_and_a_quiet_shards_every_time() {
    use bouquet_app::shard_audiences::{ShardAudiences, AUDIENCE_TTL, CACHED_AUDIENCE_MIN};
    use std::time::Duration;
    let world = World::new().await;
    let key = "catalogue";
    let crowd: Vec<String> = (0..CACHED_AUDIENCE_MIN + 20)
        .map(|i| format!("crowd-{i}"))
        .collect();
    let few: Vec<String> = (0..5).map(|i| format!("few-{i}")).collect();
    subscribed(&world, key, 3, &crowd).await;
    subscribed(&world, key, 4, &few).await;
    let audiences = ShardAudiences::default();
    let store = &world.app.store;
    let at = |ms: u64| world.now().plus(Duration::from_millis(ms));
    assert_eq!(
        audiences.of(store, key, 3, at(0)).await.unwrap().len(),
        crowd.len()
    );
    assert_eq!(
        audiences.of(store, key, 4, at(0)).await.unwrap().len(),
        few.len()
    );
    // One subscriber of each shard leaves.
    for (shard, connection) in [(3, &crowd[0]), (4, &few[0])] {
        world
            .dynamodb
            .delete_item()
            .table_name(&world.table)
            .key(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("CHANNEL#{key}#{shard}")),
            )
            .key(
                "sk",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("CONNECTION#{connection}")),
            )
            .send()
            .await
            .unwrap();
    }
    let within = AUDIENCE_TTL.as_millis() as u64 - 1;
    assert_eq!(
        audiences.of(store, key, 3, at(within)).await.unwrap().len(),
        crowd.len(),
        "the crowded shard's list of a moment ago"
    );
    assert_eq!(
        audiences.of(store, key, 4, at(within)).await.unwrap().len(),
        few.len() - 1,
        "a quiet shard is read each time"
    );
    let after = AUDIENCE_TTL.as_millis() as u64;
    assert_eq!(
        audiences.of(store, key, 3, at(after)).await.unwrap().len(),
        crowd.len() - 1
    );
    // A connection API Gateway found gone leaves the cached list at once.
    audiences.forget(std::slice::from_ref(&crowd[1]));
    let cached = audiences.of(store, key, 3, at(after + 1)).await.unwrap();
    assert_eq!(cached.len(), crowd.len() - 2);
    assert!(!cached.contains(&crowd[1]));
}
