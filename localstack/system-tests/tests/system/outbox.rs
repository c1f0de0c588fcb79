//! The outbox end to end on the emulator: state changes write event items in their
//! transactions; the table's stream, through the template's mapping (filter, batch size,
//! partial failures), feeds the publisher; a test rule on the bus forwards to a queue.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::Value;

use bouquet_template::Template;
use devstack::lambda::{Invoke, Resolver};
use devstack::provision::{self, Names};
use devstack::streams::StreamMapping;
use system_tests::live::{publisher, template_event, TestStack};
use system_tests::{emulator_sdk_config, PathParams, TestCloud};

pub(crate) struct Outbox {
    pub(crate) mapping: StreamMapping,
    pub(crate) bus: String,
    pub(crate) sqs: aws_sdk_sqs::Client,
    subscriber: String,
    /// Where the publisher parks what it could not publish.
    dead_letter: String,
    pub(crate) stack: String,
}

/// Provisions this test's bus and failure queue from the template, a subscriber queue with a
/// rule for every `bouquet.marketplace` event, and the publisher's stream mapping.
pub(crate) async fn outbox(cloud: &TestCloud, invoke: Option<Invoke>) -> Outbox {
    outbox_with(cloud, |publisher| invoke.unwrap_or(publisher)).await
}

/// The template's EventBridge rule of `binary` as the dev stack runs it, on this test's bus,
/// invoking `functions`' handler, with the function's failure destination `failure_queue`
/// created from the template; retried without waiting. Returns the target and the queues'
/// local names.
pub(crate) async fn rule_target(
    outbox: &Outbox,
    functions: &system_tests::InProcess,
    binary: &str,
    failure_queue: &str,
) -> (devstack::rules::RuleTarget, devstack::provision::Names) {
    use devstack::lambda::Resolver;
    let template = Template::repository().unwrap();
    let sdk = emulator_sdk_config().await;
    let mut names = devstack::provision::Names::new();
    names.insert("MarketEventBus".into(), outbox.bus.clone());
    devstack::provision::create_queue(
        &outbox.sqs,
        &template,
        failure_queue,
        &devstack::provision::local_name(&outbox.stack, failure_queue),
        &mut names,
    )
    .await
    .unwrap();
    let (function, rule) = template_event(&template, "EventBridgeRule", binary);
    let mut target = devstack::rules::RuleTarget::create(
        &template,
        &names,
        &outbox.stack,
        &function.logical_id,
        &function.binary,
        &rule,
        functions.require(binary).unwrap(),
        &sdk,
    )
    .await
    .unwrap();
    target.retry_after = Duration::ZERO;
    (target, names)
}

/// The publisher's function environment, resolved for this test's resources.
type PublisherEnv = HashMap<String, String>;

/// Like [`outbox`]; `choose` gets the template's publisher (in process) and returns what the
/// stream mapping invokes.
/// Puts one marketplace event (`detail_type`, `detail`) on the outbox's bus, as its
/// publisher does.
pub(crate) async fn put_on_bus(
    events: &aws_sdk_eventbridge::Client,
    outbox: &Outbox,
    detail_type: &str,
    detail: &Value,
) {
    let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
        .event_bus_name(&outbox.bus)
        .source("bouquet.marketplace")
        .detail_type(detail_type)
        .detail(detail.to_string())
        .build();
    events.put_events().entries(entry).send().await.unwrap();
}

/// Polls `target` until an event went to its on-failure destination (20 polls at the most);
/// returns how many did.
pub(crate) async fn sent_to_on_failure(target: &devstack::rules::RuleTarget) -> usize {
    let mut sent = 0;
    for _ in 0..20 {
        sent += target.poll(1).await.unwrap().sent_to_on_failure;
        if sent > 0 {
            break;
        }
    }
    sent
}

async fn outbox_with(cloud: &TestCloud, choose: impl FnOnce(Invoke) -> Invoke) -> Outbox {
    outbox_built(cloud, |env, sdk, sqs| {
        choose(publisher(env, sdk, sqs, None))
    })
    .await
}

async fn outbox_built(
    cloud: &TestCloud,
    build: impl FnOnce(&PublisherEnv, &aws_config::SdkConfig, &aws_sdk_sqs::Client) -> Invoke,
) -> Outbox {
    let stack = TestStack::with_outbox(cloud, &[]).await;
    let (template, sdk, names) = (&stack.template, &stack.sdk, &stack.names);
    let sqs = stack.sqs.clone();
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let subscriber = system_tests::create_queue(&sqs, &format!("{}-subscriber", stack.name)).await;
    let bus = names["MarketEventBus"].clone();
    subscribe(&events, &stack.name, &bus).await;

    let (event, env) = stack.publisher_stream();
    assert_eq!(
        env["EVENT_BUS_NAME"], bus,
        "the template's !Ref resolves to the local bus"
    );
    let dead_letter = names["OutboxDeadLetterQueue"].clone();
    assert_eq!(env["OUTBOX_DEAD_LETTER_QUEUE_URL"], dead_letter);
    let invoke = build(&env, sdk, &sqs);
    let stream = provision::resolve(template, &event["Properties"]["Stream"], names);
    assert!(
        stream.starts_with("arn:aws:dynamodb:"),
        "stream {stream} from {names:?}"
    );
    let failure_queue = names["OutboxFailureQueue"].clone();
    let mapping = StreamMapping::new(
        "publish-events".into(),
        stream,
        &event,
        Some(failure_queue),
        invoke,
        aws_sdk_dynamodbstreams::Client::new(sdk),
        sqs.clone(),
    );
    Outbox {
        mapping,
        bus,
        sqs,
        subscriber,
        dead_letter,
        stack: stack.name.clone(),
    }
}

/// A rule on `bus` sending every marketplace event to the test's subscriber queue.
async fn subscribe(events: &aws_sdk_eventbridge::Client, stack: &str, bus: &str) {
    events
        .put_rule()
        .name(format!("{stack}-all"))
        .event_bus_name(bus)
        .event_pattern(r#"{"source": ["bouquet.marketplace"]}"#)
        .send()
        .await
        .unwrap();
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("subscriber")
        .arn(format!(
            "arn:aws:sqs:eu-west-1:123456789012:{stack}-subscriber"
        ))
        .build()
        .unwrap();
    events
        .put_targets()
        .rule(format!("{stack}-all"))
        .event_bus_name(bus)
        .targets(target)
        .send()
        .await
        .unwrap();
}

/// `get-vendor-analytics` of `vendor`, asked by its shop.
async fn vendor_analytics(cloud: &TestCloud, vendor: &str) -> system_tests::ApiResponse {
    let request = system_tests::ApiRequest::fixture("get-vendor-analytics").own_shop(vendor);
    cloud.call("get-vendor-analytics", request).await
}

/// What the publisher's stream mapping sent to its on-failure destination, drained.
async fn drained_on_failure(outbox: &Outbox) -> Vec<Value> {
    let queue = outbox.mapping.on_failure_queue_url.clone().unwrap();
    drain(&outbox.sqs, &queue).await
}

/// The function the template's analytics rule invokes.
const ANALYTICS_PROJECTOR: &str = "project-vendor-analytics";

/// The template's EventBridge rule of the [`ANALYTICS_PROJECTOR`] on the outbox's bus, as the
/// dev stack runs it under a stack name of its own, invoking `invoke`; the template's `queues`
/// are made first. Returns the target and the local names.
async fn analytics_rule(
    outbox: &Outbox,
    queues: &[&str],
    invoke: Invoke,
) -> (devstack::rules::RuleTarget, Names) {
    let template = Template::repository().unwrap();
    let sdk = emulator_sdk_config().await;
    let (function, event) = template_event(&template, "EventBridgeRule", ANALYTICS_PROJECTOR);
    let stack = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut names = Names::new();
    names.insert("MarketEventBus".into(), outbox.bus.clone());
    system_tests::live::create_queues(&outbox.sqs, &template, &stack, queues, &mut names).await;
    let target = devstack::rules::RuleTarget::create(
        &template,
        &names,
        &stack,
        &function.logical_id,
        &function.binary,
        &event,
        invoke,
        &sdk,
    )
    .await
    .unwrap();
    (target, names)
}

/// Asserts the first day of `analytics`: `sales` sales, `revenue` euros in all.
#[track_caller]
fn assert_first_day(analytics: &system_tests::ApiResponse, sales: u64, revenue: &str) {
    let day = &analytics.body["days"][0];
    assert_eq!(day["sales"], sales, "{}", analytics.body);
    let euros = serde_json::json!([{ "amount": revenue, "currency": "EUR" }]);
    assert_eq!(day["revenue"], euros, "{}", analytics.body);
}

/// Polls the mapping until a poll finds nothing new (20 polls at the most).
async fn until_idle(mapping: &mut StreamMapping) -> Vec<devstack::streams::PollReport> {
    polled_until_idle(mapping, 20).await
}

/// Polls the mapping until a poll finds nothing new, `polls` at the most; returns each
/// poll's report.
async fn polled_until_idle(
    mapping: &mut StreamMapping,
    polls: usize,
) -> Vec<devstack::streams::PollReport> {
    let mut reports = Vec::new();
    for _ in 0..polls {
        let report = mapping.poll().await.unwrap();
        let idle = report.records == 0;
        reports.push(report);
        if idle {
            break;
        }
    }
    reports
}

#[tokio::test]
async fn events_published_while_the_bus_is_gone_are_parked_whole_and_redriven_exactly_once() {
    let cloud = TestCloud::new().await;
    // The bus goes away: every PutEvents fails, for longer than every retry.
    let (mut outbox, events) = outbox_without_its_bus(&cloud).await;
    let vendors = [
        cloud.vendor_without_payouts("Bloom").await,
        cloud.vendor_without_payouts("Petal").await,
    ];
    let reports = until_idle(&mut outbox.mapping).await;
    assert_eq!(
        reports.iter().map(|r| r.sent_to_on_failure).sum::<usize>(),
        0,
        "parked, not handed to the on-failure destination: {reports:?}"
    );
    // Parked whole: the outbox item with its full detail.
    let parked = drain_keep(&outbox.sqs, &outbox.dead_letter).await;
    assert_eq!(parked.len(), 2, "{parked:?}");
    for item in &parked {
        assert_eq!(item["eventName"], "VendorOnboarded");
        let detail: Value = serde_json::from_str(item["detail"].as_str().unwrap()).unwrap();
        assert!(vendors.contains(&detail["data"]["vendorId"].as_str().unwrap().to_owned()));
    }
    assert!(drain(&outbox.sqs, &outbox.subscriber).await.is_empty());

    // The bus is back; the operator redrives (the redrive function's code, on the emulator).
    bring_the_bus_back(&events, &outbox).await;
    let (parking, sink) = (parking_lot(&outbox), bus_sink(&outbox, events.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let report = bouquet_bus::redrive(&parking, &sink, 10, deadline)
        .await
        .unwrap();
    assert_eq!(
        (report.taken, report.republished, report.still_parked),
        (2, 2, 0)
    );
    let again = bouquet_bus::redrive(&parking, &sink, 10, deadline)
        .await
        .unwrap();
    assert_eq!(again.taken, 0, "the lot is empty");

    let delivered = delivered_event_ids(&outbox).await;
    let distinct: HashSet<&String> = delivered.iter().collect();
    assert_eq!(
        (delivered.len(), distinct.len()),
        (2, 2),
        "each event exactly once: {delivered:?}"
    );
    let parked_ids: HashSet<String> = parked
        .iter()
        .map(|i| i["eventId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        distinct.into_iter().cloned().collect::<HashSet<_>>(),
        parked_ids
    );
}

/// Nothing waits for a human: events parked while the bus was gone are republished by the
/// template's own schedule of `redrive-outbox` (its scheduled event, its handler), each once.
#[tokio::test]
async fn parked_events_are_republished_by_the_schedule_not_by_a_person() {
    let cloud = TestCloud::new().await;
    let (mut outbox, events) = outbox_without_its_bus(&cloud).await;
    let vendor = cloud.vendor_without_payouts("Bloom").await;
    until_idle(&mut outbox.mapping).await;
    assert_eq!(drain_keep(&outbox.sqs, &outbox.dead_letter).await.len(), 1);

    // The template's schedule, with the function's own handler behind it.
    let mut functions = cloud.in_process(cloud.app.clone());
    functions.redrive = Some(std::sync::Arc::new(redrive_outbox::Redrive {
        outbox: bouquet_bus::Outbox {
            sink: Box::new(bus_sink(&outbox, events.clone())),
            parking: Box::new(parking_lot(&outbox)),
        },
    }));
    let template = Template::repository().unwrap();
    let sdk = emulator_sdk_config().await;
    let schedules =
        devstack::schedules::Schedule::from_template(&template, &Names::new(), &functions, 1, &sdk)
            .unwrap();
    let redrive = schedules
        .iter()
        .find(|s| s.function == "redrive-outbox")
        .expect("the template schedules the redrive");
    assert_eq!(redrive.every, Duration::from_secs(300));
    // While the bus is still gone, a run leaves the event parked.
    assert!(matches!(
        redrive.run().await.unwrap(),
        devstack::schedules::Run::Succeeded { .. }
    ));
    assert_eq!(drain_keep(&outbox.sqs, &outbox.dead_letter).await.len(), 1);
    // The bus is back: the next run delivers it, once.
    bring_the_bus_back(&events, &outbox).await;
    redrive.run().await.unwrap();
    redrive.run().await.unwrap();
    let delivered = drain(&outbox.sqs, &outbox.subscriber).await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0]["detail"]["data"]["vendorId"], vendor.as_str());
    assert!(drain_keep(&outbox.sqs, &outbox.dead_letter)
        .await
        .is_empty());
}

/// This test's [`outbox`], its bus [taken away](take_the_bus_away); and a client of the
/// emulator's EventBridge.
async fn outbox_without_its_bus(cloud: &TestCloud) -> (Outbox, aws_sdk_eventbridge::Client) {
    let outbox = outbox(cloud, None).await;
    let events = aws_sdk_eventbridge::Client::new(&emulator_sdk_config().await);
    take_the_bus_away(&events, &outbox).await;
    (outbox, events)
}

/// The bus is back, with the rule to the subscriber queue.
async fn bring_the_bus_back(events: &aws_sdk_eventbridge::Client, outbox: &Outbox) {
    let created = events.create_event_bus().name(&outbox.bus).send().await;
    created.unwrap();
    subscribe(events, &outbox.stack, &outbox.bus).await;
}

/// The bus goes away (its rule, its target, the bus itself): every PutEvents fails.
async fn take_the_bus_away(events: &aws_sdk_eventbridge::Client, outbox: &Outbox) {
    let rule = format!("{}-all", outbox.stack);
    events
        .remove_targets()
        .rule(&rule)
        .event_bus_name(&outbox.bus)
        .ids("subscriber")
        .send()
        .await
        .unwrap();
    events
        .delete_rule()
        .name(&rule)
        .event_bus_name(&outbox.bus)
        .send()
        .await
        .unwrap();
    events
        .delete_event_bus()
        .name(&outbox.bus)
        .send()
        .await
        .unwrap();
}

/// Where the outbox's publisher parks events, as the redrive reads them.
fn parking_lot(outbox: &Outbox) -> bouquet_bus::SqsParkingLot {
    bouquet_bus::SqsParkingLot {
        client: outbox.sqs.clone(),
        queue_url: outbox.dead_letter.clone(),
    }
}

/// The outbox's bus, as the redrive republishes to it through `client`.
fn bus_sink(outbox: &Outbox, client: aws_sdk_eventbridge::Client) -> bouquet_bus::EventBridgeSink {
    bouquet_bus::EventBridgeSink {
        client,
        bus_name: outbox.bus.clone(),
    }
}

/// The `eventId`s of the events the subscriber received (and deleted), in the order read.
async fn delivered_event_ids(outbox: &Outbox) -> Vec<String> {
    let received = drain(&outbox.sqs, &outbox.subscriber).await;
    received
        .iter()
        .map(|e| e["detail"]["eventId"].as_str().unwrap().to_owned())
        .collect()
}

/// Reads every message of `queue` and makes them visible again at once (left on the queue).
async fn drain_keep(sqs: &aws_sdk_sqs::Client, queue: &str) -> Vec<Value> {
    let mut bodies = Vec::new();
    for message in system_tests::receive_now(sqs, queue, None).await {
        bodies.push(serde_json::from_str(message.body().unwrap_or("null")).unwrap());
        sqs.change_message_visibility()
            .queue_url(queue)
            .receipt_handle(message.receipt_handle().unwrap())
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
    }
    bodies
}

pub(crate) async fn drain(sqs: &aws_sdk_sqs::Client, queue: &str) -> Vec<Value> {
    let mut bodies = Vec::new();
    loop {
        let messages = system_tests::receive_now(sqs, queue, None).await;
        if messages.is_empty() {
            return bodies;
        }
        for message in messages {
            bodies.push(serde_json::from_str(message.body().unwrap_or("null")).unwrap());
            sqs.delete_message()
                .queue_url(queue)
                .receipt_handle(message.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn every_event_reaches_the_bus_once_and_in_order_per_aggregate() {
    let cloud = TestCloud::new().await;
    let mut outbox = outbox(&cloud, None).await;
    let vendor = cloud.vendor("Bloom").await;
    for i in 0..3 {
        let bouquet = cloud.bouquet(&vendor, "10.00").await;
        let order = cloud
            .reserve(&format!("customer-{i}"), &[&bouquet])
            .await
            .body["orderId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            cloud
                .pay(&format!("customer-{i}"), &order, "tok_visa", None)
                .await
                .status,
            200
        );
    }
    let mut delivered = 0;
    for _ in 0..10 {
        let report = outbox.mapping.poll().await.unwrap();
        assert_eq!(report.failed_batches, 0);
        delivered += report.delivered;
        if report.records == 0 {
            break;
        }
    }
    let items = cloud.items_of("event").await;
    assert_eq!(
        delivered,
        items.len(),
        "the filter passed exactly the event items"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let received = drain(&outbox.sqs, &outbox.subscriber).await;
    let expected: HashSet<String> = items
        .iter()
        .map(|i| i["eventId"].as_s().unwrap().clone())
        .collect();
    let ids: Vec<String> = received
        .iter()
        .map(|e| e["detail"]["eventId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), expected.len(), "each exactly once: {ids:?}");
    assert_eq!(ids.iter().cloned().collect::<HashSet<_>>(), expected);
    let mut last_version: HashMap<String, u64> = HashMap::new();
    for event in &received {
        assert_eq!(event["source"], "bouquet.marketplace");
        let name = event["detail-type"].as_str().unwrap();
        assert!(
            [
                "VendorOnboarded",
                "VendorPayoutsChanged",
                "BouquetListed",
                "OrderReserved",
                "OrderDeliveryChanged",
                "OrderPaid"
            ]
            .contains(&name),
            "{name}"
        );
        let aggregate = event["detail"]["aggregateId"].as_str().unwrap().to_owned();
        let version = event["detail"]["aggregateVersion"].as_u64().unwrap();
        let previous = last_version.insert(aggregate.clone(), version).unwrap_or(0);
        assert!(
            version > previous,
            "{aggregate}: version {version} after {previous}"
        );
    }
    let names: Vec<&str> = received
        .iter()
        .filter_map(|e| e["detail-type"].as_str())
        .collect();
    assert_eq!(names.iter().filter(|n| **n == "OrderPaid").count(), 3);

    // The bus's events, delivered twice to the analytics consumer, count once.
    for event in received.iter().chain(received.iter()) {
        cloud
            .run_event_function("project-vendor-analytics", event.clone())
            .await;
    }
    let request = system_tests::ApiRequest::fixture("get-vendor-analytics")
        .own_shop(&vendor)
        .query("from", "2026-12-02")
        .query("to", "2026-12-02");
    let analytics = cloud.call("get-vendor-analytics", request).await;
    assert_first_day(&analytics, 3, "30.00");
}

#[tokio::test]
async fn a_record_that_keeps_failing_ends_on_the_failure_queue_and_the_rest_flows() {
    let cloud = TestCloud::new().await;
    // A publisher that cannot publish the first event it ever sees, and publishes nothing else
    // before it (reports it failed every time).
    let poison: std::sync::Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let seen = poison.clone();
    let invoke = system_tests::in_process::invoke(move |event: Value| {
        let seen = seen.clone();
        async move {
            let first = event["Records"][0]["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap()
                .to_owned();
            let target = seen.lock().unwrap().get_or_insert(first).clone();
            let failed: Vec<Value> = event["Records"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["dynamodb"]["SequenceNumber"] == target.as_str())
                .map(|_| serde_json::json!({ "itemIdentifier": target }))
                .collect();
            Ok(serde_json::json!({ "batchItemFailures": failed }))
        }
    });
    let mut outbox = outbox(&cloud, Some(invoke)).await;
    cloud.vendor_without_payouts("Bloom").await;
    cloud.vendor_without_payouts("Petal").await;
    let reports = polled_until_idle(&mut outbox.mapping, 10).await;
    let failures = drained_on_failure(&outbox).await;
    assert_eq!(failures.len(), 1, "{reports:?}");
    assert_eq!(
        failures[0]["DDBStreamBatchInfo"]["startSequenceNumber"],
        poison.lock().unwrap().clone().unwrap().as_str()
    );
    assert_eq!(
        reports.iter().map(|r| r.failed_batches).sum::<usize>(),
        6,
        "first try plus MaximumRetryAttempts (5)"
    );
    assert_eq!(
        reports.iter().map(|r| r.delivered).sum::<usize>(),
        1,
        "the record behind it was delivered: {reports:?}"
    );
}

#[tokio::test]
async fn a_function_error_bisects_the_batch_until_only_the_poison_record_fails() {
    let cloud = TestCloud::new().await;
    // A publisher that errors (no batchItemFailures, a function error) whenever its batch holds
    // the third event, and otherwise records what it was given.
    let poison: std::sync::Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let delivered: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let batches: std::sync::Arc<std::sync::Mutex<Vec<usize>>> = Default::default();
    let (seen, done, sizes) = (poison.clone(), delivered.clone(), batches.clone());
    let invoke = system_tests::in_process::invoke(move |event: Value| {
        let (seen, done, sizes) = (seen.clone(), done.clone(), sizes.clone());
        async move {
            let sequences: Vec<String> = event["Records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["dynamodb"]["SequenceNumber"].as_str().unwrap().to_owned())
                .collect();
            sizes.lock().unwrap().push(sequences.len());
            let target = {
                let mut poison = seen.lock().unwrap();
                if poison.is_none() && sequences.len() >= 3 {
                    *poison = Some(sequences[2].clone());
                }
                poison.clone()
            };
            if target.is_some_and(|t| sequences.contains(&t)) {
                return Err("poison record in the batch".into());
            }
            done.lock().unwrap().extend(sequences);
            Ok(serde_json::json!({ "batchItemFailures": [] }))
        }
    });
    let mut outbox = outbox(&cloud, Some(invoke)).await;
    assert!(outbox.mapping.bisect_on_error, "the template bisects");
    for name in [
        "Bloom", "Petal", "Stem", "Leaf", "Root", "Seed", "Bud", "Thorn",
    ] {
        cloud.vendor_without_payouts(name).await;
    }
    let reports = polled_until_idle(&mut outbox.mapping, 30).await;
    let poison = poison
        .lock()
        .unwrap()
        .clone()
        .expect("a batch of at least 3");
    let delivered = delivered.lock().unwrap().clone();
    let batches = batches.lock().unwrap().clone();
    assert_eq!(
        batches[0], 8,
        "one batch of the 8 events first: {batches:?}"
    );
    assert_eq!(
        delivered.len(),
        7,
        "every other event delivered: {delivered:?}"
    );
    assert_eq!(
        delivered.iter().collect::<HashSet<_>>().len(),
        7,
        "each once: {delivered:?}"
    );
    assert!(!delivered.contains(&poison));
    let mut in_order = delivered.clone();
    in_order.sort();
    assert_eq!(delivered, in_order, "halves go in stream order");
    // 8 -> 4 (holds it) -> 2 (holds it) -> 1: three splits, then the one-record batch is
    // tried 1 + MaximumRetryAttempts (5) times.
    assert_eq!(
        reports.iter().map(|r| r.bisected).sum::<usize>(),
        3,
        "{reports:?}"
    );
    assert_eq!(
        batches.iter().filter(|&&size| size == 1).count(),
        6 + 1,
        "the poison alone six times, and the other half of the last split once: {batches:?}"
    );
    let failures = drained_on_failure(&outbox).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(
        failures[0]["DDBStreamBatchInfo"]["startSequenceNumber"],
        poison.as_str()
    );
    assert_eq!(
        failures[0]["DDBStreamBatchInfo"]["endSequenceNumber"],
        poison.as_str()
    );
}

#[tokio::test]
async fn the_dev_stack_delivers_the_template_rule_to_the_analytics_projector() {
    let cloud = TestCloud::new().await;
    let mut outbox = outbox(&cloud, None).await;
    let projector = cloud
        .in_process(cloud.app.clone())
        .invoker(ANALYTICS_PROJECTOR)
        .expect("the projector in process");
    let (target, _) = analytics_rule(&outbox, &[], projector).await;

    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "34.90").await;
    let order = cloud.reserved_order_id("customer-1", &[&bouquet]).await;
    assert_eq!(cloud.pay_by_card("customer-1", &order).await.status, 200);
    while outbox.mapping.poll().await.unwrap().records > 0 {}
    // The rule's pattern passes BouquetListed (the bouquet takes its shop's rating) and
    // OrderPaid, not VendorOnboarded or OrderReserved: two deliveries.
    let mut delivered = 0;
    for _ in 0..5 {
        let report = target.poll(1).await.unwrap();
        assert_eq!(report.failed, 0);
        delivered += report.delivered;
        if delivered > 1 && report.delivered == 0 {
            break;
        }
    }
    assert_eq!(delivered, 2);
    let analytics = vendor_analytics(&cloud, &vendor).await;
    assert_first_day(&analytics, 1, "34.90");
}

#[tokio::test]
async fn a_projector_failing_on_an_event_leaves_it_whole_in_its_failure_destination() {
    let cloud = TestCloud::new().await;
    let outbox = outbox(&cloud, None).await;
    // A projector that fails on every event (a bug, a dependency down).
    let attempts: std::sync::Arc<std::sync::atomic::AtomicUsize> = Default::default();
    let counter = attempts.clone();
    let failing = system_tests::in_process::invoke(move |_event: Value| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { Err("the projector failed".into()) }
    });
    let (mut target, names) = analytics_rule(&outbox, &["AnalyticsFailureQueue"], failing).await;
    target.retry_after = Duration::ZERO;
    assert_eq!(
        target.on_failure.max_attempts, 3,
        "1 + EventInvokeConfig.MaximumRetryAttempts"
    );

    // An OrderPaid of a 1,200,000.00 sale on the bus.
    let fixture: Value = system_tests::event_fixture("project-vendor-analytics");
    let vendor = cloud.vendor("Bloom").await;
    let mut detail = fixture["detail"].clone();
    detail["data"]["vendorId"] = serde_json::json!(vendor);
    detail["data"]["total"]["amount"] = serde_json::json!("1200000.00");
    let events = aws_sdk_eventbridge::Client::new(&emulator_sdk_config().await);
    put_on_bus(&events, &outbox, "OrderPaid", &detail).await;
    assert_eq!(sent_to_on_failure(&target).await, 1);
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 3);
    let records = drain(&outbox.sqs, &names["AnalyticsFailureQueue"]).await;
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record["requestContext"]["condition"], "RetriesExhausted");
    assert_eq!(
        record["requestPayload"]["detail"], detail,
        "the event, whole"
    );

    // Once the projector works again, the parked event is counted, once.
    let applied = cloud
        .run_event_function("project-vendor-analytics", record["requestPayload"].clone())
        .await;
    assert_eq!(applied["applied"], true);
    let analytics = vendor_analytics(&cloud, &vendor).await;
    assert_eq!(
        analytics.body["days"][0]["revenue"],
        serde_json::json!([{ "amount": "1200000.00", "currency": "EUR" }]),
        "{}",
        analytics.body
    );
}

/// An EventBridge outage injected at the SDK layer: every request fails before it is sent
/// while `down` is set.
#[derive(Clone, Debug, Default)]
struct Outage(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl aws_sdk_eventbridge::config::Intercept for Outage {
    fn name(&self) -> &'static str {
        "Outage"
    }

    fn read_before_transmit(
        &self,
        _: &aws_sdk_eventbridge::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_eventbridge::config::RuntimeComponents,
        _: &mut aws_sdk_eventbridge::config::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            Err("injected: EventBridge unreachable".into())
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn an_eventbridge_outage_at_the_sdk_layer_parks_every_event_and_the_redrive_delivers_each_once(
) {
    let cloud = TestCloud::new().await;
    let sdk = emulator_sdk_config().await;
    let outage = Outage::default();
    outage.0.store(true, std::sync::atomic::Ordering::SeqCst);
    let failing = aws_sdk_eventbridge::Client::from_conf(
        aws_sdk_eventbridge::config::Builder::from(&sdk)
            .interceptor(outage.clone())
            .build(),
    );
    let sink_client = failing.clone();
    let mut outbox = outbox_built(&cloud, move |env, sdk, sqs| {
        publisher(env, sdk, sqs, Some(sink_client))
    })
    .await;
    for name in ["Bloom", "Petal", "Stem"] {
        cloud.vendor_without_payouts(name).await;
    }
    let reports = until_idle(&mut outbox.mapping).await;
    assert_eq!(
        reports.iter().map(|r| r.sent_to_on_failure).sum::<usize>(),
        0,
        "{reports:?}"
    );
    assert_eq!(
        drain_keep(&outbox.sqs, &outbox.dead_letter).await.len(),
        3,
        "parked whole"
    );
    assert!(drain(&outbox.sqs, &outbox.subscriber).await.is_empty());

    // EventBridge is reachable again: the redrive, through the same client, delivers each once.
    outage.0.store(false, std::sync::atomic::Ordering::SeqCst);
    let (parking, sink) = (parking_lot(&outbox), bus_sink(&outbox, failing));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let report = bouquet_bus::redrive(&parking, &sink, 10, deadline)
        .await
        .unwrap();
    assert_eq!((report.republished, report.still_parked), (3, 0));
    let delivered = delivered_event_ids(&outbox).await;
    let distinct: HashSet<&String> = delivered.iter().collect();
    assert_eq!((delivered.len(), distinct.len()), (3, 3), "{delivered:?}");
}
