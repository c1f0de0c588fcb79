//! IoT Core through the local cloud with a real MQTT client: the template's vase policy and
//! topic rules on the dev stack's broker, the rules' queue, and the ingest function behind
//! the template's SQS mapping, on this test's table.

use std::net::SocketAddr;
use std::time::Duration;

use rumqttc::{
    AsyncClient, ConnectReturnCode, ConnectionError, Event, EventLoop, MqttOptions, Packet, QoS,
};
use serde_json::json;

use bouquet_app::domain::{Clock, SystemClock};
use bouquet_template::Template;
use devstack::provision::{self, Names};
use system_tests::{emulator_sdk_config, ApiRequest, TestCloud};

/// Provisions this test's vase queues, policy and rules from the template and starts the
/// broker (on a free port) and the SQS mapping. Returns the broker's address.
pub(crate) async fn local_iot(cloud: &TestCloud) -> SocketAddr {
    let template = Template::repository().unwrap();
    let sdk = emulator_sdk_config().await;
    let stack = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let mut names = Names::new();
    provision::table_names(&cloud.client, "MarketTable", &cloud.table, &mut names)
        .await
        .unwrap();
    for queue in ["VaseMessagesDeadLetterQueue", "VaseMessagesQueue"] {
        provision::create_queue(
            &sqs,
            &template,
            queue,
            &provision::local_name(&stack, queue),
            &mut names,
        )
        .await
        .unwrap();
    }
    let iot = devstack::iot_core::start(
        &template,
        &stack,
        &sdk,
        &mut names,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    // The template's SQS mapping, delivering to the ingest function in process.
    let ingest = std::sync::Arc::new(cloud.ingest().await);
    let functions = move |binary: &str| {
        (binary == "ingest-vase-messages").then(|| {
            system_tests::in_process::typed_invoke(ingest.clone(), |ingest, event| async move {
                ingest.handle(event).await
            })
        })
    };
    let mappings = devstack::queues::start_all(&template, &names, &functions, &sdk).unwrap();
    assert_eq!(mappings.len(), 1, "{mappings:?}");
    iot.address
}

/// Connects as `client_id`; the broker's CONNACK (or the refusal) decides.
pub(crate) async fn connect(
    broker: SocketAddr,
    client_id: &str,
) -> Result<(AsyncClient, EventLoop), ConnectionError> {
    let mut options = MqttOptions::new(client_id, broker.ip().to_string(), broker.port());
    options.set_keep_alive(Duration::from_secs(10));
    let (client, mut events) = AsyncClient::new(options, 16);
    loop {
        match events.poll().await? {
            Event::Incoming(Packet::ConnAck(_)) => return Ok((client, events)),
            _ => continue,
        }
    }
}

/// Publishes with QoS 1 and waits for the PUBACK (or the broker closing the connection).
pub(crate) async fn publish(
    client: &AsyncClient,
    events: &mut EventLoop,
    topic: &str,
    body: serde_json::Value,
) -> Result<(), ConnectionError> {
    client
        .publish(topic, QoS::AtLeastOnce, false, body.to_string())
        .await
        .expect("queued");
    loop {
        if let Event::Incoming(Packet::PubAck(_)) = events.poll().await? {
            return Ok(());
        }
    }
}

/// Waits (up to 15 s) until the vase's attribute has the value.
async fn eventually(cloud: &TestCloud, vase: &str, attribute: &str, value: &str) {
    for _ in 0..150 {
        if cloud.vase_attribute(vase, attribute).await.as_deref() == Some(value) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "vase {vase}: {attribute} is {:?}, expected {value}",
        cloud.vase_attribute(vase, attribute).await
    );
}

#[tokio::test]
async fn a_registered_vase_beats_and_reports_over_mqtt_and_others_are_refused() {
    let cloud = TestCloud::new().await;
    // The local IoT Core stamps `receivedAt` with the wall clock, and a reading's age is
    // measured to it: list the bouquet at the wall clock's now.
    let start = SystemClock.now();
    cloud.clock.set(start);
    let broker = local_iot(&cloud).await;
    let vendor = cloud.vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let neighbour = cloud.vase(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;

    // A heartbeat makes it online.
    let (client, mut events) = connect(broker, &vase)
        .await
        .expect("a registered vase connects");
    let sent = start.plus(Duration::from_secs(60));
    publish(
        &client,
        &mut events,
        &format!("vases/{vase}/heartbeat"),
        json!({ "sentAt": sent.to_rfc3339() }),
    )
    .await
    .unwrap();
    eventually(&cloud, &vase, "connection", "online").await;
    assert_eq!(
        cloud.vase_attribute(&vase, "lastHeartbeatAt").await,
        Some(sent.as_millis().to_string())
    );

    // A reading scores its bouquet and emits the event.
    publish(
        &client,
        &mut events,
        &format!("vases/{vase}/telemetry"),
        json!({ "sentAt": sent.to_rfc3339(), "waterLevelPct": 20, "temperatureC": 18, "humidityPct": 60, "lightLux": 500 }),
    )
    .await
    .unwrap();
    eventually(&cloud, &vase, "freshness", "85").await;
    let seen = cloud
        .call(
            "get-bouquet",
            ApiRequest::fixture("get-bouquet").path("bouquetId", &bouquet),
        )
        .await;
    assert_eq!(seen.body["freshness"], 85);
    assert!(cloud
        .event_names()
        .await
        .contains(&"BouquetFreshnessChanged".to_owned()));

    // Publishing on another vase's topic closes the connection; nothing reaches that vase.
    let refused = publish(
        &client,
        &mut events,
        &format!("vases/{neighbour}/heartbeat"),
        json!({ "sentAt": sent.to_rfc3339() }),
    )
    .await;
    assert!(refused.is_err(), "the broker must close the connection");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        cloud
            .vase_attribute(&neighbour, "connection")
            .await
            .as_deref(),
        Some("never_seen")
    );

    // A client id that is no registered thing is refused at CONNECT.
    let stranger = ulid::Ulid::new().to_string();
    match connect(broker, &stranger).await {
        Err(ConnectionError::ConnectionRefused(code)) => {
            assert_eq!(code, ConnectReturnCode::NotAuthorized)
        }
        Err(other) => panic!("expected a refusal, got {other:?}"),
        Ok(_) => panic!("an unregistered client id was accepted"),
    }
}
