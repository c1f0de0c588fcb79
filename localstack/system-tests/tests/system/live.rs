//! Live updates against the dev stack's WebSocket API, with a real WebSocket client
//! (tokio-tungstenite): the authorizer on the upgrade, route selection, subscriptions
//! checked against the caller, frames pushed by `broadcast-events` through `@connections`,
//! a vanished connection removed on the first 410, and pushes that fail for some
//! connections while the others still receive.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use bouquet_app::domain::channels::{Channel, Viewer};
use bouquet_app::domain::VendorId;
use bouquet_app::realtime::{ApiGatewayPusher, PushError, Pusher};
use system_tests::in_process::run_event_function;
use system_tests::{emulator_sdk_config, TestCloud};

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

type Live = system_tests::live::LocalLive;

/// The template's WebSocket API on a free port (see `system_tests::live`).
async fn live(cloud: &TestCloud, pusher: Option<Arc<dyn Pusher>>) -> Live {
    cloud.live(pusher).await
}

fn token(role: &str, sub: &str, vendor: Option<&str>) -> String {
    devstack::jwt::mint(&devstack::jwt::secret_from_env(), role, sub, vendor, 3600).unwrap()
}

trait Browser {
    async fn connect(
        &self,
        token: Option<&str>,
    ) -> Result<Client, tokio_tungstenite::tungstenite::Error>;
    async fn broadcast_new(&self, cloud: &TestCloud, seen: &mut usize) -> Vec<Value>;
}

impl Browser for Live {
    async fn connect(
        &self,
        token: Option<&str>,
    ) -> Result<Client, tokio_tungstenite::tungstenite::Error> {
        let url = match token {
            Some(token) => format!("ws://{}/?token={token}", self.address),
            None => format!("ws://{}/", self.address),
        };
        tokio_tungstenite::connect_async(url)
            .await
            .map(|(socket, _)| socket)
    }

    /// Pushes every outbox event of the table written since `seen` through
    /// `broadcast-events`, as the template's rule would deliver them; returns the reports.
    async fn broadcast_new(&self, cloud: &TestCloud, seen: &mut usize) -> Vec<Value> {
        let mut items = cloud.items_of("event").await;
        items.sort_by_key(|i| i["sk"].as_s().unwrap().clone());
        let mut events: Vec<Value> = items
            .iter()
            .map(|item| {
                let detail: Value =
                    serde_json::from_str(item["detail"].as_s().unwrap()).unwrap();
                (item["eventName"].as_s().unwrap().clone(), detail)
            })
            .map(|(name, detail)| json!({ "detail-type": name, "source": "bouquet.marketplace", "detail": detail }))
            .collect();
        events.sort_by_key(|e| e["detail"]["eventId"].as_str().unwrap().to_owned());
        let fresh: Vec<Value> = events.into_iter().skip(*seen).collect();
        *seen += fresh.len();
        let mut reports = Vec::new();
        for event in fresh {
            reports.push(
                run_event_function("broadcast-events", &self.functions, event)
                    .await
                    .expect("the broadcast succeeds"),
            );
        }
        reports
    }
}

async fn send(client: &mut Client, frame: Value) {
    client.send(Message::text(frame.to_string())).await.unwrap();
}

/// The next frame, if one comes within `wait`.
async fn next(client: &mut Client, wait: Duration) -> Option<Value> {
    loop {
        match tokio::time::timeout(wait, client.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return Some(serde_json::from_str(&text).unwrap()),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            _ => return None,
        }
    }
}

/// Every frame that arrives until none has for `quiet`.
async fn drain(client: &mut Client, quiet: Duration) -> Vec<Value> {
    let mut frames = Vec::new();
    while let Some(frame) = next(client, quiet).await {
        frames.push(frame);
    }
    frames
}

/// (channel, event name) of the event frames.
fn events(frames: &[Value]) -> Vec<(String, String)> {
    frames
        .iter()
        .filter(|f| f["type"] == "event")
        .map(|f| {
            (
                f["channel"].as_str().unwrap().to_owned(),
                f["event"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn subscribe(client: &mut Client, channels: &[&str]) -> Vec<Value> {
    send(
        client,
        json!({ "action": "subscribe", "channels": channels }),
    )
    .await;
    drain(client, Duration::from_millis(300)).await
}

const QUIET: Duration = Duration::from_millis(400);

#[tokio::test]
async fn subscribers_get_what_they_may_read_and_nothing_else() {
    let cloud = TestCloud::new().await;
    let live = live(&cloud, None).await;
    let vendor = cloud.vendor("Bloom").await;
    let other_vendor = cloud.vendor("Other").await;
    let bouquet = cloud.bouquet(&vendor, "25.00").await;

    // The authorizer on the upgrade: a bad token is a 401, no token is anonymous.
    match live.connect(Some("not-a-token")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401)
        }
        other => panic!("a bad token must be refused: {:?}", other.map(|_| ())),
    }
    let expired = {
        let secret = devstack::jwt::secret_from_env();
        devstack::jwt::mint(&secret, "customer", "c-1", None, -60).unwrap()
    };
    assert!(
        live.connect(Some(&expired)).await.is_err(),
        "an expired token is refused"
    );

    let mut anonymous = live.connect(None).await.unwrap();
    let mut buyer = live
        .connect(Some(&token("customer", "customer-1", None)))
        .await
        .unwrap();
    let mut bystander = live
        .connect(Some(&token("customer", "customer-2", None)))
        .await
        .unwrap();
    let mut seller = live
        .connect(Some(&token("vendor", "vendor-user", Some(&vendor))))
        .await
        .unwrap();

    // Route selection, ping and $default.
    send(&mut anonymous, json!({ "action": "ping" })).await;
    assert_eq!(
        next(&mut anonymous, QUIET).await,
        Some(json!({ "type": "pong" }))
    );
    send(&mut anonymous, json!({ "action": "dance" })).await;
    assert_eq!(
        next(&mut anonymous, QUIET).await.unwrap()["code"],
        "request.invalid"
    );
    anonymous.send(Message::text("not json")).await.unwrap();
    assert_eq!(
        next(&mut anonymous, QUIET).await.unwrap()["code"],
        "request.invalid"
    );

    // Subscriptions, checked against the caller.
    let bouquet_channel = format!("bouquet:{bouquet}");
    let frames = subscribe(&mut anonymous, &["catalogue", &bouquet_channel, "orders"]).await;
    assert!(
        frames
            .contains(&json!({ "type": "subscribed", "channels": ["catalogue", bouquet_channel] })),
        "{frames:?}"
    );
    assert!(
        frames.contains(&json!({ "type": "error", "code": "auth.forbidden", "channel": "orders" })),
        "{frames:?}"
    );
    assert_eq!(
        subscribe(&mut buyer, &["orders"]).await,
        vec![json!({ "type": "subscribed", "channels": ["orders"] })]
    );
    assert_eq!(
        subscribe(&mut bystander, &["orders"]).await,
        vec![json!({ "type": "subscribed", "channels": ["orders"] })]
    );
    let theirs = format!("vendor:{other_vendor}");
    let frames = subscribe(&mut seller, &[&format!("vendor:{vendor}"), &theirs]).await;
    assert!(
        frames.contains(&json!({ "type": "error", "code": "auth.forbidden", "channel": theirs })),
        "{frames:?}"
    );
    assert!(
        frames.contains(&json!({ "type": "subscribed", "channels": [format!("vendor:{vendor}")] })),
        "{frames:?}"
    );
    let subscribers = cloud
        .app
        .store
        .subscribers(
            &Channel::Vendor(VendorId::parse(&other_vendor).unwrap()),
            cloud.app.clock.now(),
        )
        .await
        .unwrap();
    assert!(
        subscribers.is_empty(),
        "nothing of another vendor's channel is stored"
    );

    // The buyer reserves and pays; the events go out.
    let mut seen = 0;
    live.broadcast_new(&cloud, &mut seen).await;
    for client in [&mut anonymous, &mut buyer, &mut bystander, &mut seller] {
        drain(client, QUIET).await;
    }
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    assert_eq!(cloud.pay_by_card("customer-1", &order).await.status, 200);
    let reports = live.broadcast_new(&cloud, &mut seen).await;
    assert_eq!(
        reports.len(),
        3,
        "OrderReserved, OrderDeliveryChanged and OrderPaid: {reports:?}"
    );

    // Public channels are pushed by the fan-out workers, a unit per shard, in any order.
    let public = drain(&mut anonymous, QUIET).await;
    // The order's events (frames of the shop's opening and listing may still be arriving: the
    // catalogue hears of those too).
    let mut got: Vec<(String, String)> = events(&public)
        .into_iter()
        .filter(|(_, name)| name.starts_with("Order"))
        .collect();
    got.sort();
    let mut expected = vec![
        ("catalogue".to_owned(), "OrderReserved".to_owned()),
        (bouquet_channel.clone(), "OrderReserved".to_owned()),
        ("catalogue".to_owned(), "OrderPaid".to_owned()),
        (bouquet_channel.clone(), "OrderPaid".to_owned()),
    ];
    expected.sort();
    assert_eq!(got, expected);
    // The delivery details are personal data: no frame on any channel carries them.
    let no_personal_data = |frames: &[Value]| {
        for frame in frames {
            let text = frame.to_string();
            for personal in ["Camille", "Fleurs", "+336", "Happy birthday", "75011"] {
                assert!(!text.contains(personal), "{personal} in {frame}");
            }
        }
    };
    no_personal_data(&public);
    for frame in &public {
        let data = &frame["event"]["data"];
        assert!(
            data.get("customerId").is_none()
                && data.get("total").is_none()
                && data.get("chargeId").is_none(),
            "{frame}"
        );
    }
    let own = drain(&mut buyer, QUIET).await;
    no_personal_data(&own);
    assert_eq!(
        events(&own),
        vec![
            ("orders".to_owned(), "OrderReserved".to_owned()),
            ("orders".to_owned(), "OrderDeliveryChanged".to_owned()),
            ("orders".to_owned(), "OrderPaid".to_owned()),
        ]
    );
    assert_eq!(own[2]["event"]["data"]["customerId"], "customer-1");
    assert!(
        own[0]["event"]["aggregateVersion"].as_u64() < own[2]["event"]["aggregateVersion"].as_u64()
    );
    assert_eq!(
        drain(&mut bystander, QUIET).await,
        Vec::<Value>::new(),
        "another customer's orders never reach them"
    );
    let sellers = drain(&mut seller, QUIET).await;
    no_personal_data(&sellers);
    assert_eq!(
        events(&sellers),
        vec![
            (format!("vendor:{vendor}"), "OrderReserved".to_owned()),
            (
                format!("vendor:{vendor}"),
                "OrderDeliveryChanged".to_owned()
            ),
            (format!("vendor:{vendor}"), "OrderPaid".to_owned()),
        ]
    );

    // Unsubscribed, nothing more arrives; the bystander's connection closes and is removed.
    send(
        &mut anonymous,
        json!({ "action": "unsubscribe", "channels": ["catalogue", bouquet_channel] }),
    )
    .await;
    assert_eq!(
        next(&mut anonymous, QUIET).await.unwrap()["type"],
        "unsubscribed"
    );
    bystander.close(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(live.api.connection_count(), 3);
    let connections = cloud.items_of("connection").await;
    assert_eq!(connections.len(), 3, "the closed connection's item is gone");
}

/// Every write's response is lost once after it committed, and the SDK retries it: a
/// connection still takes one slot, and its disconnect gives the slot back. Before the fix the
/// retried `DeleteItem` found the connection gone and kept the slot: the holder's cap shrank
/// by one for two hours (found by the chaos soak).
#[tokio::test]
async fn lost_responses_neither_leak_nor_double_a_connection_slot() {
    use bouquet_app::store::{Admitted, ConnectionLimit, Store};
    use devstack::faults::{FaultProxy, Faults};
    let cloud = TestCloud::new().await;
    let faults: &'static Faults = Box::leak(Box::new(
        Faults::parse("rate=1,only=response_lost_after_commit").unwrap(),
    ));
    let upstreams = devstack::faults::Upstreams::new(
        &system_tests::endpoint(),
        &system_tests::dynamodb_endpoint(),
    )
    .unwrap();
    let proxy = FaultProxy::start(faults, &upstreams, 0).await.unwrap();
    let sdk = emulator_sdk_config().await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .endpoint_url(proxy.endpoint())
            .build(),
    );
    let store = Store::new(client, cloud.table.clone()).with_live_table(cloud.live_table.clone());
    let viewer = Viewer::Customer(bouquet_app::domain::CustomerId::parse("alice").unwrap());
    let limit = ConnectionLimit {
        key: "user:alice".into(),
        cap: 10,
    };
    let now = bouquet_app::domain::Clock::now(&*cloud.clock);
    for id in ["c-1", "c-2"] {
        assert_eq!(
            store
                .put_connection(id, &viewer, Some(&limit), now)
                .await
                .unwrap(),
            Admitted::Yes
        );
    }
    assert_eq!(
        cloud.open_connections("user:alice").await,
        2,
        "a retried connect takes one slot"
    );
    store.remove_connection("c-1").await.unwrap();
    store.remove_connection("c-2").await.unwrap();
    assert_eq!(
        cloud.open_connections("user:alice").await,
        0,
        "each disconnect gave its slot back"
    );
    assert!(cloud.app.store.connection("c-1").await.unwrap().is_none());
    assert!(
        faults.report()["injected"]["response_lost_after_commit"]
            .as_u64()
            .unwrap()
            >= 4,
        "{}",
        faults.report()
    );
}

#[tokio::test]
async fn a_vanished_connection_is_removed_on_the_first_410() {
    let cloud = TestCloud::new().await;
    let live = live(&cloud, None).await;
    let vendor = cloud.vendor("Bloom").await;
    let store = &cloud.app.store;
    // A connection the table still has but API Gateway no longer does (its $disconnect
    // was lost): the push finds it gone.
    let now = cloud.app.clock.now();
    store
        .put_connection("ghost=", &Viewer::Anonymous, None, now)
        .await
        .unwrap();
    assert_eq!(
        store
            .subscribe(
                "ghost=",
                &[Channel::Catalogue],
                &Default::default(),
                None,
                60,
                now
            )
            .await
            .unwrap(),
        bouquet_app::store::Subscribed::Done
    );
    // Its shard's lease, as its subscribe through the app wrote it.
    let shards = bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS;
    let ghost_shard = bouquet_app::store::placement("ghost=", shards);
    store
        .occupy_shard(
            "catalogue",
            ghost_shard,
            now.plus(bouquet_app::store::CONNECTION_RETENTION),
        )
        .await
        .unwrap();
    let mut watcher = live.connect(None).await.unwrap();
    subscribe(&mut watcher, &["catalogue"]).await;
    cloud.bouquet(&vendor, "10.00").await;
    let mut seen = cloud.items_of("event").await.len() - 1;
    let reports = live.broadcast_new(&cloud, &mut seen).await;
    let occupied = cloud
        .app
        .store
        .channel_shards(&["catalogue".to_owned()], cloud.app.clock.now())
        .await
        .unwrap()["catalogue"]
        .occupied
        .clone();
    assert!(
        occupied.contains(&ghost_shard) && (1..=2).contains(&occupied.len()),
        "{occupied:?}"
    );
    assert_eq!(
        reports[0]["queued"],
        occupied.len(),
        "a unit per occupied catalogue shard (the ghost's and the watcher's), none for the bouquet's unwatched channel: {reports:?}"
    );
    assert_eq!(
        events(&drain(&mut watcher, QUIET).await),
        vec![("catalogue".to_owned(), "BouquetListed".to_owned())]
    );
    // The worker that met the 410 removed the connection.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.connection("ghost=").await.unwrap().is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the gone connection is removed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(live.fanout.parked().await.is_empty(), "a 410 is no failure");
    assert_eq!(
        store
            .subscribers(&Channel::Catalogue, cloud.app.clock.now())
            .await
            .unwrap()
            .len(),
        1,
        "only the live one is left"
    );
    // Every item expires past API Gateway's 2 h limit (TTL), should a delete be missed.
    for item in cloud
        .items_of("connection")
        .await
        .iter()
        .chain(cloud.items_of("subscription").await.iter())
    {
        let expires: i64 = item["expiresAt"].as_n().unwrap().parse().unwrap();
        let ttl = expires - now.as_epoch_seconds();
        assert!((7200..=7200 + 3600).contains(&ttl), "{ttl}");
    }
}

/// A push that fails (not 410) for every third connection.
struct Flaky {
    inner: std::sync::OnceLock<ApiGatewayPusher>,
    refused: std::sync::Mutex<BTreeMap<String, usize>>,
    calls: AtomicUsize,
    failing: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Pusher for Flaky {
    async fn post(&self, connection_id: &str, frame: &[u8]) -> Result<(), PushError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self
            .failing
            .lock()
            .unwrap()
            .iter()
            .any(|c| c == connection_id)
        {
            *self
                .refused
                .lock()
                .unwrap()
                .entry(connection_id.to_owned())
                .or_default() += 1;
            return Err(PushError::Failed {
                connection: connection_id.to_owned(),
                source: "injected: throttled".into(),
            });
        }
        self.inner
            .get()
            .expect("set once the API is bound")
            .post(connection_id, frame)
            .await
    }
}

#[tokio::test]
async fn pushes_failing_for_some_connections_do_not_stop_the_others() {
    let cloud = TestCloud::new().await;
    // The pusher needs the API's address, known once it is bound: set it after.
    let flaky = Arc::new(Flaky {
        inner: std::sync::OnceLock::new(),
        refused: Default::default(),
        calls: AtomicUsize::new(0),
        failing: Default::default(),
    });
    let live = live(&cloud, Some(flaky.clone())).await;
    let _ = flaky.inner.set(ApiGatewayPusher::new(
        &emulator_sdk_config().await,
        &format!("http://{}", live.address),
    ));

    const CLIENTS: usize = 9;
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut client = live.connect(None).await.unwrap();
        subscribe(&mut client, &["catalogue"]).await;
        clients.push(client);
    }
    let connections: Vec<String> = cloud
        .app
        .store
        .subscribers(&Channel::Catalogue, cloud.app.clock.now())
        .await
        .unwrap();
    assert_eq!(connections.len(), CLIENTS);
    *flaky.failing.lock().unwrap() = connections.iter().step_by(3).cloned().collect();

    let vendor = cloud.vendor("Bloom").await;
    cloud.bouquet(&vendor, "10.00").await;
    let mut seen = cloud.items_of("event").await.len() - 1;
    live.broadcast_new(&cloud, &mut seen).await;
    // Until the six frames are in (a busy machine delivers some late), then a last look for a
    // duplicate.
    let mut received = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while received < 6 && tokio::time::Instant::now() < deadline {
        for client in &mut clients {
            received += events(&drain(client, Duration::from_millis(100)).await).len();
        }
    }
    for client in &mut clients {
        received += events(&drain(client, Duration::from_millis(100)).await).len();
    }
    assert_eq!(
        received, 6,
        "every connection that did not fail got its frame, once"
    );
    // Each failing push was tried 5 times, then parked whole: one unit naming exactly the
    // three connections, with the frame; nothing was removed.
    // Each shard's worker parks its own: between them, the three connections, each once.
    let parked = wait_for_parked(&live, 3).await;
    let units: Vec<bouquet_app::live::PushUnit> = parked
        .iter()
        .map(|body| serde_json::from_str(body).unwrap())
        .collect();
    let mut failing = flaky.failing.lock().unwrap().clone();
    let mut named: Vec<String> = units.iter().flat_map(|u| u.connections.clone()).collect();
    failing.sort();
    named.sort();
    assert_eq!(named, failing);
    assert!(units.iter().all(|u| u.channel == "catalogue"
        && u.frames.len() == 1
        && u.frames[0].frame["event"]["name"] == "BouquetListed"));
    assert!(flaky
        .refused
        .lock()
        .unwrap()
        .values()
        .all(|tries| *tries == 5));
    assert_eq!(
        cloud
            .app
            .store
            .subscribers(&Channel::Catalogue, cloud.app.clock.now())
            .await
            .unwrap()
            .len(),
        CLIENTS
    );
    // Redriven once the pushes work again: exactly the three get the frame, once.
    flaky.failing.lock().unwrap().clear();
    for body in &parked {
        live.fanout
            .sqs
            .send_message()
            .queue_url(&live.fanout.url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    let mut redriven = 0;
    for client in &mut clients {
        redriven += events(&drain(client, Duration::from_millis(300)).await).len();
    }
    assert_eq!(redriven, 3);
}

/// Waits (up to 10 s) until units naming `connections` connections in all are parked on the
/// fan-out dead-letter queue; their bodies.
async fn wait_for_parked(live: &Live, connections: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut parked = Vec::new();
    let named = |parked: &[String]| -> usize {
        parked
            .iter()
            .map(|b| {
                serde_json::from_str::<bouquet_app::live::PushUnit>(b)
                    .unwrap()
                    .connections
                    .len()
            })
            .sum()
    };
    while named(&parked) < connections && std::time::Instant::now() < deadline {
        parked.extend(live.fanout.parked().await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(named(&parked), connections, "{parked:?}");
    parked
}

/// The next `count` event frames on `socket`, each on `channel` when one is given.
async fn event_frames(client: &mut Client, count: usize, channel: Option<&str>) -> Vec<Value> {
    let mut frames: Vec<Value> = Vec::new();
    while frames.len() < count {
        let frame = next(client, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("only {frames:?} arrived"));
        if let Some(channel) = channel {
            assert_eq!(frame["channel"], channel, "{frame}");
        }
        frames.push(frame);
    }
    frames
}

fn event_name(frame: &Value) -> String {
    frame["event"]["name"].as_str().unwrap().to_owned()
}

/// The whole chain, as the template wires it: a vase's reading over MQTT → topic rule → SQS
/// → ingest → the table → its stream → the publisher → the bus → the live rule →
/// `broadcast-events` → `@connections` → the browser's socket.
#[tokio::test]
async fn a_reading_over_mqtt_and_a_sale_reach_the_browsers_through_the_whole_chain() {
    use bouquet_app::domain::{Clock, SystemClock};
    let cloud = TestCloud::new().await;
    let start = SystemClock.now();
    cloud.clock.set(start);
    let iot = crate::vase_mqtt::local_iot(&cloud).await;
    let live = live(&cloud, None).await;
    live.start_chain(&cloud).await;

    let vendor = cloud.vendor("Bloom").await;
    let credentials = cloud.vase_with_credentials(&vendor).await;
    let vase = credentials.vase_id.clone();
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
    let mut browser = live.connect(None).await.unwrap();
    subscribe(&mut browser, &[&format!("bouquet:{bouquet}")]).await;
    let mut buyer = live
        .connect(Some(&token("customer", "customer-1", None)))
        .await
        .unwrap();
    subscribe(&mut buyer, &["orders"]).await;

    let (client, mut mqtt) = crate::vase_mqtt::connect(iot.address, &credentials)
        .await
        .unwrap();
    let sent = start.plus(Duration::from_secs(60));
    crate::vase_mqtt::publish(
        &client,
        &mut mqtt,
        &format!("vases/{vase}/telemetry"),
        json!({ "sentAt": sent.to_rfc3339(), "waterLevelPct": 20, "temperatureC": 18, "humidityPct": 60, "lightLux": 500 }),
    )
    .await
    .unwrap();
    // The listing's own event may still be on its way (the chain started before it).
    let frame = loop {
        let frame = next(&mut browser, Duration::from_secs(20))
            .await
            .expect("the freshness reaches the browser");
        if frame["event"]["name"] != "BouquetListed" {
            break frame;
        }
    };
    assert_eq!(frame["event"]["name"], "BouquetFreshnessChanged", "{frame}");
    assert_eq!(frame["event"]["data"]["freshness"], 85, "{frame}");

    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    assert_eq!(cloud.pay_by_card("customer-1", &order).await.status, 200);
    // EventBridge does not order its deliveries to the broadcaster, so frames may arrive out
    // of order; each carries its aggregate's version, by which a client orders them.
    // A public frame names no order, so no version orders these two: each arrives once.
    let mut seen: Vec<String> = event_frames(&mut browser, 2, None)
        .await
        .iter()
        .map(event_name)
        .collect();
    seen.sort();
    assert_eq!(seen, ["OrderPaid", "OrderReserved"]);
    // The buyer's own channel also hears of the delivery details (their date only), each
    // frame with the order's version.
    let mut own = event_frames(&mut buyer, 3, Some("orders")).await;
    own.sort_by_key(|frame| {
        frame["event"]["aggregateVersion"]
            .as_u64()
            .unwrap_or_else(|| panic!("an order's frame carries its version: {frame}"))
    });
    let own: Vec<String> = own.iter().map(event_name).collect();
    assert_eq!(own, ["OrderReserved", "OrderDeliveryChanged", "OrderPaid"]);
}

/// A broadcast that cannot read its subscribers (here: its table is gone) fails once, not
/// again (frames are at most once), and its event lands whole on the template's
/// `LiveFailureQueue`.
#[tokio::test]
async fn a_broadcast_that_fails_keeps_its_event_in_the_failure_queue() {
    let cloud = TestCloud::new().await;
    let outbox = crate::outbox::outbox(&cloud, None).await;
    let sdk = emulator_sdk_config().await;
    let mut broken = cloud.app.clone();
    broken.store = bouquet_app::store::Store::new(
        cloud.client.clone(),
        format!("missing-{}", ulid::Ulid::new()),
    );
    let mut functions = cloud.in_process(broken);
    functions.pusher = Some(Arc::new(ApiGatewayPusher::new(&sdk, "http://127.0.0.1:9")));
    let (target, names) =
        crate::outbox::rule_target(&outbox, &functions, "broadcast-events", "LiveFailureQueue")
            .await;
    assert_eq!(target.on_failure.max_attempts, 1, "not retried");

    let mut fixture: Value = system_tests::event_fixture("broadcast-events");
    fixture["detail"]["eventId"] = json!(ulid::Ulid::new().to_string());
    crate::outbox::put_on_bus(
        &aws_sdk_eventbridge::Client::new(&sdk),
        &outbox,
        "BouquetFreshnessChanged",
        &fixture["detail"],
    )
    .await;
    assert_eq!(crate::outbox::sent_to_on_failure(&target).await, 1);
    let records = crate::outbox::drain(&outbox.sqs, &names["LiveFailureQueue"]).await;
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["requestPayload"]["detail"], fixture["detail"],
        "the event, whole"
    );
    assert_eq!(records[0]["requestContext"]["approximateInvokeCount"], 1);
}

/// One script opening sockets from one address: the cap holds, every connect past it is a
/// 429 on the upgrade, a signed-in customer still gets in and gets its order's frames, and a
/// closed socket gives its slot back.
#[tokio::test]
async fn five_hundred_anonymous_connects_from_one_ip_hit_the_cap_and_a_customer_still_gets_through()
{
    let cloud = TestCloud::new().await;
    let live = live(&cloud, None).await;
    let cap = bouquet_app::Config::default().max_connections_per_ip as usize;
    let attempts: Vec<Result<Client, u16>> = futures::stream::iter(0..500)
        .map(|_| async {
            match live.connect(None).await {
                Ok(client) => Ok(client),
                Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                    Err(response.status().as_u16())
                }
                Err(other) => panic!("{other}"),
            }
        })
        .buffer_unordered(25)
        .collect()
        .await;
    let mut open: Vec<Client> = Vec::new();
    let mut refused = BTreeMap::new();
    for attempt in attempts {
        match attempt {
            Ok(client) => open.push(client),
            Err(status) => *refused.entry(status).or_insert(0) += 1,
        }
    }
    assert_eq!(open.len(), cap);
    assert_eq!(refused, BTreeMap::from([(429, 500 - cap)]));
    assert_eq!(live.api.connection_count(), cap);
    assert_eq!(cloud.open_connections("ip:127.0.0.1").await, cap as u32);

    // Signed in, the customer is counted as a user, not as the crowded address.
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "12.00").await;
    let mut buyer = live
        .connect(Some(&token("customer", "customer-1", None)))
        .await
        .expect("a signed-in customer connects");
    assert_eq!(
        subscribe(&mut buyer, &["orders"]).await,
        vec![json!({ "type": "subscribed", "channels": ["orders"] })]
    );
    let mut seen = cloud.items_of("event").await.len();
    cloud.reserve("customer-1", &[&bouquet]).await;
    live.broadcast_new(&cloud, &mut seen).await;
    assert_eq!(
        events(&drain(&mut buyer, QUIET).await),
        vec![("orders".to_owned(), "OrderReserved".to_owned())]
    );

    // One socket closes ($disconnect gives the slot back): one more gets in, then the cap
    // holds again.
    open.pop().unwrap().close(None).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while cloud.open_connections("ip:127.0.0.1").await as usize >= cap {
        assert!(std::time::Instant::now() < deadline, "the slot comes back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    open.push(live.connect(None).await.expect("a freed slot"));
    match live.connect(None).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429)
        }
        other => panic!("past the cap again: {:?}", other.map(|_| ())),
    }
}

/// DynamoDB round trips of each live operation, counted by the SDK interceptor (the figures
/// docs/capacity.md uses).
#[tokio::test]
async fn live_round_trips() {
    use bouquet_app::live;
    let cloud = TestCloud::new().await;
    let queues = cloud.fanout_queues().await;
    let app = &cloud.app;
    let now = app.clock.now();
    let limit = live::ConnectionLimit {
        key: "ip:192.0.2.1".into(),
        cap: 10,
    };
    let buyer = Viewer::Customer(bouquet_app::domain::CustomerId::parse("buyer").unwrap());

    cloud.calls.reset();
    live::connect(app, "c-1", &buyer, Some(&limit), now)
        .await
        .unwrap();
    cloud.assert_calls(&[("TransactWriteItems", 1)], "connect");

    cloud.calls.reset();
    let channels = vec!["catalogue".to_owned(), "orders".to_owned()];
    live::subscribe(app, "c-1", &buyer, &channels, None, now)
        .await
        .unwrap();
    cloud.assert_calls(
        &[
            ("GetItem", 1),
            ("BatchGetItem", 1),
            ("UpdateItem", 1),
            ("TransactWriteItems", 1),
        ],
        "subscribe (a container's first: it reads the shard counts and leases its catalogue shard)",
    );
    live::connect(app, "c-2", &buyer, Some(&limit), now)
        .await
        .unwrap();
    cloud.calls.reset();
    live::subscribe(app, "c-2", &buyer, &channels, None, now)
        .await
        .unwrap();
    let shards = bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS;
    let same_shard = bouquet_app::store::placement("c-2", shards)
        == bouquet_app::store::placement("c-1", shards);
    let mut expected = vec![("GetItem", 1), ("TransactWriteItems", 1)];
    if !same_shard {
        expected.push(("UpdateItem", 1));
    }
    cloud.assert_calls(
        &expected,
        "subscribe (counts cached; a lease only for a shard this container has not leased)",
    );

    // An order event: the customer's channel pushed at once (its count and its one shard),
    // the public ones planned (their counts, then the units in batches of ten).
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let detail = json!({ "eventId": "e-1", "data": { "customerId": "buyer", "vendorId": vendor, "bouquetIds": [bouquet] } });
    cloud.calls.reset();
    let pusher = Recorder::default();
    let report = live::broadcast(
        app,
        &pusher,
        queues.work_queue().as_ref(),
        "OrderPaid",
        &detail,
    )
    .await
    .unwrap();
    assert_eq!(
        report.queued,
        if same_shard { 1 } else { 2 },
        "the catalogue's occupied shards (c-1's and c-2's); nobody watches the bouquet's channel"
    );
    cloud.assert_calls(&[("BatchGetItem", 2), ("Query", 2)], "plan: the bouquets the public frames carry, the public channels' counts and leases at once; per private channel (orders, vendor) its one shard");
    assert_eq!(pusher.sent(), 2, "the buyer's two connections on orders");

    // One unit: one Query of its shard, then the pushes.
    let unit = bouquet_app::live::PushUnit {
        channel: "catalogue".into(),
        shard: Some(bouquet_app::live::ShardRef {
            index: 0,
            of: bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS,
        }),
        connections: vec![],
        frames: vec![],
    };
    cloud.calls.reset();
    live::fan_out(
        app,
        &pusher,
        queues.work_queue().as_ref(),
        vec![("m".into(), bouquet_app::live::Work::Push(unit))],
    )
    .await;
    cloud.assert_calls(&[("Query", 1)], "a unit");

    cloud.calls.reset();
    live::disconnect(app, "c-1").await.unwrap();
    cloud.assert_calls(
        &[
            ("GetItem", 1),
            ("BatchWriteItem", 1),
            ("TransactWriteItems", 1),
        ],
        "disconnect (subscriptions; the connection and its slot, at once)",
    );
}

/// Counts what it is asked to push; every push succeeds.
#[derive(Default)]
struct Recorder(AtomicUsize);

impl Recorder {
    fn sent(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Pusher for Recorder {
    async fn post(&self, _: &str, _: &[u8]) -> Result<(), PushError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
