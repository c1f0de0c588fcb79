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
    /// Seconds between readings.
    #[arg(long, default_value_t = 300.0)]
    telemetry_every: f64,
    #[arg(long, value_enum, default_value_t = Scenario::Healthy)]
    scenario: Scenario,
    /// Stop after this many messages (default: run until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
}

/// What the scenario has the vase do at its `beat`-th heartbeat.
fn online_at(scenario: Scenario, beat: u64) -> bool {
    match scenario {
        Scenario::Healthy | Scenario::DryingOut => true,
        Scenario::GoingSilent => beat < 3,
        // Five beats on, three off.
        Scenario::Flapping => beat % 8 < 5,
    }
}

/// The `n`-th reading of a scenario.
fn reading(scenario: Scenario, n: u64) -> Value {
    let water = match scenario {
        Scenario::DryingOut => (80.0 - 8.0 * n as f64).max(0.0),
        _ => 80.0 - (n % 3) as f64,
    };
    json!({
        "sentAt": now(),
        "waterLevelPct": water,
        "temperatureC": 18.5,
        "humidityPct": 60.0,
        "lightLux": 800.0,
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
    println!(
        "vase {} ({:?}): heartbeat every {} s, telemetry every {} s",
        args.vase_id, args.scenario, args.heartbeat_every, args.telemetry_every
    );

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
    let mut telemetry = tokio::time::interval(Duration::from_secs_f64(args.telemetry_every));
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
                let body = reading(args.scenario, readings);
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
                reading(Scenario::DryingOut, n)["waterLevelPct"]
                    .as_f64()
                    .unwrap_or(-1.0)
            })
            .collect();
        assert!(water.windows(2).all(|w| w[1] <= w[0]));
        assert_eq!(water[11], 0.0);
    }
}
