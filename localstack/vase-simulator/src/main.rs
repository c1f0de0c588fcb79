//! `vase-simulator`: a smart vase on the command line.
//!
//! It connects exactly as to IoT Core: MQTT over TLS with the vase's certificate and key (the
//! files from `POST /v1/vendors/{vendorId}/vases`), client id = the vase id.
//! Locally: `--cert vase.pem --key vase.key --ca <the emulator's ca.pem>` to the dev stack's
//! Mosquitto (`--broker`, 127.0.0.1:8883; `devstack up` prints the whole command for its demo
//! vase). On AWS: `--endpoint <iotEndpoint> ... --ca AmazonRootCA1.pem` (port 8883).
//!
//! It publishes `vases/{id}/heartbeat` and `vases/{id}/telemetry` (docs/contract.md, Vase MQTT) with
//! QoS 1 on its intervals, following a scenario, and prints every message and what became
//! of it.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use rumqttc::{
    AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS, TlsConfiguration, Transport,
};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Scenario {
    /// Full water, room temperature, indirect light, every heartbeat on time.
    Healthy,
    /// The water level falls with each reading until the vase is dry.
    DryingOut,
    /// Three heartbeats, then nothing: the vase goes offline after the threshold.
    GoingSilent,
    /// Disconnects for a while every few heartbeats, then comes back.
    Flapping,
    /// The water falls from 80 % to 5 % in a minute: a `water_low` alert (below 25 %) and
    /// freshness under 80 (the first markdown step). Water alone costs at most 30 points.
    Dry,
    /// The room heats from 18.5 to 32 °C in a minute and its air dries (60 % to 27 %
    /// humidity): a `too_hot` alert (above 24 °C) and freshness under 80.
    Hot,
    /// Everything at once in a minute: the vase empties, 32 °C, 20 % humidity, direct sun
    /// (40,000 lux): `water_low`, `too_hot` and `too_bright`, freshness through 80 and 60 to
    /// 30, and under 30 ("past its best") for a bouquet listed more than 1 h 41 min ago.
    Ageing,
}

/// What a vase reads: water %, °C, humidity %, lux.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Conditions {
    water: f64,
    temperature: f64,
    humidity: f64,
    light: f64,
}

impl std::fmt::Display for Conditions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "water {} %, {} °C, humidity {} %, {} lux",
            self.water, self.temperature, self.humidity, self.light
        )
    }
}

/// Full water, room temperature, indirect light: a score of 100 at listing.
const STEADY: Conditions = Conditions {
    water: 80.0,
    temperature: 18.5,
    humidity: 60.0,
    light: 800.0,
};

/// How long `dry`, `hot` and `ageing` take to go from [`STEADY`] to their end.
const RAMP_SECONDS: f64 = 60.0;

impl Scenario {
    /// Where a ramp scenario ends up after [`RAMP_SECONDS`], and stays.
    fn ramp_end(self) -> Option<Conditions> {
        match self {
            Scenario::Dry => Some(Conditions {
                water: 5.0,
                ..STEADY
            }),
            Scenario::Hot => Some(Conditions {
                temperature: 32.0,
                // The same air holds 27 % relative humidity at 32 °C as 60 % at 18.5 °C.
                humidity: 27.0,
                ..STEADY
            }),
            Scenario::Ageing => Some(Conditions {
                water: 0.0,
                temperature: 32.0,
                humidity: 20.0,
                light: 40_000.0,
            }),
            Scenario::Healthy
            | Scenario::DryingOut
            | Scenario::GoingSilent
            | Scenario::Flapping => None,
        }
    }

    /// Seconds between readings unless `--telemetry-every` says otherwise: a ramp scenario
    /// reads every 5 s so its minute shows.
    fn telemetry_every(self) -> f64 {
        if self.ramp_end().is_some() {
            5.0
        } else {
            300.0
        }
    }
}

#[derive(Parser, Debug)]
#[command(about = "Behaves like a smart vase over MQTT")]
struct Args {
    /// The vase id: the thing name and MQTT client id.
    #[arg(long)]
    vase_id: String,
    /// host:port of the local cloud's broker.
    #[arg(long, default_value = "127.0.0.1:8883", conflicts_with = "endpoint")]
    broker: String,
    /// AWS IoT Core data endpoint (`iotEndpoint` from registration), port 8883.
    #[arg(long)]
    endpoint: Option<String>,
    /// The vase's certificate (PEM), from registration.
    #[arg(long)]
    cert: std::path::PathBuf,
    /// The vase's private key (PEM), from registration.
    #[arg(long)]
    key: std::path::PathBuf,
    /// The CA that signs the broker's certificate: Amazon Root CA 1, or locally the
    /// emulator's `ca.pem`.
    #[arg(long)]
    ca: std::path::PathBuf,
    /// Seconds between heartbeats.
    #[arg(long, default_value_t = 60.0)]
    heartbeat_every: f64,
    /// Seconds between readings [default: 300; 5 for dry, hot and ageing].
    #[arg(long)]
    telemetry_every: Option<f64>,
    #[arg(long, value_enum, default_value_t = Scenario::Healthy)]
    scenario: Scenario,
    /// Stop after this many messages (default: run until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
}

/// What the scenario has the vase do at its `beat`-th heartbeat.
fn online_at(scenario: Scenario, beat: u64) -> bool {
    match scenario {
        Scenario::Healthy
        | Scenario::DryingOut
        | Scenario::Dry
        | Scenario::Hot
        | Scenario::Ageing => true,
        Scenario::GoingSilent => beat < 3,
        // Five beats on, three off.
        Scenario::Flapping => beat % 8 < 5,
    }
}

/// The `n`-th reading of a scenario whose readings are `every` seconds apart.
fn reading(scenario: Scenario, n: u64, every: f64) -> Value {
    let at = match scenario.ramp_end() {
        // A straight line from steady to the end over the ramp's minute, then the end.
        Some(end) => {
            let p = (n as f64 * every / RAMP_SECONDS).clamp(0.0, 1.0);
            let towards = |from: f64, to: f64| ((from + (to - from) * p) * 10.0).round() / 10.0;
            Conditions {
                water: towards(STEADY.water, end.water),
                temperature: towards(STEADY.temperature, end.temperature),
                humidity: towards(STEADY.humidity, end.humidity),
                light: towards(STEADY.light, end.light),
            }
        }
        None => Conditions {
            water: match scenario {
                Scenario::DryingOut => (80.0 - 8.0 * n as f64).max(0.0),
                _ => 80.0 - (n % 3) as f64,
            },
            ..STEADY
        },
    };
    json!({
        "sentAt": now(),
        "waterLevelPct": at.water,
        "temperatureC": at.temperature,
        "humidityPct": at.humidity,
        "lightLux": at.light,
    })
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn options(args: &Args) -> Result<MqttOptions, String> {
    let (host, port) = match &args.endpoint {
        Some(endpoint) => (endpoint.as_str(), 8883),
        None => {
            let (host, port) = args
                .broker
                .rsplit_once(':')
                .ok_or("--broker must be host:port")?;
            (
                host,
                port.parse().map_err(|_| "--broker port must be a number")?,
            )
        }
    };
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut options = MqttOptions::new(&args.vase_id, host, port);
    options.set_transport(Transport::Tls(TlsConfiguration::Simple {
        ca: read(&args.ca)?,
        alpn: None,
        client_auth: Some((read(&args.cert)?, read(&args.key)?)),
    }));
    options.set_keep_alive(Duration::from_secs(30));
    Ok(options)
}

#[tokio::main]
async fn main() -> Result<(), String> {
    // rumqttc's TLS uses whichever rustls provider is installed: the SDK's aws-lc-rs.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let args = Args::parse();
    let (client, mut events) = AsyncClient::new(options(&args)?, 64);
    let prefix = format!("vases/{}", args.vase_id);
    let telemetry_every = args
        .telemetry_every
        .unwrap_or(args.scenario.telemetry_every());
    println!(
        "vase {} ({:?}): heartbeat every {} s, telemetry every {} s",
        args.vase_id, args.scenario, args.heartbeat_every, telemetry_every
    );
    if let Some(end) = args.scenario.ramp_end() {
        println!("  from {STEADY}\n  to {end} over {RAMP_SECONDS} s, then steady there");
    }

    // Connect first: a refused vase (not registered, wrong client id) says so and stops.
    loop {
        match events.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                println!("connected ({:?})", ack.code);
                break;
            }
            Ok(_) => {}
            Err(error) => return Err(format!("connection refused or failed: {error}")),
        }
    }

    let mut heartbeat = tokio::time::interval(Duration::from_secs_f64(args.heartbeat_every));
    let mut telemetry = tokio::time::interval(Duration::from_secs_f64(telemetry_every));
    let (mut beats, mut readings, mut sent, mut acknowledged) = (0u64, 0u64, 0u64, 0u64);
    let mut connected = true;
    loop {
        if args.count.is_some_and(|c| sent >= c) {
            // Wait for the broker to acknowledge everything, then leave cleanly.
            let waited = tokio::time::timeout(Duration::from_secs(5), async {
                while acknowledged < sent {
                    match events.poll().await {
                        Ok(Event::Incoming(Packet::PubAck(_))) => acknowledged += 1,
                        Ok(_) => {}
                        Err(error) => return Err(format!("connection: {error}")),
                    }
                }
                Ok(())
            })
            .await;
            println!("sent {sent} messages, {acknowledged} acknowledged; disconnecting");
            waited.map_err(|_| "not every message was acknowledged within 5 s".to_owned())??;
            let _ = client.disconnect().await;
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                while let Ok(event) = events.poll().await {
                    if matches!(event, Event::Outgoing(Outgoing::Disconnect)) {
                        break;
                    }
                }
            })
            .await;
            return Ok(());
        }
        tokio::select! {
            _ = heartbeat.tick() => {
                let online = online_at(args.scenario, beats);
                beats += 1;
                if !online {
                    if connected {
                        println!("(scenario {:?}: going quiet)", args.scenario);
                        connected = false;
                    }
                    continue;
                }
                connected = true;
                let body = json!({ "sentAt": now() });
                publish(&client, &format!("{prefix}/heartbeat"), &body).await?;
                sent += 1;
            }
            _ = telemetry.tick() => {
                if !online_at(args.scenario, beats.saturating_sub(1)) {
                    continue;
                }
                let body = reading(args.scenario, readings, telemetry_every);
                readings += 1;
                publish(&client, &format!("{prefix}/telemetry"), &body).await?;
                sent += 1;
            }
            event = events.poll() => match event {
                Ok(Event::Incoming(Packet::ConnAck(ack))) => println!("connected ({:?})", ack.code),
                Ok(Event::Incoming(Packet::PubAck(ack))) => {
                    acknowledged += 1;
                    println!("  acknowledged (packet {})", ack.pkid);
                }
                Ok(_) => {}
                Err(error) => return Err(format!("connection: {error}")),
            },
            _ = tokio::signal::ctrl_c() => {
                println!("stopping");
                let _ = client.disconnect().await;
                return Ok(());
            }
        }
    }
}

async fn publish(client: &AsyncClient, topic: &str, body: &Value) -> Result<(), String> {
    println!("-> {topic} {body}");
    client
        .publish(topic, QoS::AtLeastOnce, false, body.to_string())
        .await
        .map_err(|e| format!("publish: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_shape_the_messages() {
        assert!((0..20).all(|b| online_at(Scenario::Healthy, b)));
        assert_eq!(
            (0..6)
                .map(|b| online_at(Scenario::GoingSilent, b))
                .collect::<Vec<_>>(),
            [true, true, true, false, false, false]
        );
        assert_eq!(
            (0..16)
                .filter(|b| online_at(Scenario::Flapping, *b))
                .count(),
            10
        );
        let water: Vec<f64> = (0..12)
            .map(|n| {
                reading(Scenario::DryingOut, n, 300.0)["waterLevelPct"]
                    .as_f64()
                    .unwrap_or(-1.0)
            })
            .collect();
        assert!(water.windows(2).all(|w| w[1] <= w[0]));
        assert_eq!(water[11], 0.0);
    }

    use bouquet_domain::care::{self, AlertChange, CareThresholds, Condition};
    use bouquet_domain::freshness;
    use bouquet_domain::markdown::{MarkdownRule, Repricing};
    use bouquet_domain::{Currency, Money, Timestamp, VaseId, VaseMessage};

    /// What the local cloud made of a scenario's readings: when (seconds after the first
    /// reading) each thing happened.
    #[derive(Debug, Default)]
    struct Run {
        scores: Vec<u8>,
        /// Each alert opened, by condition.
        opened: Vec<(Condition, f64)>,
        /// Each markdown, by the step's `below`.
        marked_down: Vec<(u8, f64)>,
        past_its_best: Option<f64>,
    }

    /// A scenario's first 19 readings at its own interval (90 s of a ramp scenario's), taken as
    /// the cloud takes them: parsed as the topic rule forwards them (so in range), scored for a
    /// bouquet listed `age` before the first, alerts opened with a shop's default thresholds,
    /// priced with its default markdown rule switched on.
    fn run(scenario: Scenario, age: Duration) -> Run {
        let every = scenario.telemetry_every();
        let start = Timestamp::from_millis(1_796_228_211_000);
        let listed = start.minus(age);
        let vase_id = VaseId::generate().to_string();
        let thresholds = CareThresholds::default();
        let rule = MarkdownRule {
            enabled: true,
            ..MarkdownRule::default()
        };
        let list = Money::from_minor(4_500, Currency::parse("EUR").expect("EUR"));
        let (mut price, mut alerts, mut run) = (list, Vec::new(), Run::default());
        for n in 0..19 {
            let elapsed = n as f64 * every;
            let received = start.plus(Duration::from_secs_f64(elapsed));
            let mut body = reading(scenario, n, every);
            body["sentAt"] = json!(received.to_rfc3339());
            body["vaseId"] = json!(vase_id);
            body["receivedAt"] = json!(received.as_millis());
            body["messageType"] = json!("telemetry");
            let message = VaseMessage::parse(&body.to_string());
            let Ok(VaseMessage::Telemetry { reading, .. }) = message else {
                panic!("{scenario:?} reading {n} refused: {message:?} ({body})");
            };
            let score = freshness::score(&reading, listed, received);
            run.scores.push(score);
            let (open, changes) = care::after_reading(&alerts, &reading, &thresholds);
            alerts = open;
            for change in changes {
                if let AlertChange::Opened(alert) = change {
                    run.opened.push((alert.condition, elapsed));
                }
            }
            match rule.reprice(list, price, score, run.past_its_best.is_none()) {
                Repricing::MarkDown { price: lower, step } => {
                    price = lower;
                    run.marked_down.push((step.below, elapsed));
                }
                Repricing::PastItsBest => run.past_its_best = Some(elapsed),
                Repricing::Unchanged => {}
            }
        }
        run
    }

    fn conditions(run: &Run) -> Vec<Condition> {
        run.opened.iter().map(|(c, _)| *c).collect()
    }

    fn steps(run: &Run) -> Vec<u8> {
        run.marked_down.iter().map(|(below, _)| *below).collect()
    }

    /// Everything of `run` happened within the ramp's minute.
    fn within_the_minute(run: &Run) -> bool {
        run.opened
            .iter()
            .map(|(_, at)| at)
            .chain(run.marked_down.iter().map(|(_, at)| at))
            .chain(&run.past_its_best)
            .all(|at| *at <= RAMP_SECONDS)
    }

    #[test]
    fn the_default_stays_steady() {
        let healthy = run(Scenario::Healthy, Duration::ZERO);
        assert!(healthy.scores.iter().all(|s| *s == 100), "{healthy:?}");
        assert!(healthy.opened.is_empty() && healthy.marked_down.is_empty());
        let args = Args::parse_from(
            ["vase-simulator", "--vase-id", "v", "--cert", "c"]
                .into_iter()
                .chain(["--key", "k", "--ca", "a"]),
        );
        assert_eq!(args.scenario, Scenario::Healthy);
        assert_eq!(args.telemetry_every, None);
        assert_eq!(args.scenario.telemetry_every(), 300.0);
    }

    #[test]
    fn dry_opens_water_low_and_marks_down_within_a_minute() {
        let dry = run(Scenario::Dry, Duration::ZERO);
        assert_eq!(dry.scores[0], 100);
        assert!(dry.scores.windows(2).all(|w| w[1] <= w[0]), "{dry:?}");
        assert_eq!(conditions(&dry), [Condition::WaterLow], "{dry:?}");
        assert_eq!(steps(&dry), [80], "{dry:?}");
        // Water alone costs at most 30 points: 5 % left is 74.
        assert_eq!(dry.scores.last(), Some(&74));
        assert!(within_the_minute(&dry), "{dry:?}");
    }

    #[test]
    fn hot_opens_too_hot_and_marks_down_within_a_minute() {
        let hot = run(Scenario::Hot, Duration::ZERO);
        assert_eq!(hot.scores[0], 100);
        assert!(hot.scores.windows(2).all(|w| w[1] <= w[0]), "{hot:?}");
        assert_eq!(conditions(&hot), [Condition::TooHot], "{hot:?}");
        assert_eq!(steps(&hot), [80], "{hot:?}");
        // 20 points for the heat (the cap), 6.5 for the dry air, a little for the minute's age.
        assert_eq!(hot.scores.last(), Some(&73));
        assert!(within_the_minute(&hot), "{hot:?}");
    }

    #[test]
    fn ageing_goes_past_its_best_within_a_minute() {
        // A bouquet just listed: every sensor at its cap costs 70 points, down to 30, which
        // the default withdrawal score (below 30) does not reach.
        let fresh = run(Scenario::Ageing, Duration::ZERO);
        assert_eq!(fresh.scores[0], 100);
        assert!(fresh.scores.windows(2).all(|w| w[1] <= w[0]), "{fresh:?}");
        let mut opened = conditions(&fresh);
        opened.sort();
        assert_eq!(
            opened,
            [Condition::WaterLow, Condition::TooHot, Condition::TooBright],
            "{fresh:?}"
        );
        assert_eq!(steps(&fresh), [80, 60], "{fresh:?}");
        assert_eq!(fresh.scores.last(), Some(&30));
        assert_eq!(fresh.past_its_best, None);
        assert!(within_the_minute(&fresh), "{fresh:?}");
        // Listed two hours before: the age costs more than half a point, and it goes.
        let older = run(Scenario::Ageing, Duration::from_secs(2 * 3600));
        assert!(older.scores.last().is_some_and(|s| *s < 30), "{older:?}");
        assert!(older.past_its_best.is_some(), "{older:?}");
        assert!(within_the_minute(&older), "{older:?}");
    }
}
