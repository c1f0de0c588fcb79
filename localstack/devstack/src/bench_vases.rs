//! `devstack bench-vases`: vase messages per second through the local cloud's whole IoT
//! path: MQTT clients (one per vase) publish with QoS 1 to the broker, the template's topic
//! rules forward to the queue, the template's SQS mapping feeds the ingest function, which
//! writes to DynamoDB on the emulator. It prints the rates; docs/performance.md quotes them.

use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::json;

use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::vase::Vase;
use bouquet_app::domain::{Clock, SystemClock, VaseId, Vendor};
use bouquet_app::App;
use bouquet_template::Template;

use crate::provision::Names;

use crate::error::{aws, DevError};
use crate::lambda::{default_binaries_dir, Functions};

pub struct VaseBench {
    pub vases: usize,
    pub messages: usize,
}

/// A bench vase and the credentials it connects with.
struct BenchVase {
    vase_id: VaseId,
    certificate: String,
    key: String,
}

/// Registers `count` vases as registration does: the IoT thing with an active certificate
/// carrying the vase policy (the broker admits only those), and the vase item.
async fn vases(
    app: &App,
    sdk: &aws_config::SdkConfig,
    policy: &str,
    count: usize,
) -> Result<Vec<BenchVase>, DevError> {
    let iot = aws_sdk_iot::Client::new(sdk);
    let vendor = Vendor::onboard("Bench", SystemClock.now())
        .map_err(|errors| DevError::Unexpected(format!("{errors:?}")))?;
    let onboarded = DomainEvent::new(
        vendor.vendor_id,
        vendor.version,
        vendor.created_at,
        "bench",
        EventData::VendorOnboarded {
            vendor_id: vendor.vendor_id,
            name: vendor.name.clone(),
        },
    );
    app.store
        .create_vendor(&vendor, &onboarded, None, vendor.created_at)
        .await
        .map_err(DevError::from)?;
    let vendor = vendor.vendor_id;
    let mut ids = Vec::new();
    for _ in 0..count {
        let vase = Vase::register(VaseId::generate(), vendor, SystemClock.now());
        let thing = vase.vase_id.to_string();
        iot.create_thing()
            .thing_name(&thing)
            .send()
            .await
            .map_err(aws)?;
        let keys = iot
            .create_keys_and_certificate()
            .set_as_active(true)
            .send()
            .await
            .map_err(aws)?;
        let arn = keys.certificate_arn.unwrap_or_default();
        iot.attach_policy()
            .policy_name(policy)
            .target(&arn)
            .send()
            .await
            .map_err(aws)?;
        iot.attach_thing_principal()
            .thing_name(&thing)
            .principal(&arn)
            .send()
            .await
            .map_err(aws)?;
        let event = DomainEvent::new(
            vase.vase_id,
            vase.version,
            vase.registered_at,
            "bench",
            EventData::VaseRegistered {
                vase_id: vase.vase_id,
                vendor_id: vendor,
            },
        );
        app.store
            .create_vase(&vase, &event, None, vase.registered_at)
            .await
            .map_err(|e| DevError::Unexpected(format!("MQTT publish: {e}")))?;
        ids.push(BenchVase {
            vase_id: vase.vase_id,
            certificate: keys.certificate_pem.unwrap_or_default(),
            key: keys
                .key_pair
                .and_then(|pair| pair.private_key)
                .unwrap_or_default(),
        });
    }
    Ok(ids)
}

pub async fn run(
    template: &Template,
    app: App,
    names: Names,
    stack: &str,
    sdk: &aws_config::SdkConfig,
    options: VaseBench,
) -> Result<String, DevError> {
    let mut names = names;
    let iot = crate::iot_core::start(
        template,
        stack,
        sdk,
        &mut names,
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    // Ingest runs its built binary, as in `devstack up`.
    let functions = Functions::from_template(
        template,
        &names,
        &default_binaries_dir(),
        &Default::default(),
    )?;
    crate::queues::start_all(template, &names, &functions, sdk)?;
    let policy = names.get("VasePolicy").cloned().ok_or_else(|| {
        DevError::Unexpected("the template's VasePolicy was not provisioned".into())
    })?;
    let ids = vases(&app, sdk, &policy, options.vases).await?;
    let files = crate::mosquitto::IotFiles::from_env()?;
    let ca = files.read("ca.pem")?;

    // One connected client per vase, each driving its own event loop.
    let mut clients = Vec::new();
    let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel::<()>();
    for vase in &ids {
        let mut mqtt = MqttOptions::new(vase.vase_id.to_string(), "127.0.0.1", iot.address.port());
        mqtt.set_transport(crate::mosquitto::tls(
            ca.clone(),
            Some((
                vase.certificate.clone().into_bytes(),
                vase.key.clone().into_bytes(),
            )),
        ));
        mqtt.set_keep_alive(Duration::from_secs(30));
        mqtt.set_inflight(100);
        let (client, mut events) = AsyncClient::new(mqtt, 1000);
        let acks = acks.clone();
        tokio::spawn(async move {
            while let Ok(event) = events.poll().await {
                if let Event::Incoming(Packet::PubAck(_)) = event {
                    let _ = acks.send(());
                }
            }
        });
        clients.push(client);
    }
    let started = Instant::now();
    let base = SystemClock.now();
    let mut telemetry = 0;
    for i in 0..options.messages {
        let vase = ids[i % ids.len()].vase_id;
        let sent_at = base.plus(Duration::from_millis(i as u64)).to_rfc3339();
        let (topic, body) = if i % 2 == 0 {
            (
                format!("vases/{vase}/heartbeat"),
                json!({ "sentAt": sent_at }),
            )
        } else {
            telemetry += 1;
            (
                format!("vases/{vase}/telemetry"),
                json!({ "sentAt": sent_at, "waterLevelPct": 70, "temperatureC": 19, "humidityPct": 55, "lightLux": 900 }),
            )
        };
        clients[i % clients.len()]
            .publish(topic, QoS::AtLeastOnce, false, body.to_string())
            .await
            .map_err(|e| DevError::Unexpected(format!("MQTT publish: {e}")))?;
    }
    for _ in 0..options.messages {
        tokio::time::timeout(Duration::from_secs(60), acked.recv())
            .await
            .map_err(|_| "the broker did not acknowledge every message within 60 s")?;
    }
    let published = started.elapsed();

    // Applied: the queue is drained (checked twice a second: the check is light on the
    // emulator), then every reading is verified to be stored.
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let queue = names
        .get("VaseMessagesQueue")
        .cloned()
        .ok_or("no VaseMessagesQueue")?;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&queue)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(aws)?
            .attributes
            .unwrap_or_default();
        let waiting: usize = attributes
            .values()
            .filter_map(|v| v.parse::<usize>().ok())
            .sum();
        if waiting == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(DevError::Unexpected(format!(
                "{waiting} messages still queued after 10 minutes"
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let applied = started.elapsed();
    let mut readings = 0;
    for vase in &ids {
        let page = app
            .store
            .readings(vase.vase_id, base.minus(Duration::from_secs(1)), None, 100)
            .await
            .map_err(|e| DevError::Unexpected(format!("MQTT publish: {e}")))?;
        readings += page.items.len();
    }
    if readings != telemetry {
        return Err(DevError::Unexpected(format!(
            "{readings} of {telemetry} readings stored"
        )));
    }
    let rate = |d: Duration| options.messages as f64 / d.as_secs_f64();
    Ok(format!(
        "{} messages from {} vases (half heartbeats, half readings)\n\
         published and acknowledged (MQTT QoS 1): {:.2} s, {:.0} msg/s\n\
         applied to DynamoDB (rule -> SQS -> ingest): {:.2} s, {:.0} msg/s end to end",
        options.messages,
        ids.len(),
        published.as_secs_f64(),
        rate(published),
        applied.as_secs_f64(),
        rate(applied),
    ))
}
