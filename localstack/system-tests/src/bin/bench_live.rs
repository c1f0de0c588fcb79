//! `cargo build --release -p system-tests --bin bench-live`, then with the emulator running:
//!
//! - `target/release/bench-live chain [EVENTS [SUBSCRIBERS]]`: commit to browser through the
//!   whole chain. For 1, 100 and 1,000 WebSocket clients on `bouquet:{id}`, EVENTS (default
//!   200) edits of the bouquet, one after another. The clock starts when the edit's response
//!   arrives (its transaction, with the `BouquetChanged` outbox item, has committed) and stops
//!   when a client reads the frame of that version: the table's stream, the publisher, the bus,
//!   the template's live rule, `broadcast-events`, `@connections`, the socket.
//! - `target/release/bench-live fanout [EVENTS [SUBSCRIBERS]]`: the broadcaster and its
//!   workers. Each freshness event is handed to `broadcast-events` as the live rule delivers
//!   it (it queues the units `push-frames` pushes); the clock runs from that hand-off to the
//!   frame on each socket.
//!
//! - `target/release/bench-live crowd [EVENTS [SUBSCRIBERS]]`: a crowd on `catalogue` (10,000
//!   unless SUBSCRIBERS says otherwise; 1,000 and 10,000 by default) and one customer on
//!   `orders`, through the whole chain with the fan-out workers. The customer reserves and
//!   cancels a bouquet EVENTS times (default 50); each `OrderReserved` and `OrderCancelled`
//!   goes to the crowd (a unit per catalogue shard, pushed by `push-frames`) and to the
//!   customer (pushed by the planner). The clock starts when the request's response arrives.
//!   The crowd's sockets live in a child process (`crowd-clients`): one process may not hold
//!   10,000 sockets on both ends under this machine's open-file limit.
//!
//! All print p50/p99 per frame and of the last subscriber per event.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use system_tests::in_process::run_event_function;
use system_tests::{ApiRequest, TestCloud};

/// Frames read, by the key of the event they carry: when each client read it.
type Arrivals = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    // RUST_LOG=info shows each broadcast's read and push times.
    system_tests::log_to_stderr();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "fanout".into());
    if mode == "crowd-clients" {
        return crowd_clients().await;
    }
    if mode == "crowd" {
        let events: usize = std::env::args()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(50);
        let counts: Vec<usize> = match std::env::args().nth(3).and_then(|n| n.parse().ok()) {
            Some(count) => vec![count],
            None => vec![1_000, 10_000],
        };
        println!("| crowd on catalogue | events | crowd frames | crowd frame p50 | crowd frame p99 | last of crowd p50 | last of crowd p99 | customer frames | customer p50 | customer p99 | connect + subscribe, all | catalogue frame bytes |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for subscribers in counts {
            crowd(subscribers, events).await;
        }
        return;
    }
    let events: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let counts: Vec<usize> = match std::env::args().nth(3).and_then(|n| n.parse().ok()) {
        Some(count) => vec![count],
        None => vec![1, 100, 1000],
    };
    println!("| {mode} | subscribers | events | frames | frame p50 | frame p99 | last subscriber p50 | last subscriber p99 | connect + subscribe, all |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for subscribers in counts {
        run(&mode, subscribers, events).await;
    }
}

/// Connects `count` anonymous clients subscribed to `channel` (at most 50 handshakes at
/// once); each calls `read` with every frame it reads and its text. Returns when all are
/// subscribed.
async fn subscribed_clients<F>(address: SocketAddr, channel: &str, count: usize, read: F)
where
    F: Fn(&Value, &str) + Clone + Send + 'static,
{
    futures::stream::iter(0..count)
        .map(|_| {
            let (read, channel) = (read.clone(), channel.to_owned());
            async move {
                let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{address}/"))
                    .await
                    .expect("connect");
                socket
                    .send(Message::text(
                        json!({"action": "subscribe", "channels": [channel]}).to_string(),
                    ))
                    .await
                    .unwrap();
                // The route response confirms the subscription.
                let _subscribed = socket.next().await;
                tokio::spawn(async move {
                    while let Some(Ok(Message::Text(text))) = socket.next().await {
                        let frame: Value = serde_json::from_str(&text).unwrap();
                        read(&frame, &text);
                    }
                });
            }
        })
        .buffer_unordered(50)
        .count()
        .await;
}

/// Clients on `channel` recording when they read a frame, keyed by the frame's event version.
async fn clients(address: SocketAddr, channel: &str, count: usize) -> (Arrivals, Duration) {
    let arrivals: Arrivals = Arc::default();
    let started = Instant::now();
    let recorded = arrivals.clone();
    subscribed_clients(address, channel, count, move |frame, _| {
        let at = Instant::now();
        let key = format!("v{}", frame["event"]["aggregateVersion"]);
        recorded.lock().unwrap().entry(key).or_default().push(at);
    })
    .await;
    (arrivals, started.elapsed())
}

/// Waits (up to `wait`) until `count` clients read the frame `key`; when each did. (The
/// stamps are taken by the clients: how often this looks does not change them.)
async fn arrived<T>(
    arrivals: &Arc<Mutex<HashMap<String, Vec<T>>>>,
    key: &str,
    count: usize,
    wait: Duration,
) -> Vec<T> {
    let deadline = Instant::now() + wait;
    loop {
        let complete = arrivals
            .lock()
            .unwrap()
            .get(key)
            .is_some_and(|a| a.len() >= count);
        if complete || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    let times = arrivals.lock().unwrap().remove(key).unwrap_or_default();
    assert_eq!(times.len(), count, "every subscriber got frame {key} once");
    times
}

async fn run(mode: &str, subscribers: usize, events: usize) {
    let cloud = TestCloud::new().await;
    let live = cloud.live(None).await;
    if mode == "chain" {
        live.start_chain(&cloud).await;
    }
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let (arrivals, setup) = clients(live.address, &format!("bouquet:{bouquet}"), subscribers).await;
    if mode == "chain" {
        // The listing's own frame may still be on its way: let it arrive and drop it.
        tokio::time::sleep(Duration::from_secs(1)).await;
        arrivals.lock().unwrap().clear();
    }

    let mut per_frame = Vec::new();
    let mut last = Vec::new();
    for n in 0..events {
        let version = n as u64 + 2;
        let started = if mode == "chain" {
            let response = cloud
                .call(
                    "update-bouquet",
                    ApiRequest::fixture("update-bouquet")
                        .vendor(&vendor)
                        .path("bouquetId", &bouquet)
                        .header("if-match", &format!("\"{}\"", version - 1))
                        .json(json!({ "name": format!("Peonies {n}") })),
                )
                .await;
            assert_eq!(response.status, 200, "{}", response.body);
            Instant::now()
        } else {
            let event = json!({
                "detail-type": "BouquetFreshnessChanged", "source": "bouquet.marketplace",
                "detail": {
                    "eventId": ulid::Ulid::new().to_string(), "aggregateId": bouquet, "aggregateVersion": version,
                    "occurredAt": "2026-12-03T00:00:00.000Z", "correlationId": "bench-live",
                    "data": { "bouquetId": bouquet, "vendorId": vendor, "vaseId": bouquet, "previous": 90, "freshness": 85, "measuredAt": "2026-12-03T00:00:00.000Z" },
                },
            });
            let handed = Instant::now();
            let report = run_event_function("broadcast-events", &live.functions, event)
                .await
                .expect("broadcast");
            // The planner queues the public channel's units; the workers push them (below,
            // each subscriber's frame is waited for).
            assert!(report["queued"].as_u64() > Some(0), "{report}");
            handed
        };
        let times = arrived(
            &arrivals,
            &format!("v{version}"),
            subscribers,
            Duration::from_secs(10),
        )
        .await;
        let mut latencies: Vec<Duration> =
            times.iter().map(|t| t.duration_since(started)).collect();
        latencies.sort();
        last.push(*latencies.last().unwrap());
        per_frame.extend(latencies);
    }
    per_frame.sort();
    last.sort();
    println!(
        "| {mode} | {subscribers} | {events} | {} | {} | {} | {} | {} | {} |",
        per_frame.len(),
        ms(percentile(&per_frame, 0.5)),
        ms(percentile(&per_frame, 0.99)),
        ms(percentile(&last, 0.5)),
        ms(percentile(&last, 0.99)),
        ms(setup),
    );
}

/// Microseconds since the epoch: the crowd's arrivals are stamped in another process.
fn wall_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// The key a frame is measured by: its event and bouquet (public order frames carry no order
/// id, and the crowd and the customer see the same two keys).
fn frame_key(frame: &Value) -> Option<String> {
    let event = &frame["event"];
    Some(format!(
        "{}:{}",
        event["name"].as_str()?,
        event["data"]["bouquetIds"][0].as_str()?
    ))
}

/// The child: `crowd-clients ADDRESS COUNT` connects COUNT anonymous clients on `catalogue`,
/// prints `ready`, then a line `KEY MICROS BYTES` per frame read.
async fn crowd_clients() {
    let address: SocketAddr = std::env::args().nth(2).unwrap().parse().unwrap();
    let count: usize = std::env::args().nth(3).unwrap().parse().unwrap();
    let (lines, mut out) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sender = lines.clone();
    subscribed_clients(address, "catalogue", count, move |frame, text| {
        let at = wall_micros();
        if let Some(key) = frame_key(frame) {
            let _ = sender.send(format!("{key} {at} {}", text.len()));
        }
    })
    .await;
    drop(lines);
    use std::io::Write;
    let stdout = std::io::stdout();
    writeln!(stdout.lock(), "ready").unwrap();
    while let Some(line) = out.recv().await {
        let mut lock = stdout.lock();
        if writeln!(lock, "{line}").is_err() {
            return;
        }
        let _ = lock.flush();
    }
}

type WallArrivals = Arc<Mutex<HashMap<String, Vec<u64>>>>;

async fn crowd(subscribers: usize, events: usize) {
    use tokio::io::AsyncBufReadExt;
    let mut cloud = TestCloud::new().await;
    // One machine plays the whole crowd: from one address, so its cap is lifted here.
    cloud.app.config.max_connections_per_ip = 1_000_000;
    // One customer reserves and cancels every event's bouquet in a row: its per-minute
    // reservation limit (an abuse limit, not what this measures) is lifted here.
    cloud.app.config.reservations_per_minute = u32::MAX;
    let live = cloud.live(None).await;
    live.start_chain(&cloud).await;
    let vendor = cloud.vendor("Bloom").await;
    let mut bouquets = Vec::new();
    for _ in 0..events {
        bouquets.push(cloud.bouquet(&vendor, "10.00").await);
    }

    // The crowd, in its own process.
    let setup = Instant::now();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "crowd-clients",
            &live.address.to_string(),
            &subscribers.to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the crowd's process");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
    let setup = setup.elapsed();
    let crowd: WallArrivals = Arc::default();
    let frame_bytes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader = {
        let (crowd, frame_bytes) = (crowd.clone(), frame_bytes.clone());
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut fields = line.split(' ');
                if let (Some(key), Some(at), Some(bytes)) =
                    (fields.next(), fields.next(), fields.next())
                {
                    frame_bytes.store(bytes.parse().unwrap(), std::sync::atomic::Ordering::Relaxed);
                    crowd
                        .lock()
                        .unwrap()
                        .entry(key.to_owned())
                        .or_default()
                        .push(at.parse().unwrap());
                }
            }
        })
    };
    // The customer, here.
    let token = devstack::jwt::mint(
        &devstack::jwt::secret_from_env(),
        "customer",
        "crowd-customer",
        None,
        3600,
    )
    .unwrap();
    let (mut socket, _) =
        tokio_tungstenite::connect_async(format!("ws://{}/?token={token}", live.address))
            .await
            .unwrap();
    socket
        .send(Message::text(
            json!({"action": "subscribe", "channels": ["orders"]}).to_string(),
        ))
        .await
        .unwrap();
    let _subscribed = socket.next().await;
    let customer: WallArrivals = Arc::default();
    {
        let customer = customer.clone();
        tokio::spawn(async move {
            while let Some(Ok(Message::Text(text))) = socket.next().await {
                let at = wall_micros();
                let frame: Value = serde_json::from_str(&text).unwrap();
                if let Some(key) = frame_key(&frame) {
                    customer.lock().unwrap().entry(key).or_default().push(at);
                }
            }
        });
    }
    // The listings' own frames are on their way: let them pass.
    tokio::time::sleep(Duration::from_secs(3)).await;
    crowd.lock().unwrap().clear();

    let (mut crowd_frames, mut crowd_last, mut own) = (Vec::new(), Vec::new(), Vec::new());
    for bouquet in &bouquets {
        let response = cloud.reserve("crowd-customer", &[bouquet]).await;
        let reserved = wall_micros();
        assert_eq!(response.status, 201, "{}", response.body);
        let order = response.body["orderId"].as_str().unwrap().to_owned();
        let key = format!("OrderReserved:{bouquet}");
        let mine = arrived(&customer, &key, 1, Duration::from_secs(20)).await;
        own.push(Duration::from_micros(mine[0].saturating_sub(reserved)));
        let mut latencies: Vec<Duration> =
            arrived(&crowd, &key, subscribers, Duration::from_secs(20))
                .await
                .iter()
                .map(|t| Duration::from_micros(t.saturating_sub(reserved)))
                .collect();
        latencies.sort();
        bouquet_app::tracing::info!(event = %key, customer = ?own.last(), last_of_crowd = ?latencies.last(), "measured");
        crowd_last.push(*latencies.last().unwrap());
        crowd_frames.extend(latencies);

        let response = cloud
            .call(
                "cancel-order",
                ApiRequest::fixture("cancel-order")
                    .customer("crowd-customer")
                    .path("orderId", &order),
            )
            .await;
        let cancelled = wall_micros();
        assert_eq!(response.status, 200, "{}", response.body);
        let key = format!("OrderCancelled:{bouquet}");
        let mine = arrived(&customer, &key, 1, Duration::from_secs(20)).await;
        own.push(Duration::from_micros(mine[0].saturating_sub(cancelled)));
        let mut latencies: Vec<Duration> =
            arrived(&crowd, &key, subscribers, Duration::from_secs(20))
                .await
                .iter()
                .map(|t| Duration::from_micros(t.saturating_sub(cancelled)))
                .collect();
        latencies.sort();
        bouquet_app::tracing::info!(event = %key, customer = ?own.last(), last_of_crowd = ?latencies.last(), "measured");
        crowd_last.push(*latencies.last().unwrap());
        crowd_frames.extend(latencies);
    }
    crowd_frames.sort();
    crowd_last.sort();
    own.sort();
    println!(
        "| {subscribers} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        crowd_last.len(),
        crowd_frames.len(),
        ms(percentile(&crowd_frames, 0.5)),
        ms(percentile(&crowd_frames, 0.99)),
        ms(percentile(&crowd_last, 0.5)),
        ms(percentile(&crowd_last, 0.99)),
        own.len(),
        ms(percentile(&own, 0.5)),
        ms(percentile(&own, 0.99)),
        ms(setup),
        frame_bytes.load(std::sync::atomic::Ordering::Relaxed),
    );
    reader.abort();
    let _ = child.kill().await;
}
