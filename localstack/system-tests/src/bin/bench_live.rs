//! `cargo build --release -p system-tests --bin bench-live`, then with the emulator running:
//!
//! - `target/release/bench-live chain [EVENTS [SUBSCRIBERS]]`: commit to browser through the
//!   whole chain. For 1, 100 and 1,000 WebSocket clients on `bouquet:{id}`, EVENTS (default
//!   200) edits of the bouquet, one after another. The clock starts when the edit's response
//!   arrives (its transaction, with the `BouquetChanged` outbox item, has committed) and stops
//!   when a client reads the frame of that version: the table's stream, the publisher, the bus,
//!   the template's live rule, `broadcast-events`, `@connections`, the socket.
//! - `target/release/bench-live fanout [EVENTS [SUBSCRIBERS]]`: the broadcaster alone. Each
//!   freshness event is handed to `broadcast-events` as the live rule delivers it; the clock
//!   runs from that hand-off to the frame on each socket.
//!
//! Both print p50/p99 per frame and of the last subscriber per event.

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
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "fanout".into());
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
/// once); each records when it reads a frame, keyed by the frame's event version.
async fn clients(address: SocketAddr, channel: &str, count: usize) -> (Arrivals, Duration) {
    let arrivals: Arrivals = Arc::default();
    let started = Instant::now();
    futures::stream::iter(0..count)
        .map(|_| {
            let arrivals = arrivals.clone();
            let channel = channel.to_owned();
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
                        let at = Instant::now();
                        let frame: Value = serde_json::from_str(&text).unwrap();
                        let key = format!("v{}", frame["event"]["aggregateVersion"]);
                        arrivals.lock().unwrap().entry(key).or_default().push(at);
                    }
                });
            }
        })
        .buffer_unordered(50)
        .count()
        .await;
    (arrivals, started.elapsed())
}

/// Waits (up to 10 s) until `count` clients read the frame `key`; their times.
async fn arrived(arrivals: &Arrivals, key: &str, count: usize) -> Vec<Instant> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let complete = arrivals
            .lock()
            .unwrap()
            .get(key)
            .is_some_and(|a| a.len() >= count);
        if complete || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
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
            assert_eq!(report["delivered"], subscribers, "{report}");
            handed
        };
        let times = arrived(&arrivals, &format!("v{version}"), subscribers).await;
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
