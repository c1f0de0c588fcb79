//! IoT Core through the local cloud with a real MQTT client over TLS: vases connect with the
//! certificates registration issued to Mosquitto (the dev stack's broker), the template's
//! topic rules forward to the rules' queue, and the ingest function behind the template's
//! SQS mapping writes to this test's table.

use std::net::SocketAddr;
use std::time::Duration;

use rumqttc::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, Packet, QoS};
use serde_json::json;

use bouquet_app::domain::{Clock, SystemClock, Timestamp};
use devstack::iot_core::LocalIotCore;
use devstack::mosquitto::IotFiles;
use system_tests::live::TestStack;
use system_tests::vases::VaseCredentials;
use system_tests::{by_vendor, emulator_sdk_config, fixture, PathParams, TestCloud};

/// Provisions this test's vase queues, policy and rules from the template and starts
/// Mosquitto (on a free port, with the emulator's CA, CRL and ACL) and the SQS mapping. The
/// broker runs while the returned value lives.
pub(crate) async fn local_iot(cloud: &TestCloud) -> LocalIotCore {
    let mut stack = TestStack::around(cloud).await;
    stack
        .create_queues(&["VaseMessagesDeadLetterQueue", "VaseMessagesQueue"])
        .await;
    let TestStack {
        template,
        sdk,
        name: stack,
        mut names,
        ..
    } = stack;
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
    iot
}

fn ca() -> Vec<u8> {
    IotFiles::from_env()
        .expect("the emulator's IoT files (BOUQUET_IOT_DIR)")
        .read("ca.pem")
        .unwrap()
}

/// Connects over TLS as `client_id` with `certificate` (or none); the broker's CONNACK, or
/// the refusal (at the TLS handshake), decides.
pub(crate) async fn connect_as(
    broker: SocketAddr,
    client_id: &str,
    certificate: Option<(&str, &str)>,
) -> Result<(AsyncClient, EventLoop), ConnectionError> {
    let mut options = MqttOptions::new(client_id, broker.ip().to_string(), broker.port());
    options.set_keep_alive(Duration::from_secs(10));
    options.set_transport(devstack::mosquitto::tls(
        ca(),
        certificate.map(|(pem, key)| (pem.as_bytes().to_vec(), key.as_bytes().to_vec())),
    ));
    let (client, mut events) = AsyncClient::new(options, 16);
    loop {
        match events.poll().await? {
            Event::Incoming(Packet::ConnAck(_)) => return Ok((client, events)),
            _ => continue,
        }
    }
}

/// Connects as the vase, with its certificate, as a vase connects to IoT Core. A certificate
/// attached a moment ago may still be in the CRL Mosquitto holds until it has reloaded it on
/// the emulator's signal (with tests writing to IoT Core beside it, that took over 100 ms
/// once): up to 3 s of retries.
pub(crate) async fn connect(
    broker: SocketAddr,
    vase: &VaseCredentials,
) -> Result<(AsyncClient, EventLoop), ConnectionError> {
    accepted_soon(broker, &vase.vase_id, (&vase.certificate, &vase.key)).await
}

/// Connects with a certificate that was just made good (attached, rotated in, activated):
/// retried for up to 3 s while the broker reloads its CRL.
async fn accepted_soon(
    broker: SocketAddr,
    client_id: &str,
    certificate: (&str, &str),
) -> Result<(AsyncClient, EventLoop), ConnectionError> {
    let mut tries = 30;
    loop {
        match connect_as(broker, client_id, Some(certificate)).await {
            Err(_) if tries > 0 => {
                tries -= 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            result => return result,
        }
    }
}

/// Waits (up to 2 s: the broker reloads its CRL on the emulator's signal) until a connect
/// with `certificate` is refused.
async fn refused_soon(broker: SocketAddr, client_id: &str, certificate: (&str, &str)) {
    for _ in 0..20 {
        if connect_as(broker, client_id, Some(certificate))
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the certificate of {client_id} is still accepted 2 s after it was revoked");
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

/// Publishes the vase `vase_id`'s heartbeat sent at `sent_at`, on that vase's topic.
async fn heartbeat(
    client: &AsyncClient,
    events: &mut EventLoop,
    vase_id: &str,
    sent_at: Timestamp,
) -> Result<(), ConnectionError> {
    let topic = format!("vases/{vase_id}/heartbeat");
    publish(
        client,
        events,
        &topic,
        json!({ "sentAt": sent_at.to_rfc3339() }),
    )
    .await
}

/// Asserts that, 1.5 s on (time for a message in flight to land), the vase `vase_id` has
/// still never been seen.
async fn assert_still_never_seen(cloud: &TestCloud, vase_id: &str) {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let connection = cloud.vase_attribute(vase_id, "connection").await;
    assert_eq!(connection.as_deref(), Some("never_seen"), "vase {vase_id}");
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
async fn a_vase_with_its_certificate_beats_and_reports_and_only_on_its_own_topics() {
    let cloud = TestCloud::new().await;
    // The local IoT Core stamps `receivedAt` with the wall clock, and a reading's age is
    // measured to it: list the bouquet at the wall clock's now.
    let start = SystemClock.now();
    cloud.clock.set(start);
    let iot = local_iot(&cloud).await;
    let vendor = cloud.vendor("Bloom").await;
    let vase = cloud.vase_with_credentials(&vendor).await;
    let neighbour = cloud.vase_with_credentials(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase.vase_id).await;

    // A heartbeat makes it online.
    let (client, mut events) = connect(iot.address, &vase)
        .await
        .expect("a registered vase connects with its certificate");
    let sent = start.plus(Duration::from_secs(60));
    heartbeat(&client, &mut events, &vase.vase_id, sent)
        .await
        .unwrap();
    eventually(&cloud, &vase.vase_id, "connection", "online").await;
    assert_eq!(
        cloud.vase_attribute(&vase.vase_id, "lastHeartbeatAt").await,
        Some(sent.as_millis().to_string())
    );

    // A reading scores its bouquet and emits the event.
    publish(
        &client,
        &mut events,
        &format!("vases/{}/telemetry", vase.vase_id),
        json!({ "sentAt": sent.to_rfc3339(), "waterLevelPct": 20, "temperatureC": 18, "humidityPct": 60, "lightLux": 500 }),
    )
    .await
    .unwrap();
    eventually(&cloud, &vase.vase_id, "freshness", "85").await;
    let seen = cloud
        .send(fixture("get-bouquet").bouquet_id(&bouquet))
        .await;
    assert_eq!(seen.body["freshness"], 85);
    assert!(cloud
        .event_names()
        .await
        .contains(&"BouquetFreshnessChanged".to_owned()));

    // A publish on another vase's topic is dropped by the broker (MQTT 3.1.1 has no refusal
    // in its PUBACK; IoT Core would close the connection): the heartbeat sent after it, on the
    // vase's own topic, lands; nothing reaches the neighbour.
    let later = sent.plus(Duration::from_secs(60));
    heartbeat(&client, &mut events, &neighbour.vase_id, later)
        .await
        .unwrap();
    heartbeat(&client, &mut events, &vase.vase_id, later)
        .await
        .unwrap();
    eventually(
        &cloud,
        &vase.vase_id,
        "lastHeartbeatAt",
        &later.as_millis().to_string(),
    )
    .await;
    assert_still_never_seen(&cloud, &neighbour.vase_id).await;

    // Even with the neighbour's client id, the vase's certificate acts only as its own vase.
    let (client, mut events) = connect_as(
        iot.address,
        &neighbour.vase_id,
        Some((&vase.certificate, &vase.key)),
    )
    .await
    .expect("Mosquitto names the session after the certificate");
    heartbeat(&client, &mut events, &neighbour.vase_id, later)
        .await
        .unwrap();
    assert_still_never_seen(&cloud, &neighbour.vase_id).await;
}

#[tokio::test]
async fn the_broker_refuses_no_certificate_a_stranger_a_rotated_out_and_a_revoked_one() {
    let cloud = TestCloud::new().await;
    let iot = local_iot(&cloud).await;
    let vendor = cloud.vendor("Bloom").await;
    let vase = cloud.vase_with_credentials(&vendor).await;
    let other = cloud.vase_with_credentials(&vendor).await;

    // No certificate: refused at the TLS handshake.
    assert!(
        connect_as(iot.address, &vase.vase_id, None).await.is_err(),
        "a client without a certificate was accepted"
    );
    // A certificate the emulator did not issue (its own CA, another key): refused.
    let stranger = rcgen::generate_simple_self_signed(vec!["stranger".into()]).unwrap();
    assert!(
        connect_as(
            iot.address,
            &vase.vase_id,
            Some((&stranger.cert.pem(), &stranger.signing_key.serialize_pem()))
        )
        .await
        .is_err(),
        "a self-signed certificate was accepted"
    );

    // Rotated out: the old certificate is refused, the new one connects.
    let old = (vase.certificate.as_str(), vase.key.as_str());
    accepted_soon(iot.address, &vase.vase_id, old)
        .await
        .expect("the first certificate connects");
    let rotated = cloud
        .send(
            by_vendor("rotate-vase-certificate", &vendor)
                .path("vaseId", &vase.vase_id)
                .no_idempotency_key(),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    refused_soon(iot.address, &vase.vase_id, old).await;
    let new = (
        rotated.body["certificatePem"].as_str().unwrap(),
        rotated.body["privateKey"].as_str().unwrap(),
    );
    accepted_soon(iot.address, &vase.vase_id, new)
        .await
        .expect("the rotated-in certificate connects");

    // Revoked (made inactive in IoT Core): refused at connect.
    let certificate = (other.certificate.as_str(), other.key.as_str());
    accepted_soon(iot.address, &other.vase_id, certificate)
        .await
        .expect("an active certificate connects");
    aws_sdk_iot::Client::new(&emulator_sdk_config().await)
        .update_certificate()
        .certificate_id(other.certificate_arn.rsplit('/').next().unwrap())
        .new_status(aws_sdk_iot::types::CertificateStatus::Inactive)
        .send()
        .await
        .unwrap();
    refused_soon(iot.address, &other.vase_id, certificate).await;
}
