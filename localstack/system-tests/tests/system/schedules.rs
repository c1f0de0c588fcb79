//! The template's schedules on the emulator: a scheduled sweep that fails ends, whole, in
//! the function's failure destination (`EventInvokeConfig.DestinationConfig.OnFailure`),
//! never nowhere; a healthy one sends nothing there.

use std::collections::BTreeMap;
use std::time::Duration;

use bouquet_app::store::Store;
use bouquet_template::Template;
use devstack::provision::Names;
use devstack::schedules::{Run, Schedule};
use system_tests::{emulator_sdk_config, TestCloud, T0};

use crate::outbox::drain;

#[tokio::test]
async fn a_failing_scheduled_sweep_lands_whole_in_its_failure_destination() {
    let cloud = TestCloud::new().await;
    let template = Template::repository().unwrap();
    let sdk = emulator_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let stack = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut names = Names::new();
    system_tests::live::create_queues(
        &sqs,
        &template,
        &stack,
        &["ScheduledRunFailureQueue"],
        &mut names,
    )
    .await;
    let failures = names["ScheduledRunFailureQueue"].clone();

    // A registered vase, so the IoT sweep has a thing whose vase it must look up.
    cloud.vase(&cloud.vendor("Bloom").await).await;
    let later = T0.plus(Duration::from_secs(3600));

    // The fault, for real: the sweepers' table is gone, so DynamoDB refuses their reads.
    let mut broken = cloud.app_at(later);
    broken.store = Store::new(
        cloud.client.clone(),
        format!("missing-{}", ulid::Ulid::new()),
    );
    // The redrive's parking lot and bus, gone too.
    let mut broken = cloud.in_process(broken);
    broken.redrive = Some(redrive_on(
        &sdk,
        &format!("{}/missing-{}", sqs_base(&sqs).await, ulid::Ulid::new()),
        "missing-bus",
    ));
    let schedules = Schedule::from_template(&template, &names, &broken, 60, &sdk).unwrap();
    let mut scheduled: Vec<_> = schedules.iter().map(|s| s.function.as_str()).collect();
    scheduled.sort();
    assert_eq!(
        scheduled,
        [
            "expire-reservations",
            "flag-offline-vases",
            "reconcile-vase-things",
            "redrive-outbox"
        ]
    );
    const RUNS: usize = 3;
    for schedule in &schedules {
        assert_eq!(
            schedule.on_failure.max_attempts, 1,
            "{}: the next scheduled run is the retry",
            schedule.function
        );
        for _ in 0..RUNS {
            assert_eq!(
                schedule.run().await.unwrap(),
                Run::Failed {
                    attempts: 1,
                    sent_to_on_failure: true
                },
                "{}",
                schedule.function
            );
        }
    }

    let records = drain(&sqs, &failures).await;
    let mut per_function: BTreeMap<String, usize> = BTreeMap::new();
    for record in &records {
        assert_eq!(record["requestContext"]["condition"], "RetriesExhausted");
        assert_eq!(record["requestPayload"]["detail-type"], "Scheduled Event");
        assert_eq!(record["requestPayload"]["source"], "aws.events");
        let rule = record["requestPayload"]["resources"][0].as_str().unwrap();
        let message = record["responsePayload"]["errorMessage"].as_str().unwrap();
        assert!(
            message.contains("ResourceNotFound")
                || message.contains("not found")
                || message.contains("does not exist"),
            "the failure says why: {message}"
        );
        *per_function
            .entry(rule.rsplit('/').next().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(
        per_function,
        BTreeMap::from([
            ("expire-reservations".to_owned(), RUNS),
            ("flag-offline-vases".to_owned(), RUNS),
            ("reconcile-vase-things".to_owned(), RUNS),
            ("redrive-outbox".to_owned(), RUNS),
        ]),
        "every failed run, once"
    );

    // Healthy sweeps succeed at the first attempt and send nothing there.
    let mut working = cloud.in_process(cloud.app_at(later));
    let lot = system_tests::create_queue(&sqs, &format!("{stack}-parked")).await;
    working.redrive = Some(redrive_on(&sdk, &lot, "an-empty-lot-needs-no-bus"));
    let healthy = Schedule::from_template(&template, &names, &working, 60, &sdk).unwrap();
    for schedule in &healthy {
        assert_eq!(
            schedule.run().await.unwrap(),
            Run::Succeeded { attempts: 1 },
            "{}",
            schedule.function
        );
    }
    assert!(drain(&sqs, &failures).await.is_empty());
}

/// `redrive-outbox` on the parking lot `queue_url` and the bus `bus`.
fn redrive_on(
    sdk: &aws_config::SdkConfig,
    queue_url: &str,
    bus: &str,
) -> std::sync::Arc<redrive_outbox::Redrive> {
    std::sync::Arc::new(redrive_outbox::Redrive {
        outbox: bouquet_bus::Outbox {
            sink: Box::new(bouquet_bus::EventBridgeSink {
                client: aws_sdk_eventbridge::Client::new(sdk),
                bus_name: bus.to_owned(),
            }),
            parking: Box::new(bouquet_bus::SqsParkingLot {
                client: aws_sdk_sqs::Client::new(sdk),
                queue_url: queue_url.to_owned(),
            }),
        },
    })
}

/// The emulator's queue URL prefix (a queue URL without its name).
async fn sqs_base(sqs: &aws_sdk_sqs::Client) -> String {
    let probe = sqs
        .create_queue()
        .queue_name(format!("probe-{}", ulid::Ulid::new()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    probe.rsplit_once('/').unwrap().0.to_owned()
}
