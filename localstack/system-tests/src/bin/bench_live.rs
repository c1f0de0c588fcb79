//! `cargo run --release -p system-tests --bin bench-live [-- EVENTS [SUBSCRIBERS]]`:
//! live-update fan-out latency on the emulator; `-- chain [EVENTS]`: commit-to-browser
//! latency through the whole chain.
//!
//! Fan-out: For 1, 100 and 1,000 WebSocket clients subscribed to one
//! channel (`bouquet:{id}`), EVENTS (default 200) freshness events are each handed to
//! `broadcast-events` as the live rule delivers them; the clock starts at that hand-off and
//! stops when a client reads the frame from its socket. It prints p50/p99 per frame and of
//! the last subscriber per event.
//!
//! Chain: one anonymous client on `bouquet:{id}`; EVENTS (default 200) edits of the bouquet,
//! one after another; the clock starts when the edit's response arrives (its transaction,
//! with the `BouquetChanged` outbox item, has committed) and stops when the frame with that
//! version is read: the table's stream, the publisher, the bus, the template's live rule, the
//! broadcaster and the socket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use bouquet_app::realtime::ApiGatewayPusher;
use bouquet_template::Template;
use devstack::websocket::{Limits, LocalWebSocketApi};
use system_tests::in_process::run_event_function;
use system_tests::{emulator_sdk_config, TestCloud};

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
    if std::env::args().nth(1).as_deref() == Some("chain") {
        let events = std::env::args()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(200);
        return chain(events).await;
    }
    let events: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    // Optionally one subscriber count only, e.g. `bench-live 20 1000`.
    let counts: Vec<usize> = match std::env::args().nth(2).and_then(|n| n.parse().ok()) {
        Some(count) => vec![count],
        None => vec![1, 100, 1000],
    };
    println!("| subscribers | events | frames | frame p50 | frame p99 | last subscriber p50 | last subscriber p99 | broadcast call p50 | connect + subscribe, all |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for subscribers in counts {
        run(subscribers, events).await;
    }
}

async fn run(subscribers: usize, events: usize) {
    let cloud = TestCloud::new().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let mut functions = cloud.in_process(cloud.app.clone());
    functions.pusher = Some(Arc::new(ApiGatewayPusher::new(
        &emulator_sdk_config().await,
        &format!("http://{address}"),
    )));
    let api = LocalWebSocketApi::from_template(
        &Template::repository().unwrap(),
        &functions,
        Limits::default(),
    )
    .unwrap()
    .unwrap();
    tokio::spawn(api.serve_on(listener));
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let channel = format!("bouquet:{bouquet}");

    // Connect and subscribe every client (at most 50 handshakes at once).
    let arrivals: Arrivals = Arc::default();
    let started = Instant::now();
    let ready = futures::stream::iter(0..subscribers)
        .map(|_| {
            let arrivals = arrivals.clone();
            let channel = channel.clone();
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
                        let frame: serde_json::Value = serde_json::from_str(&text).unwrap();
                        if let Some(id) = frame["event"]["eventId"].as_str() {
                            arrivals
                                .lock()
                                .unwrap()
                                .entry(id.to_owned())
                                .or_default()
                                .push(at);
                        }
                    }
                });
            }
        })
        .buffer_unordered(50)
        .count()
        .await;
    let setup = started.elapsed();
    assert_eq!(ready, subscribers);

    let mut per_frame = Vec::new();
    let mut last = Vec::new();
    let mut calls = Vec::new();
    for version in 0..events {
        let event_id = ulid::Ulid::new().to_string();
        let event = json!({
            "detail-type": "BouquetFreshnessChanged", "source": "bouquet.marketplace",
            "detail": {
                "eventId": event_id, "aggregateId": bouquet, "aggregateVersion": version + 2,
                "occurredAt": "2026-12-03T00:00:00.000Z", "correlationId": "bench-live",
                "data": { "bouquetId": bouquet, "vendorId": vendor, "vaseId": bouquet, "previous": 90, "freshness": 85, "measuredAt": "2026-12-03T00:00:00.000Z" },
            },
        });
        let handed = Instant::now();
        let report = run_event_function("broadcast-events", &functions, event)
            .await
            .expect("broadcast");
        calls.push(handed.elapsed());
        assert_eq!(report["delivered"], subscribers, "{report}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let complete = arrivals
                .lock()
                .unwrap()
                .get(&event_id)
                .is_some_and(|a| a.len() == subscribers);
            if complete || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let times = arrivals
            .lock()
            .unwrap()
            .remove(&event_id)
            .unwrap_or_default();
        assert_eq!(
            times.len(),
            subscribers,
            "every subscriber got the frame once"
        );
        let mut latencies: Vec<Duration> = times.iter().map(|t| t.duration_since(handed)).collect();
        latencies.sort();
        last.push(*latencies.last().unwrap());
        per_frame.extend(latencies);
    }
    per_frame.sort();
    last.sort();
    calls.sort();
    println!(
        "| {subscribers} | {events} | {} | {} | {} | {} | {} | {} | {} |",
        per_frame.len(),
        ms(percentile(&per_frame, 0.5)),
        ms(percentile(&per_frame, 0.99)),
        ms(percentile(&last, 0.5)),
        ms(percentile(&last, 0.99)),
        ms(percentile(&calls, 0.5)),
        ms(setup),
    );
}

async fn chain(events: usize) {
    use system_tests::ApiRequest;
    let cloud = TestCloud::new().await;
    // Events carry the commit time: keep the wall clock.
    let live = cloud.live(None).await;
    live.start_chain(&cloud).await;
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{}/", live.address))
        .await
        .unwrap();
    socket
        .send(Message::text(
            json!({"action": "subscribe", "channels": [format!("bouquet:{bouquet}")]}).to_string(),
        ))
        .await
        .unwrap();
    let _subscribed = socket.next().await;
    // The listing's own event may still come: skip frames until the first edit's version.
    let mut latencies = Vec::new();
    for edit in 0..events {
        let version = edit as u64 + 1;
        let response = cloud
            .call(
                "update-bouquet",
                ApiRequest::fixture("update-bouquet")
                    .vendor(&vendor)
                    .path("bouquetId", &bouquet)
                    .header("if-match", &format!("\"{version}\""))
                    .json(json!({ "name": format!("Peonies {edit}") })),
            )
            .await;
        assert_eq!(response.status, 200, "{}", response.body);
        let committed = Instant::now();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
                .await
                .expect("the frame arrives within 10 s")
                .unwrap()
                .unwrap();
            let frame: serde_json::Value = serde_json::from_str(frame.to_text().unwrap()).unwrap();
            if frame["event"]["name"] == "BouquetChanged"
                && frame["event"]["aggregateVersion"] == version + 1
            {
                latencies.push(committed.elapsed());
                break;
            }
        }
    }
    latencies.sort();
    println!("| chain: commit -> frame | events | p50 | p99 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| 1 subscriber, bouquet:{{id}} | {events} | {} | {} | {} |",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap()),
    );
}
