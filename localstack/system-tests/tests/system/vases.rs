//! Smart vases against the emulator: registration on IoT Core and its undo, heartbeats and
//! readings through the ingest function, the offline sweeper, and their races.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use bouquet_app::domain::Timestamp;
use bouquet_app::iot::Registrar;
use bouquet_iot::{Certificate, DeviceRegistry, IotError, NewThing, Page, Thing};
use system_tests::vases::{
    emulator_registry, heartbeat, reading, rule_output, sqs_records, test_vase_policy,
};
use system_tests::{
    by_vendor, emulator_sdk_config, fixture, operation_counts, ApiRequest, Outcome, PathParams,
    TestCloud, T0,
};

const MINUTE: Duration = Duration::from_secs(60);

fn at(minutes: u32) -> Timestamp {
    T0.plus(MINUTE * minutes)
}

fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| *n == name).count()
}

async fn iot() -> aws_sdk_iot::Client {
    aws_sdk_iot::Client::new(&emulator_sdk_config().await)
}

#[tokio::test]
async fn registration_makes_a_thing_with_an_active_certificate_and_returns_the_key_once() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let registrar = Registrar {
        registry: emulator_registry().await,
        policy: test_vase_policy().await,
    };
    let request = ApiRequest::fixture("register-vase")
        .own_shop(&vendor)
        .idempotency_key("vase-1");
    let first = cloud.register_vase_with(&registrar, request.clone()).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let vase_id = first.body["vase"]["vaseId"].as_str().unwrap().to_owned();
    assert_eq!(first.body["vase"]["connection"], "never_seen");
    assert_eq!(first.body["thingName"], vase_id.as_str());
    assert!(first.body["certificatePem"]
        .as_str()
        .unwrap()
        .contains("BEGIN CERTIFICATE"));
    let key = first.body["privateKey"].as_str().unwrap().to_owned();
    assert!(key.contains("PRIVATE KEY"));
    assert!(!first.body["iotEndpoint"].as_str().unwrap().is_empty());
    assert_eq!(
        first.body["topics"]["telemetry"],
        format!("vases/{vase_id}/telemetry")
    );

    let iot = iot().await;
    let thing = iot
        .describe_thing()
        .thing_name(&vase_id)
        .send()
        .await
        .unwrap();
    assert_eq!(
        thing.attributes.unwrap_or_default().get("vendorId"),
        Some(&vendor)
    );
    let principals = iot
        .list_thing_principals()
        .thing_name(&vase_id)
        .send()
        .await
        .unwrap()
        .principals
        .unwrap_or_default();
    let certificate_arn = first.body["certificateArn"].as_str().unwrap();
    assert_eq!(principals, [certificate_arn.to_owned()]);
    let policies = iot
        .list_attached_policies()
        .target(certificate_arn)
        .send()
        .await
        .unwrap()
        .policies
        .unwrap_or_default();
    assert_eq!(policies.len(), 1);

    // The key is not kept anywhere in the table (idempotency record included).
    let stored = format!("{:?}", cloud.items().await);
    assert!(!stored.contains(key.lines().nth(1).unwrap()));
    assert!(!stored.contains("PRIVATE KEY"));

    // A replay creates nothing and answers without the key.
    let replay = cloud.register_vase_with(&registrar, request).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body["vase"]["vaseId"], vase_id.as_str());
    assert!(replay.body["privateKey"].is_null());
    assert_eq!(cloud.items_of("vase").await.len(), 1);
    assert_eq!(cloud.event_count("VaseRegistered").await, 1);

    // Another vendor's token cannot register for this vendor.
    let other = cloud
        .register_vase_with(
            &registrar,
            ApiRequest::fixture("register-vase")
                .vendor(&cloud.vendor("Other").await)
                .vendor_id(&vendor)
                .no_idempotency_key(),
        )
        .await;
    assert_eq!(other.status, 403);
}

/// The registration steps, in order.
const STEPS: [&str; 5] = [
    "data_endpoint",
    "create_thing",
    "create_certificate",
    "attach_policy",
    "attach_thing_principal",
];

/// IoT Core that fails at one step, and remembers what it made.
struct FailingAt {
    inner: Arc<dyn DeviceRegistry>,
    step: &'static str,
    things: Mutex<Vec<String>>,
    certificates: Mutex<Vec<String>>,
}

impl FailingAt {
    fn check(&self, step: &'static str) -> Result<(), IotError> {
        if self.step == step {
            Err(IotError::new(step, "injected failure"))
        } else {
            Ok(())
        }
    }
}

#[async_trait::async_trait]
impl DeviceRegistry for FailingAt {
    async fn data_endpoint(&self) -> Result<String, IotError> {
        self.check("data_endpoint")?;
        self.inner.data_endpoint().await
    }
    async fn create_thing<'a>(&self, thing: &NewThing<'a>) -> Result<(), IotError> {
        self.check("create_thing")?;
        self.inner.create_thing(thing).await?;
        self.things.lock().unwrap().push(thing.name.to_owned());
        Ok(())
    }
    async fn create_certificate(&self) -> Result<Certificate, IotError> {
        self.check("create_certificate")?;
        let certificate = self.inner.create_certificate().await?;
        self.certificates
            .lock()
            .unwrap()
            .push(certificate.id.clone());
        Ok(certificate)
    }
    async fn attach_policy(&self, policy: &str, arn: &str) -> Result<(), IotError> {
        self.check("attach_policy")?;
        self.inner.attach_policy(policy, arn).await
    }
    async fn attach_thing_principal(&self, thing: &str, arn: &str) -> Result<(), IotError> {
        self.check("attach_thing_principal")?;
        self.inner.attach_thing_principal(thing, arn).await
    }
    async fn detach_thing_principal(&self, thing: &str, arn: &str) -> Result<(), IotError> {
        self.inner.detach_thing_principal(thing, arn).await
    }
    async fn detach_policy(&self, policy: &str, arn: &str) -> Result<(), IotError> {
        self.inner.detach_policy(policy, arn).await
    }
    async fn delete_certificate(&self, id: &str) -> Result<(), IotError> {
        self.inner.delete_certificate(id).await
    }
    async fn delete_thing(&self, thing: &str) -> Result<(), IotError> {
        self.check("delete_thing")?;
        self.inner.delete_thing(thing).await
    }
    async fn thing_principals(&self, thing: &str) -> Result<Vec<String>, IotError> {
        self.inner.thing_principals(thing).await
    }
    async fn vase_things(&self, policy: &str, next: Option<&str>) -> Result<Page<Thing>, IotError> {
        self.inner.vase_things(policy, next).await
    }
    async fn policy_certificates(
        &self,
        policy: &str,
        next: Option<&str>,
    ) -> Result<Page<String>, IotError> {
        self.inner.policy_certificates(policy, next).await
    }
    async fn principal_things(&self, arn: &str) -> Result<Vec<String>, IotError> {
        self.inner.principal_things(arn).await
    }
    async fn certificate_created_at(&self, id: &str) -> Result<i64, IotError> {
        self.inner.certificate_created_at(id).await
    }
}

/// Whether the thing and the certificates are gone from the emulator's IoT Core.
async fn leftovers(things: &[String], certificates: &[String]) -> Vec<String> {
    let iot = iot().await;
    let mut left = Vec::new();
    for thing in things {
        if iot.describe_thing().thing_name(thing).send().await.is_ok() {
            left.push(format!("thing {thing}"));
        }
    }
    for id in certificates {
        if let Ok(found) = iot.describe_certificate().certificate_id(id).send().await {
            left.push(format!(
                "certificate {id} ({:?})",
                found.certificate_description.and_then(|d| d.status)
            ));
        }
    }
    left
}

#[tokio::test]
async fn a_failure_at_each_registration_step_leaves_no_thing_and_no_certificate() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let policy = test_vase_policy().await;
    for step in STEPS {
        let registry = Arc::new(FailingAt {
            inner: emulator_registry().await,
            step,
            things: Mutex::default(),
            certificates: Mutex::default(),
        });
        let registrar = Registrar {
            registry: registry.clone(),
            policy: policy.clone(),
        };
        let response = cloud
            .register_vase_with(
                &registrar,
                ApiRequest::fixture("register-vase")
                    .own_shop(&vendor)
                    .no_idempotency_key(),
            )
            .await;
        assert_eq!(response.status, 500, "{step}: {}", response.body);
        let things = registry.things.lock().unwrap().clone();
        let certificates = registry.certificates.lock().unwrap().clone();
        // Everything made before the failing step existed and is gone again.
        let made = STEPS.iter().position(|s| *s == step).unwrap();
        assert_eq!(things.len(), usize::from(made > 1), "{step}");
        assert_eq!(certificates.len(), usize::from(made > 2), "{step}");
        assert_eq!(
            leftovers(&things, &certificates).await,
            Vec::<String>::new(),
            "{step}"
        );
    }
    assert!(cloud.items_of("vase").await.is_empty());
    assert!(!cloud
        .event_names()
        .await
        .contains(&"VaseRegistered".to_owned()));
}

#[tokio::test]
async fn concurrent_registrations_with_one_key_keep_one_vase_and_undo_the_other() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let registry = Arc::new(FailingAt {
        inner: emulator_registry().await,
        step: "none",
        things: Mutex::default(),
        certificates: Mutex::default(),
    });
    let registrar = Registrar {
        registry: registry.clone(),
        policy: test_vase_policy().await,
    };
    let request = ApiRequest::fixture("register-vase")
        .own_shop(&vendor)
        .idempotency_key("same-key");
    let responses = futures::future::join_all(
        (0..4).map(|_| cloud.register_vase_with(&registrar, request.clone())),
    )
    .await;
    let vases = cloud.items_of("vase").await;
    assert_eq!(vases.len(), 1);
    let kept = vases[0]["vaseId"].as_s().unwrap().clone();
    for response in &responses {
        // The winner's answer, its replay, or "in progress": never a second vase.
        assert!(
            (response.status == 201 && response.body["vase"]["vaseId"] == kept.as_str())
                || response.code() == Some("idempotency.in_progress"),
            "{} {}",
            response.status,
            response.body
        );
    }
    let things = registry.things.lock().unwrap().clone();
    assert!(things.contains(&kept));
    let losers: Vec<String> = things.into_iter().filter(|t| *t != kept).collect();
    assert_eq!(leftovers(&losers, &[]).await, Vec::<String>::new());
    let active = iot()
        .await
        .list_thing_principals()
        .thing_name(&kept)
        .send()
        .await
        .unwrap()
        .principals
        .unwrap_or_default();
    assert_eq!(active.len(), 1);
}

#[tokio::test]
async fn heartbeats_in_any_order_and_repeated_move_last_heartbeat_forward_only() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let mut newest = 0;
    for minute in [5, 3, 5, 7, 1, 7, 6] {
        cloud
            .send_vase_messages(&[heartbeat(&vase, at(minute))])
            .await;
        newest = newest.max(minute);
        assert_eq!(
            cloud.vase_attribute(&vase, "lastHeartbeatAt").await,
            Some(at(newest).as_millis().to_string()),
            "after the heartbeat of minute {minute}"
        );
    }
    assert_eq!(
        cloud.vase_attribute(&vase, "lastHeartbeatAt").await,
        Some(at(7).as_millis().to_string())
    );
    assert_eq!(
        cloud.vase_attribute(&vase, "connection").await.as_deref(),
        Some("online")
    );
    assert_eq!(count(&cloud.event_names().await, "VaseCameOnline"), 1);
}

#[tokio::test]
async fn thirty_concurrent_heartbeats_of_one_vase_leave_the_newest_and_one_event() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let ingest = cloud.ingest().await;
    // Minutes 1..=30 in a scrambled order, each its own invocation, all at once.
    let minutes: Vec<u32> = (0..30).map(|i| (i * 7) % 30 + 1).collect();
    let batches = futures::future::join_all(minutes.iter().map(|m| {
        let body = heartbeat(&vase, at(*m)).to_string();
        let ingest = &ingest;
        async move { ingest.ingest(sqs_records(&[body])).await }
    }))
    .await;
    for (response, _) in &batches {
        assert!(response.batch_item_failures.is_empty());
    }
    let applied: usize = batches.iter().map(|(_, r)| r.heartbeats).sum();
    let stale: usize = batches.iter().map(|(_, r)| r.no_ops).sum();
    assert_eq!(applied + stale, 30);
    assert_eq!(
        cloud.vase_attribute(&vase, "lastHeartbeatAt").await,
        Some(at(30).as_millis().to_string())
    );
    assert_eq!(count(&cloud.event_names().await, "VaseCameOnline"), 1);
}

#[tokio::test]
async fn readings_score_the_bouquet_and_emit_on_a_change_of_five_points() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
    let freshness = || async {
        cloud
            .send(fixture("get-bouquet").bouquet_id(&bouquet))
            .await
            .body["freshness"]
            .clone()
    };
    assert_eq!(freshness().await, Value::Null);

    // First reading: 100 (a first score is news).
    let report = cloud
        .send_vase_messages(&[reading(&vase, at(1), 80.0, 18.0)])
        .await;
    assert_eq!(report.freshness_events, 1);
    assert_eq!(freshness().await, 100);
    // 27 °C costs 10 points: news. Then 28 °C: 2 more, not news, but the score moves.
    cloud
        .send_vase_messages(&[reading(&vase, at(2), 80.0, 27.0)])
        .await;
    assert_eq!(freshness().await, 90);
    let report = cloud
        .send_vase_messages(&[reading(&vase, at(3), 80.0, 28.0)])
        .await;
    assert_eq!(report.freshness_events, 0);
    assert_eq!(freshness().await, 88);
    // A redelivery and an older reading change nothing but history.
    let report = cloud
        .send_vase_messages(&[
            reading(&vase, at(3), 80.0, 28.0),
            reading(&vase, at(0), 0.0, 40.0),
        ])
        .await;
    assert_eq!((report.readings, report.no_ops), (1, 1));
    assert_eq!(freshness().await, 88);
    assert_eq!(
        count(&cloud.event_names().await, "BouquetFreshnessChanged"),
        2
    );
    assert_eq!(cloud.items_of("reading").await.len(), 4);

    // The vendor sees the latest reading; the telemetry route lists all four, oldest first.
    let vases = cloud.send(fixture("list-vases").own_shop(&vendor)).await;
    assert_eq!(vases.status, 200);
    assert_eq!(
        vases.body["items"][0]["latestReading"]["temperatureC"],
        28.0
    );
    assert_eq!(vases.body["items"][0]["freshness"], 88);
    let telemetry = cloud
        .send(
            by_vendor("get-vase-telemetry", &vendor)
                .path("vaseId", &vase)
                .query("since", &at(0).to_rfc3339()),
        )
        .await;
    assert_eq!(telemetry.status, 200, "{}", telemetry.body);
    let sent: Vec<&str> = telemetry.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["sentAt"].as_str().unwrap())
        .collect();
    assert_eq!(sent.len(), 4);
    assert!(sent.windows(2).all(|w| w[0] < w[1]));
    // Another vendor's vase is not found.
    let other = cloud.vendor("Other").await;
    let hidden = cloud
        .send(by_vendor("get-vase-telemetry", &other).path("vaseId", &vase))
        .await;
    assert_eq!(hidden.status, 404);
}

#[tokio::test]
async fn a_vendor_edit_keeps_the_score_a_reading_wrote() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
    cloud
        .send_vase_messages(&[reading(&vase, at(1), 12.0, 18.0)])
        .await;
    let patch = |version: &str| {
        ApiRequest::fixture("update-bouquet")
            .vendor(&vendor)
            .bouquet_id(&bouquet)
            .header("if-match", &format!("\"{version}\""))
    };
    // A first score is news: a new version of the bouquet, so the listing's ETag is stale.
    assert_eq!(cloud.call("update-bouquet", patch("1")).await.status, 412);
    let patched = cloud.call("update-bouquet", patch("2")).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["freshness"], 79);
}

/// Finding 9: once a bouquet had stood in a vase and been withdrawn, the vase was 409
/// `vase.in_use` for ever. A vase's whole life: registered, a bouquet listed in it (refused
/// while on sale), withdrawn (out of the vase with its score), another listed in it (refused
/// again), that one withdrawn too, then decommissioned.
#[tokio::test]
async fn a_vase_is_decommissioned_once_its_bouquet_is_withdrawn_and_never_while_one_is_on_sale() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let decommission = || {
        ApiRequest::fixture("decommission-vase")
            .vendor(&vendor)
            .path("vaseId", &vase)
            .no_idempotency_key()
    };
    let withdraw = |bouquet: &str| {
        ApiRequest::fixture("withdraw-bouquet")
            .vendor(&vendor)
            .bouquet_id(bouquet)
    };
    let vase_fields = || async {
        let mut fields = Vec::new();
        for name in ["bouquetId", "bouquetListedAt", "freshness"] {
            fields.push(cloud.vase_attribute(&vase, name).await);
        }
        fields
    };

    for (minute, name) in [(1, "first"), (3, "second")] {
        let bouquet = cloud.bouquet_in_vase(&vendor, &vase).await;
        // A reading scores it: the vase keeps that score beside the bouquet's id.
        cloud
            .send_vase_messages(&[reading(&vase, at(minute), 80.0, 18.0)])
            .await;
        let held = vase_fields().await;
        assert_eq!(held[0].as_deref(), Some(bouquet.as_str()), "{name}");
        assert!(held[1].is_some() && held[2].is_some(), "{name}: {held:?}");

        // Available: the vase is in use.
        let refused = cloud.call("decommission-vase", decommission()).await;
        assert_eq!(
            refused.status_and_code(),
            (409, Some("vase.in_use")),
            "{name}: {}",
            refused.body
        );
        assert_eq!(refused.body["bouquetId"], bouquet.as_str(), "{name}");

        // Withdrawn: the vase forgets it (id, listing time, score) in the same write; the
        // bouquet still names the vase it stood in.
        let withdrawn = cloud.call("withdraw-bouquet", withdraw(&bouquet)).await;
        assert_eq!(withdrawn.status, 200, "{name}: {}", withdrawn.body);
        assert_eq!(withdrawn.body["status"], "withdrawn", "{name}");
        assert_eq!(withdrawn.body["vaseId"], vase.as_str(), "{name}");
        assert_eq!(vase_fields().await, [None, None, None], "{name}");
        // A reading now scores no bouquet.
        let report = cloud
            .send_vase_messages(&[reading(&vase, at(minute + 1), 20.0, 30.0)])
            .await;
        assert_eq!(report.freshness_events, 0, "{name}");
        assert_eq!(vase_fields().await, [None, None, None], "{name}");
    }
    let vases = cloud.send(fixture("list-vases").own_shop(&vendor)).await;
    assert_eq!(vases.body["items"][0]["bouquetId"], Value::Null);

    let done = cloud.call("decommission-vase", decommission()).await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert!(cloud.items_of("vase").await.is_empty());
    let events = cloud.event_names().await;
    assert_eq!(count(&events, "BouquetWithdrawn"), 2);
    assert_eq!(count(&events, "VaseDecommissioned"), 1);
    // Gone: a retry is 404.
    let again = cloud.call("decommission-vase", decommission()).await;
    assert_eq!(again.status, 404, "{}", again.body);
}

/// Runs the offline sweeper with the clock at `minutes` after T0.
async fn sweep(cloud: &TestCloud, minutes: u32) -> Value {
    cloud
        .run_scheduled_with("flag-offline-vases", cloud.app_at(at(minutes)))
        .await
}

#[tokio::test]
async fn the_sweeper_flags_a_silent_vase_offline_exactly_once_and_a_heartbeat_brings_it_back() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    let never_seen = cloud.vase(&vendor).await;
    cloud.send_vase_messages(&[heartbeat(&vase, at(0))]).await;

    assert_eq!(sweep(&cloud, 60).await["wentOffline"], 0);
    assert_eq!(sweep(&cloud, 61).await["wentOffline"], 1);
    assert_eq!(sweep(&cloud, 62).await["wentOffline"], 0);
    assert_eq!(
        cloud.vase_attribute(&vase, "connection").await.as_deref(),
        Some("offline")
    );
    assert_eq!(
        cloud
            .vase_attribute(&never_seen, "connection")
            .await
            .as_deref(),
        Some("never_seen")
    );
    cloud.send_vase_messages(&[heartbeat(&vase, at(63))]).await;
    assert_eq!(
        cloud.vase_attribute(&vase, "connection").await.as_deref(),
        Some("online")
    );
    let names = cloud.event_names().await;
    assert_eq!(count(&names, "VaseWentOffline"), 1);
    assert_eq!(count(&names, "VaseCameOnline"), 2);
}

#[tokio::test]
async fn a_heartbeat_racing_the_sweep_leaves_every_vase_online() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let mut vases = Vec::new();
    for _ in 0..8 {
        vases.push(cloud.vase(&vendor).await);
    }
    let first: Vec<Value> = vases.iter().map(|v| heartbeat(v, at(0))).collect();
    cloud.send_vase_messages(&first).await;
    for round in 0..3u32 {
        // Each round: every vase is silent past the hour, and beats just as the sweep runs.
        let now = 61 + round * 70;
        let beats: Vec<Value> = vases.iter().map(|v| heartbeat(v, at(now))).collect();
        let (swept, _) = tokio::join!(sweep(&cloud, now), cloud.send_vase_messages(&beats));
        assert!(swept["failed"] == 0, "{swept}");
        for vase in &vases {
            assert_eq!(
                cloud.vase_attribute(vase, "connection").await.as_deref(),
                Some("online"),
                "round {round}"
            );
        }
        // Make the next round's vases silent again without letting the sweep see them.
        let later: Vec<Value> = vases.iter().map(|v| heartbeat(v, at(now + 1))).collect();
        cloud.send_vase_messages(&later).await;
    }
    // Whenever the sweep won, the heartbeat brought the vase back: the events pair up.
    let names = cloud.event_names().await;
    assert_eq!(
        count(&names, "VaseCameOnline"),
        vases.len() + count(&names, "VaseWentOffline")
    );
}

#[tokio::test]
async fn two_sweepers_at_once_emit_one_event_per_silent_vase() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let mut vases = Vec::new();
    for _ in 0..10 {
        vases.push(cloud.vase(&vendor).await);
    }
    let beats: Vec<Value> = vases.iter().map(|v| heartbeat(v, at(0))).collect();
    cloud.send_vase_messages(&beats).await;
    let (a, b) = tokio::join!(sweep(&cloud, 90), sweep(&cloud, 90));
    assert_eq!(
        a["wentOffline"].as_u64().unwrap() + b["wentOffline"].as_u64().unwrap(),
        10,
        "{a} {b}"
    );
    assert_eq!(count(&cloud.event_names().await, "VaseWentOffline"), 10);
}

#[tokio::test]
async fn a_batch_of_500_with_5_percent_malformed_applies_every_valid_one_once_and_dead_letters_the_rest(
) {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let mut vases = Vec::new();
    for _ in 0..10 {
        vases.push(cloud.vase(&vendor).await);
    }
    let mut bodies = Vec::new();
    let mut malformed = HashSet::new();
    for i in 0..500u32 {
        let vase = &vases[(i % 10) as usize];
        let body = match i % 20 {
            // 25 bad ones: broken JSON, out-of-range readings, an unknown vase, no type.
            0 => match (i / 20) % 5 {
                0 => "{not json".to_owned(),
                1 => reading(vase, at(i), 140.0, 18.0).to_string(),
                2 => heartbeat("01JF0000000000000000000000", at(i)).to_string(),
                3 => rule_output(
                    vase,
                    "reboot",
                    json!({ "sentAt": at(i).to_rfc3339() }),
                    at(i),
                )
                .to_string(),
                _ => json!({ "vaseId": vase, "sentAt": at(i).to_rfc3339() }).to_string(),
            },
            n if n % 2 == 0 => reading(vase, at(i), 60.0, 18.0).to_string(),
            _ => heartbeat(vase, at(i)).to_string(),
        };
        if i % 20 == 0 {
            malformed.insert(format!("m{i}"));
        }
        bodies.push(body);
    }
    let ingest = cloud.ingest().await;
    let (response, report) = ingest.ingest(sqs_records(&bodies)).await;
    assert!(response.batch_item_failures.is_empty(), "{report:?}");
    assert_eq!(report.dead_lettered, 25, "{report:?}");
    // Heartbeats of one vase run concurrently: one overtaken by a newer one is a no-op.
    assert_eq!(
        report.heartbeats + report.readings + report.no_ops,
        475,
        "{report:?}"
    );
    let readings = bodies
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 20 != 0 && (i % 20) % 2 == 0)
        .count();
    assert_eq!(report.readings, readings, "{report:?}");
    assert_eq!(cloud.items_of("reading").await.len(), readings);
    for (v, vase) in vases.iter().enumerate() {
        // The newest heartbeat of each vase: the highest odd i with i % 10 == v.
        let newest = (0..500u32)
            .filter(|i| (*i % 10) as usize == v && i % 20 != 0 && (i % 20) % 2 == 1)
            .max();
        assert_eq!(
            cloud.vase_attribute(vase, "lastHeartbeatAt").await,
            newest.map(|i| at(i).as_millis().to_string())
        );
    }

    // The dead-letter queue holds exactly the malformed ones, each with its reason.
    let sqs = aws_sdk_sqs::Client::new(&emulator_sdk_config().await);
    let mut dead = Vec::new();
    for _ in 0..10 {
        let got = sqs
            .receive_message()
            .queue_url(&ingest.dead_letters.queue_url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        if got.is_empty() {
            break;
        }
        dead.extend(got);
    }
    assert_eq!(dead.len(), 25);
    let sources: HashSet<String> = dead
        .iter()
        .map(|m| {
            let attributes = m.message_attributes.clone().unwrap_or_default();
            assert!(attributes.contains_key("reason"));
            attributes["sourceMessageId"].string_value.clone().unwrap()
        })
        .collect();
    assert_eq!(sources, malformed);

    // Delivered again (at-least-once), the batch changes nothing.
    let before = cloud.items().await;
    let (response, again) = ingest.ingest(sqs_records(&bodies)).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(again.no_ops, 475, "{again:?}");
    assert_eq!(cloud.items().await, before);
}

#[tokio::test]
async fn dynamodb_calls_per_vase_message() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    cloud.bouquet_in_vase(&vendor, &vase).await;
    let ingest = cloud.ingest().await;
    let cases = [
        (
            heartbeat(&vase, at(1)),
            operation_counts(&[("GetItem", 1), ("TransactWriteItems", 1)]),
            "first heartbeat: read, online + VaseCameOnline",
        ),
        (
            heartbeat(&vase, at(2)),
            operation_counts(&[("GetItem", 1), ("UpdateItem", 1)]),
            "heartbeat of an online vase: read, conditional update",
        ),
        (
            heartbeat(&vase, at(2)),
            operation_counts(&[("GetItem", 1)]),
            "duplicate heartbeat: read only",
        ),
        (
            reading(&vase, at(3), 80.0, 18.0),
            operation_counts(&[("GetItem", 3), ("TransactWriteItems", 1)]),
            "latest reading whose score is news: read the vase, the shop's vase rules and the bouquet's version, reading + vase + bouquet score and version + event",
        ),
        (
            reading(&vase, at(4), 80.0, 20.0),
            operation_counts(&[("GetItem", 2), ("TransactWriteItems", 1)]),
            "latest reading that leaves the score as it was: read the vase and the shop's vase rules, reading + vase (the bouquet is not written again)",
        ),
        (
            reading(&vase, at(0), 80.0, 18.0),
            operation_counts(&[("GetItem", 1), ("PutItem", 1)]),
            "older reading: read, conditional put",
        ),
    ];
    for (message, expected, what) in cases {
        cloud.calls.reset();
        let (response, _) = ingest.ingest(sqs_records(&[message.to_string()])).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(cloud.calls.by_operation(), expected, "{what}");
    }
}

/// Issue 53: a vase sending a reading a second for an hour (its bouquet steady) costs one
/// transaction per reading and the write units docs/capacity.md states, measured on the local
/// DynamoDB (units by item size, as DynamoDB bills them); it keeps 3,600 raw readings (48 h) and
/// three finished 15-minute buckets (30 days), the fourth folding on the vase.
#[tokio::test]
async fn an_hour_of_a_reading_a_second_costs_what_the_capacity_model_states() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let vase = cloud.vase(&vendor).await;
    cloud.bouquet_in_vase(&vendor, &vase).await;
    let ingest = cloud.ingest().await;
    let start = Timestamp::from_millis(1_796_227_200_000); // on a quarter hour
    cloud.calls.reset();
    for batch in 0..36u64 {
        let bodies: Vec<String> = (0..100u64)
            .map(|i| {
                let second = batch * 100 + i;
                let water = 80.0 - second as f64 / 360.0;
                reading(&vase, start.plus(Duration::from_secs(second)), water, 18.0).to_string()
            })
            .collect();
        let (response, report) = ingest.ingest(sqs_records(&bodies)).await;
        assert!(response.batch_item_failures.is_empty(), "{report:?}");
    }
    let calls = cloud.calls.by_operation();
    let units = cloud.calls.write_units();
    eprintln!(
        "an hour at a reading a second: {calls:?}, {units} write units ({:.2} a reading)",
        units / 3600.0
    );
    assert_eq!(calls.get("TransactWriteItems"), Some(&3600), "{calls:?}");
    assert_eq!(calls.get("PutItem"), None, "{calls:?}");
    assert_eq!(calls.get("UpdateItem"), None, "{calls:?}");
    // docs/capacity.md: 5 units a reading (the raw reading and the vase item, each under 1 KB
    // and billed twice in a transaction, and the vase's copy in VendorIndex), 2 more per
    // finished bucket, and at most 10 for the bouquet's first score (its item and its index
    // copies).
    let model = 3600.0 * 5.0 + 3.0 * 2.0 + 10.0;
    assert!(
        units <= model,
        "{units} write units, over the model's {model}"
    );
    let kept = cloud
        .client
        .query()
        .table_name(&cloud.table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("VASE#{vase}")),
        )
        .select(aws_sdk_dynamodb::types::Select::SpecificAttributes)
        .projection_expression("sk, expiresAt")
        .send()
        .await
        .expect("query");
    let sks: Vec<String> = kept
        .items()
        .iter()
        .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
        .collect();
    let readings = sks.iter().filter(|k| k.starts_with("READING#")).count();
    let buckets = sks.iter().filter(|k| k.starts_with("BUCKET#")).count();
    // A query page stops at 1 MB: the readings are counted by their own query's pages.
    assert!(
        readings > 0 && buckets == 3,
        "{readings} readings, {buckets} buckets"
    );
}
