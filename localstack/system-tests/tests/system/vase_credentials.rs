//! A vase's credentials after registration, against the emulator's IoT Core: rotation (a
//! new key, the old certificate revoked), decommissioning, and the reconciliation sweep
//! that removes what no vase owns. Each test uses a vase policy of its own, which scopes
//! the sweep, so tests running beside it are never touched.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use bouquet_app::domain::{Timestamp, VaseId};
use bouquet_iot::{DeviceRegistry, NewThing, Registrar};
use system_tests::vases::{emulator_registry, test_vase_policy};
use system_tests::{emulator_sdk_config, ApiRequest, ApiResponse, PathParams, TestCloud};

async fn iot() -> aws_sdk_iot::Client {
    aws_sdk_iot::Client::new(&emulator_sdk_config().await)
}

/// A vase policy for this test only.
async fn own_registrar() -> Registrar {
    Registrar {
        registry: emulator_registry().await,
        policy: test_vase_policy().await,
    }
}

async fn call(
    cloud: &TestCloud,
    registrar: &Registrar,
    binary: &str,
    request: ApiRequest,
) -> ApiResponse {
    let request = request.build();
    let app = system_tests::with_registrar(&cloud.app, registrar);
    ApiResponse::from(
        match binary {
            "register-vase" => {
                system_tests::in_process::routes::register_vase::handler(&app, request).await
            }
            "rotate-vase-certificate" => {
                system_tests::in_process::routes::rotate_vase_certificate::handler(&app, request)
                    .await
            }
            "decommission-vase" => {
                system_tests::in_process::routes::decommission_vase::handler(&app, request).await
            }
            other => panic!("no vase credential route {other}"),
        }
        .expect("handlers always answer"),
    )
}

async fn register(cloud: &TestCloud, registrar: &Registrar, vendor: &str) -> Value {
    let response = call(
        cloud,
        registrar,
        "register-vase",
        ApiRequest::fixture("register-vase")
            .own_shop(vendor)
            .no_idempotency_key(),
    )
    .await;
    assert_eq!(response.status, 201, "{}", response.body);
    response.body
}

fn rotate(vendor: &str, vase: &str) -> ApiRequest {
    ApiRequest::fixture("rotate-vase-certificate")
        .vendor(vendor)
        .path("vaseId", vase)
        .no_idempotency_key()
}

fn decommission(vendor: &str, vase: &str) -> ApiRequest {
    ApiRequest::fixture("decommission-vase")
        .vendor(vendor)
        .path("vaseId", vase)
        .no_idempotency_key()
}

async fn principals(thing: &str) -> BTreeSet<String> {
    iot()
        .await
        .list_thing_principals()
        .thing_name(thing)
        .send()
        .await
        .map(|o| o.principals.unwrap_or_default().into_iter().collect())
        .unwrap_or_default()
}

async fn certificate_exists(arn: &str) -> bool {
    iot()
        .await
        .describe_certificate()
        .certificate_id(bouquet_iot::certificate_id(arn))
        .send()
        .await
        .is_ok()
}

async fn thing_exists(thing: &str) -> bool {
    iot()
        .await
        .describe_thing()
        .thing_name(thing)
        .send()
        .await
        .is_ok()
}

fn s<'a>(body: &'a Value, field: &str) -> &'a str {
    body[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {body}"))
}

#[tokio::test]
async fn rotation_issues_a_new_key_and_revokes_the_old_certificate() {
    let cloud = TestCloud::new().await;
    let registrar = own_registrar().await;
    let vendor = cloud.vendor("Bloom").await;
    let registered = register(&cloud, &registrar, &vendor).await;
    let vase = registered["vase"]["vaseId"].as_str().unwrap().to_owned();
    let old = s(&registered, "certificateArn").to_owned();

    // Authorization first: another vendor is refused, an unknown vase is 404.
    let other = cloud.vendor("Other").await;
    let refused = call(
        &cloud,
        &registrar,
        "rotate-vase-certificate",
        rotate(&other, &vase),
    )
    .await;
    // Vase ids are not public: another vendor's vase is 404, as an unknown one (issue 38).
    assert_eq!(refused.status, 404, "{}", refused.body);
    let unknown = call(
        &cloud,
        &registrar,
        "rotate-vase-certificate",
        rotate(&vendor, &VaseId::generate().to_string()),
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(principals(&vase).await, BTreeSet::from([old.clone()]));

    let request = rotate(&vendor, &vase).idempotency_key("rotate-1");
    let rotated = call(
        &cloud,
        &registrar,
        "rotate-vase-certificate",
        request.clone(),
    )
    .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    let new = s(&rotated.body, "certificateArn").to_owned();
    assert_ne!(new, old);
    assert!(s(&rotated.body, "privateKey").contains("PRIVATE KEY"));
    assert!(s(&rotated.body, "certificatePem").contains("CERTIFICATE"));
    assert_eq!(s(&rotated.body, "thingName"), vase);
    assert_eq!(
        principals(&vase).await,
        BTreeSet::from([new.clone()]),
        "only the new one is attached"
    );
    assert!(
        !certificate_exists(&old).await,
        "the old certificate is deleted"
    );
    assert!(certificate_exists(&new).await);

    // A retry answers as the first did, without the key, and rotates nothing.
    let replay = call(&cloud, &registrar, "rotate-vase-certificate", request).await;
    assert_eq!(replay.status, 200, "{}", replay.body);
    assert_eq!(s(&replay.body, "certificateArn"), new);
    assert_eq!(replay.body["privateKey"], Value::Null);
    assert_eq!(principals(&vase).await, BTreeSet::from([new.clone()]));

    let names = cloud.event_names().await;
    assert_eq!(
        names
            .iter()
            .filter(|n| *n == "VaseCertificateRotated")
            .count(),
        1
    );
    let versions: Vec<u64> = cloud
        .items_of("event")
        .await
        .iter()
        .filter(|e| e["aggregateId"].as_s().ok() == Some(&vase))
        .map(|e| e["aggregateVersion"].as_n().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        versions.iter().collect::<BTreeSet<_>>().len(),
        versions.len(),
        "each event of the vase has its own version: {versions:?}"
    );
}

#[tokio::test]
async fn concurrent_rotations_leave_exactly_one_certificate_and_one_event_per_success() {
    let cloud = TestCloud::new().await;
    let registrar = own_registrar().await;
    let vendor = cloud.vendor("Bloom").await;
    let registered = register(&cloud, &registrar, &vendor).await;
    let vase = registered["vase"]["vaseId"].as_str().unwrap().to_owned();
    const RACERS: usize = 6;
    let responses = futures::future::join_all((0..RACERS).map(|_| {
        call(
            &cloud,
            &registrar,
            "rotate-vase-certificate",
            rotate(&vendor, &vase),
        )
    }))
    .await;
    let mut issued = Vec::new();
    for response in &responses {
        match response.status {
            200 => issued.push(s(&response.body, "certificateArn").to_owned()),
            503 => assert_eq!(response.code(), Some("service.busy"), "{}", response.body),
            other => panic!("{other} {}", response.body),
        }
    }
    assert!(!issued.is_empty(), "at least one rotation wins");
    let attached = principals(&vase).await;
    assert_eq!(attached.len(), 1, "one certificate stays: {attached:?}");
    assert!(
        issued.contains(attached.iter().next().unwrap()),
        "the one left was answered to a caller"
    );
    let events = cloud.event_names().await;
    assert_eq!(
        events
            .iter()
            .filter(|n| *n == "VaseCertificateRotated")
            .count(),
        issued.len(),
        "one event per rotation answered 200"
    );
    // Every certificate other than the attached one is gone, whoever made it.
    for arn in issued.iter().filter(|a| !attached.contains(*a)) {
        assert!(!certificate_exists(arn).await, "{arn} revoked");
    }
}

#[tokio::test]
async fn decommissioning_removes_the_vase_its_thing_and_certificate_once() {
    let cloud = TestCloud::new().await;
    let registrar = own_registrar().await;
    let vendor = cloud.vendor("Bloom").await;

    // A vase with a bouquet standing in it is refused, and nothing changes.
    let busy = register(&cloud, &registrar, &vendor).await;
    let busy_vase = busy["vase"]["vaseId"].as_str().unwrap().to_owned();
    let bouquet = cloud.bouquet_in_vase(&vendor, &busy_vase).await;
    let refused = call(
        &cloud,
        &registrar,
        "decommission-vase",
        decommission(&vendor, &busy_vase),
    )
    .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.code(), Some("vase.in_use"));
    assert_eq!(refused.body["bouquetId"], bouquet.as_str());
    assert!(thing_exists(&busy_vase).await);

    let registered = register(&cloud, &registrar, &vendor).await;
    let vase = registered["vase"]["vaseId"].as_str().unwrap().to_owned();
    let certificate = s(&registered, "certificateArn").to_owned();
    let other = cloud.vendor("Other").await;
    let forbidden = call(
        &cloud,
        &registrar,
        "decommission-vase",
        decommission(&other, &vase),
    )
    .await;
    assert_eq!(
        forbidden.status, 404,
        "another vendor's vase: {}",
        forbidden.body
    );

    let done = call(
        &cloud,
        &registrar,
        "decommission-vase",
        decommission(&vendor, &vase),
    )
    .await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert!(!thing_exists(&vase).await, "the thing is deleted");
    assert!(
        !certificate_exists(&certificate).await,
        "the certificate is deleted"
    );
    let vases: Vec<String> = cloud
        .items_of("vase")
        .await
        .iter()
        .map(|v| v["vaseId"].as_s().unwrap().clone())
        .collect();
    assert_eq!(vases, vec![busy_vase.clone()]);

    // DELETE takes no key: once the vase is gone, a retry is 404 and changes nothing.
    let again = call(
        &cloud,
        &registrar,
        "decommission-vase",
        decommission(&vendor, &vase),
    )
    .await;
    assert_eq!(again.status, 404, "{}", again.body);
    assert_eq!(cloud.event_count("VaseDecommissioned").await, 1);
}

#[tokio::test]
async fn the_sweep_removes_what_no_vase_owns_and_nothing_else() {
    let cloud = TestCloud::new().await;
    let registrar = own_registrar().await;
    let registry = registrar.registry.clone();
    let vendor = cloud.vendor("Bloom").await;
    let now = Timestamp::from_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    // The sweep runs later than everything made here by more than its grace period.
    let sweep_at = now.plus(reconcile_vase_things::GRACE + Duration::from_secs(60));
    let seconds = |t: Timestamp| t.as_millis() / 1000;

    // A registered vase: kept, with its certificate.
    let kept = register(&cloud, &registrar, &vendor).await;
    let kept_vase = kept["vase"]["vaseId"].as_str().unwrap().to_owned();
    let kept_certificate = s(&kept, "certificateArn").to_owned();

    // What a registration whose undo failed leaves: a thing with an active certificate and
    // no vase.
    let orphan = VaseId::generate().to_string();
    let make_thing = |name: String, registered_at: i64, policy: String| {
        let registry = registry.clone();
        let vendor = vendor.clone();
        async move {
            registry
                .create_thing(&NewThing {
                    name: &name,
                    vendor_id: &vendor,
                    policy: &policy,
                    registered_at,
                })
                .await
                .unwrap();
        }
    };
    make_thing(orphan.clone(), seconds(now), registrar.policy.clone()).await;
    let orphan_certificate =
        attach_new_certificate(registry.as_ref(), Some(&orphan), &registrar.policy).await;
    // A thing still registering (younger than the grace period at sweep time): kept.
    let young = VaseId::generate().to_string();
    make_thing(
        young.clone(),
        seconds(sweep_at) - 60,
        registrar.policy.clone(),
    )
    .await;
    // Another stack's orphan: not this sweep's business.
    let foreign = VaseId::generate().to_string();
    make_thing(
        foreign.clone(),
        seconds(now),
        format!("{}-other-stack", registrar.policy),
    )
    .await;
    // A vase certificate on no thing (an undo that failed after AttachPolicy).
    let loose_certificate =
        attach_new_certificate(registry.as_ref(), None, &registrar.policy).await;

    let app = system_tests::with_registrar(&cloud.app_at(sweep_at), &registrar);
    let event: Value = system_tests::event_fixture("reconcile-vase-things");
    let run = || {
        reconcile_vase_things::handler(
            &app,
            lambda_runtime::LambdaEvent::new(event.clone(), lambda_runtime::Context::default()),
        )
    };
    let report = run().await.expect("the sweep removes everything it finds");
    assert_eq!(
        report.things_checked, 2,
        "the kept vase and the orphan: {report:?}"
    );
    assert_eq!(report.things_removed, vec![orphan.clone()]);
    assert_eq!(report.certificates_revoked, vec![loose_certificate.clone()]);
    assert!(report.leftovers.is_empty());

    assert!(!thing_exists(&orphan).await);
    assert!(!certificate_exists(&orphan_certificate).await);
    assert!(!certificate_exists(&loose_certificate).await);
    assert!(thing_exists(&kept_vase).await);
    assert_eq!(
        principals(&kept_vase).await,
        BTreeSet::from([kept_certificate.clone()])
    );
    assert!(certificate_exists(&kept_certificate).await);
    assert!(thing_exists(&young).await);
    assert!(thing_exists(&foreign).await);

    // Nothing left to do: a second run removes nothing.
    let again = run().await.unwrap();
    assert_eq!(
        (again.things_removed.len(), again.certificates_revoked.len()),
        (0, 0)
    );
    for thing in [young, foreign] {
        let _ = registry.delete_thing(&thing).await;
    }
}

/// A new active certificate with `policy`, attached to `thing` if given; returns its ARN.
async fn attach_new_certificate(
    registry: &dyn DeviceRegistry,
    thing: Option<&str>,
    policy: &str,
) -> String {
    let certificate = registry.create_certificate().await.unwrap();
    registry
        .attach_policy(policy, &certificate.arn)
        .await
        .unwrap();
    if let Some(thing) = thing {
        registry
            .attach_thing_principal(thing, &certificate.arn)
            .await
            .unwrap();
    }
    certificate.arn
}
