//! The outbox publisher (docs/architecture.md, invariant 5).
//!
//! It publishes outbox items ([`bouquet_events::OutboxItem`], read from the table's stream) to
//! the custom bus: each item's `detail` as it is (source `bouquet.marketplace`, detail-type =
//! the event name, `Time` = `occurredAt`), in chunks of at most 10 entries and 256 KB. Every
//! failed entry and every failed call is mapped back to its record's sequence number, so the
//! function reports it in `batchItemFailures` and Lambda retries from there.
//!
//! Order per aggregate: a chunk carries at most one record of an aggregate, chunks go out one
//! after the other, and once a record of an aggregate fails, its later records in the batch
//! are not published but reported too, so a later event never overtakes an earlier one.

use std::collections::HashSet;

use bouquet_events::{OutboxItem, StreamRecord, SOURCE};
use bouquet_retry::Retry;

pub mod emf;
mod parking;

pub use parking::{park_failed, redrive, Parked, ParkingLot, RedriveReport, SqsParkingLot};

/// PutEvents limits: 10 entries and 256 KB per call.
pub const MAX_ENTRIES: usize = 10;
pub const MAX_CALL_BYTES: usize = 256 * 1024;

/// One item to publish, with the sequence number of its stream record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub sequence_number: String,
    pub item: OutboxItem,
}

/// Why one entry of a call was not accepted.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct EntryFailure {
    pub code: String,
    pub message: String,
}

/// Why a whole call failed: nothing of it can be assumed published.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the bus throttled the call")]
    Throttled,
    #[error("the bus did not answer: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the bus refused the call: {0}")]
    Refused(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Splits read stream records into items to publish and the sequence numbers of records that
/// can never be published (unreadable, larger than PutEvents allows): those are reported as
/// failures so they end on the on-failure destination instead of vanishing.
pub fn outgoing(records: impl IntoIterator<Item = StreamRecord>) -> (Vec<Outgoing>, Vec<String>) {
    let mut events = Vec::new();
    let mut poison = Vec::new();
    for record in records {
        match record {
            StreamRecord::Event {
                sequence_number,
                item,
            } if item.published_size() > MAX_CALL_BYTES => {
                tracing::error!(event_id = %item.event_id, size = item.published_size(), "event larger than PutEvents allows");
                poison.push(sequence_number);
            }
            StreamRecord::Event {
                sequence_number,
                item,
            } => events.push(Outgoing {
                sequence_number,
                item: *item,
            }),
            StreamRecord::Other => {}
            StreamRecord::Unreadable {
                sequence_number,
                error,
            } => {
                tracing::error!(%sequence_number, %error, "unreadable event record");
                poison.push(sequence_number);
            }
        }
    }
    (events, poison)
}

/// The result of one entry of a `PutEvents` call.
pub type EntryResult = Result<(), EntryFailure>;

/// Where events go: EventBridge in production, fakes in tests.
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    /// Publishes `entries`; `Ok` holds one result per entry, in order. `Err` means the whole
    /// call failed (nothing can be assumed published).
    async fn put_events(&self, entries: &[OutboxItem]) -> Result<Vec<EntryResult>, CallError>;
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct PublishReport {
    pub records_in: usize,
    pub published: usize,
    /// Failed events parked whole on the dead-letter queue (no longer failures).
    pub parked: usize,
    /// Sequence numbers to report in `batchItemFailures`, in batch order.
    pub failed: Vec<String>,
    pub calls: usize,
}

/// How often an entry is sent within one invocation before its record is reported failed.
/// Retrying here, in order, is cheaper than a redelivery, which resends every record after
/// the lowest failed one.
pub const ATTEMPTS_PER_ENTRY: usize = 3;

/// Publishes `events` (in stream order) through `sink`, keeping order per aggregate.
/// Entries that failed are sent again after a jittered backoff, but never past `deadline`:
/// what is still failing then is reported failed.
pub async fn publish(
    sink: &dyn EventSink,
    events: &[Outgoing],
    deadline: tokio::time::Instant,
) -> PublishReport {
    let mut report = PublishReport {
        records_in: events.len(),
        ..PublishReport::default()
    };
    let mut backoff = Retry::attempts(ATTEMPTS_PER_ENTRY as u32);
    let mut give_up = false;
    let mut failed: HashSet<usize> = HashSet::new();
    let mut blocked: HashSet<String> = HashSet::new();
    let mut attempts: Vec<usize> = vec![0; events.len()];
    // Indexes into `events`, in stream order.
    let mut pending: Vec<usize> = (0..events.len()).collect();
    while !pending.is_empty() {
        // Later records of an aggregate that failed are not published in this batch.
        pending.retain(|&i| {
            let keep = !blocked.contains(&events[i].item.aggregate_id);
            if !keep {
                failed.insert(i);
            }
            keep
        });
        // At most one record per aggregate (its earliest pending one) per call.
        let mut chunk: Vec<usize> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut bytes = 0;
        for &i in &pending {
            let event = &events[i];
            let first_of_aggregate = seen.insert(event.item.aggregate_id.as_str());
            if first_of_aggregate
                && chunk.len() < MAX_ENTRIES
                && bytes + event.item.published_size() <= MAX_CALL_BYTES
            {
                bytes += event.item.published_size();
                chunk.push(i);
            }
        }
        if chunk.is_empty() {
            break;
        }
        report.calls += 1;
        let entries: Vec<OutboxItem> = chunk.iter().map(|&i| events[i].item.clone()).collect();
        let results: Vec<EntryResult> = match sink.put_events(&entries).await {
            Ok(results) => results,
            Err(error) => {
                tracing::warn!(error = %bouquet_aws::describe(&error), entries = chunk.len(), "PutEvents call failed");
                let failure = EntryFailure {
                    code: "CallFailed".into(),
                    message: error.to_string(),
                };
                vec![Err(failure); chunk.len()]
            }
        };
        let mut done: HashSet<usize> = HashSet::new();
        for (position, &i) in chunk.iter().enumerate() {
            attempts[i] += 1;
            match results.get(position) {
                Some(Ok(())) => {
                    report.published += 1;
                    done.insert(i);
                }
                outcome => {
                    tracing::warn!(event_id = %events[i].item.event_id, attempt = attempts[i], error = ?outcome, "entry failed");
                    if attempts[i] >= ATTEMPTS_PER_ENTRY {
                        failed.insert(i);
                        blocked.insert(events[i].item.aggregate_id.clone());
                        done.insert(i);
                    }
                }
            }
        }
        let retrying = chunk.iter().any(|i| !done.contains(i));
        pending.retain(|i| !done.contains(i));
        if retrying && !give_up {
            // Back off before the next round; with no time left, give up on what failed.
            if tokio::time::Instant::now() + backoff.ceiling(backoff.attempt()) >= deadline {
                give_up = true;
            } else {
                backoff.wait().await;
            }
        }
        if give_up {
            for &i in chunk.iter().filter(|i| !done.contains(i)) {
                failed.insert(i);
                blocked.insert(events[i].item.aggregate_id.clone());
            }
            pending.retain(|i| !failed.contains(i));
        }
    }
    let mut failed: Vec<usize> = failed.into_iter().collect();
    failed.sort_unstable();
    report.failed = failed
        .into_iter()
        .map(|i| events[i].sequence_number.clone())
        .collect();
    report
}

/// What the publisher and the redrive hold per container: the bus and the parking lot,
/// from `EVENT_BUS_NAME` and `OUTBOX_DEAD_LETTER_QUEUE_URL`.
pub struct Outbox {
    pub sink: Box<dyn EventSink>,
    pub parking: Box<dyn ParkingLot>,
}

/// A container that cannot be configured: init fails with this.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not set")]
pub struct MissingSetting(&'static str);

impl Outbox {
    /// The bus and the parking queue the template names, on the function's SDK configuration.
    pub fn from_env(config: &bouquet_aws::SdkConfig) -> Result<Self, MissingSetting> {
        let bus_name =
            std::env::var("EVENT_BUS_NAME").map_err(|_| MissingSetting("EVENT_BUS_NAME"))?;
        let queue_url = std::env::var("OUTBOX_DEAD_LETTER_QUEUE_URL")
            .map_err(|_| MissingSetting("OUTBOX_DEAD_LETTER_QUEUE_URL"))?;
        Ok(Self {
            sink: Box::new(EventBridgeSink {
                client: bouquet_aws::client!(aws_sdk_eventbridge, config),
                bus_name,
            }),
            parking: Box::new(SqsParkingLot {
                client: bouquet_aws::client!(aws_sdk_sqs, config),
                queue_url,
            }),
        })
    }
}

/// EventBridge as the sink.
pub struct EventBridgeSink {
    pub client: aws_sdk_eventbridge::Client,
    pub bus_name: String,
}

#[async_trait::async_trait]
impl EventSink for EventBridgeSink {
    async fn put_events(&self, entries: &[OutboxItem]) -> Result<Vec<EntryResult>, CallError> {
        use aws_sdk_eventbridge::primitives::DateTime;
        use aws_sdk_eventbridge::types::PutEventsRequestEntry;
        let request = entries.iter().map(|e| {
            PutEventsRequestEntry::builder()
                .event_bus_name(&self.bus_name)
                .source(SOURCE)
                .detail_type(&e.event_name)
                .detail(&e.detail)
                .time(DateTime::from_millis(e.occurred_at))
                .set_trace_header(e.trace_header.clone())
                .build()
        });
        let output = self
            .client
            .put_events()
            .set_entries(Some(request.collect()))
            .send()
            .await
            .map_err(call_error)?;
        Ok(output
            .entries()
            .iter()
            .map(|entry| match entry.error_code() {
                Some(code) => Err(EntryFailure {
                    code: code.to_owned(),
                    message: entry.error_message().unwrap_or_default().to_owned(),
                }),
                None => Ok(()),
            })
            .collect())
    }
}

/// The SDK's error, by kind: throttling and transport failures are worth retrying.
fn call_error(
    error: aws_sdk_eventbridge::error::SdkError<
        aws_sdk_eventbridge::operation::put_events::PutEventsError,
    >,
) -> CallError {
    use aws_sdk_eventbridge::error::{ProvideErrorMetadata, SdkError};
    match &error {
        SdkError::ServiceError(service)
            if matches!(
                service.err().code(),
                Some("ThrottlingException" | "LimitExceededException")
            ) =>
        {
            CallError::Throttled
        }
        SdkError::ServiceError(_) => CallError::Refused(Box::new(error)),
        _ => CallError::Unavailable(Box::new(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::event::dynamodb::Event;
    use std::collections::HashMap;

    fn far() -> tokio::time::Instant {
        tokio::time::Instant::now() + std::time::Duration::from_secs(3600)
    }
    use std::sync::Mutex;

    /// A stream record of an outbox item, as DynamoDB Streams delivers it.
    fn record(sequence: u64, aggregate: &str, version: u64) -> serde_json::Value {
        let event_id = format!("ev-{aggregate}-{version}");
        let detail = serde_json::json!({ "eventId": event_id, "aggregateId": aggregate, "aggregateVersion": version }).to_string();
        let item = OutboxItem {
            pk: format!("OUTBOX#{aggregate}"),
            sk: format!("EVENT#{version:020}#{event_id}"),
            entity: bouquet_events::ENTITY.into(),
            event_id,
            event_name: "OrderReserved".into(),
            aggregate_id: aggregate.into(),
            aggregate_version: version,
            occurred_at: 1_796_228_211_000,
            correlation_id: "corr".into(),
            detail,
            expires_at: 1_796_833_011,
            trace_header: None,
        };
        let image =
            serde_json::to_value(serde_dynamo::to_item::<_, serde_dynamo::Item>(&item).unwrap())
                .unwrap();
        serde_json::json!({
            "eventID": format!("{sequence}"), "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
            "dynamodb": {
                "ApproximateCreationDateTime": 1796228211.0,
                "Keys": { "pk": image["pk"], "sk": image["sk"] },
                "NewImage": image,
                "SequenceNumber": format!("{sequence:021}"), "SizeBytes": 200, "StreamViewType": "NEW_AND_OLD_IMAGES"
            },
            "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/2026"
        })
    }

    fn batch(records: Vec<serde_json::Value>) -> Vec<StreamRecord> {
        let event: Event = serde_json::from_value(serde_json::json!({ "Records": records }))
            .expect("a DynamoDB stream event");
        event.records.into_iter().map(StreamRecord::read).collect()
    }

    /// Fails every entry whose event id hashes into `entry_failure_percent`, and every
    /// `fail_every_nth_call`-th call, until each event id has failed `max_failures` times.
    struct FlakyBus {
        entry_failure_percent: u64,
        fail_every_nth_call: usize,
        calls: Mutex<usize>,
        failures: Mutex<HashMap<String, usize>>,
        published: Mutex<Vec<String>>,
    }

    impl FlakyBus {
        fn new(entry_failure_percent: u64, fail_every_nth_call: usize) -> Self {
            Self {
                entry_failure_percent,
                fail_every_nth_call,
                calls: Mutex::new(0),
                failures: Mutex::default(),
                published: Mutex::default(),
            }
        }
    }

    fn hash(text: &str, salt: usize) -> u64 {
        text.bytes()
            .fold(0xcbf29ce484222325u64 ^ salt as u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            })
    }

    #[async_trait::async_trait]
    impl EventSink for FlakyBus {
        async fn put_events(&self, entries: &[OutboxItem]) -> Result<Vec<EntryResult>, CallError> {
            let call = {
                let mut calls = self.calls.lock().unwrap();
                *calls += 1;
                *calls
            };
            if self.fail_every_nth_call > 0 && call % self.fail_every_nth_call == 0 {
                return Err(CallError::Throttled);
            }
            let mut failures = self.failures.lock().unwrap();
            Ok(entries
                .iter()
                .map(|e| {
                    let tries = failures.entry(e.event_id.clone()).or_default();
                    *tries += 1;
                    if hash(&e.event_id, *tries) % 100 < self.entry_failure_percent {
                        Err(EntryFailure {
                            code: "InternalFailure".into(),
                            message: String::new(),
                        })
                    } else {
                        self.published.lock().unwrap().push(e.event_id.clone());
                        Ok(())
                    }
                })
                .collect())
        }
    }

    /// Lambda's stream semantics with ReportBatchItemFailures: the next invocation resumes
    /// from the lowest reported sequence number, with every record from there on.
    async fn deliver(
        sink: &dyn EventSink,
        records: Vec<serde_json::Value>,
        max_invocations: usize,
    ) -> (usize, usize) {
        let mut remaining = records;
        let mut invocations = 0;
        let mut calls = 0;
        while !remaining.is_empty() && invocations < max_invocations {
            invocations += 1;
            let (events, poison) = outgoing(batch(remaining.clone()));
            let report = publish(sink, &events, far()).await;
            calls += report.calls;
            let mut failed: Vec<String> = poison;
            failed.extend(report.failed);
            let Some(lowest) = failed.iter().min().cloned() else {
                break;
            };
            remaining
                .retain(|r| r["dynamodb"]["SequenceNumber"].as_str().unwrap() >= lowest.as_str());
        }
        (invocations, calls)
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_lost_when_a_fifth_of_entries_and_some_calls_fail() {
        let records: Vec<_> = (0..200u64)
            .map(|i| record(i + 1, &format!("order-{}", i % 37), i / 37 + 1))
            .collect();
        let bus = FlakyBus::new(20, 7);
        let (invocations, calls) = deliver(&bus, records.clone(), 500).await;
        let published = bus.published.lock().unwrap().clone();
        let distinct: HashSet<&String> = published.iter().collect();
        assert_eq!(
            distinct.len(),
            200,
            "0 lost after {invocations} invocations and {calls} PutEvents calls"
        );
        // Order per aggregate: the first publication of version v+1 comes after that of v.
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        for (position, id) in published.iter().enumerate() {
            first_seen.entry(id.as_str()).or_insert(position);
        }
        for aggregate in 0..37 {
            let versions: Vec<usize> = (1..=6)
                .filter_map(|v| {
                    first_seen
                        .get(format!("ev-order-{aggregate}-{v}").as_str())
                        .copied()
                })
                .collect();
            assert!(
                versions.windows(2).all(|w| w[0] < w[1]),
                "order-{aggregate} published out of order: {versions:?}"
            );
        }
        println!("fault injection: 200 events, 20% entry failures, every 7th call failing: {invocations} invocations, {calls} PutEvents calls, {} entries sent", published.len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_healthy_bus_takes_100_events_in_10_calls_once_each() {
        let records: Vec<_> = (0..100u64)
            .map(|i| record(i + 1, &format!("order-{i}"), 1))
            .collect();
        let bus = FlakyBus::new(0, 0);
        let (invocations, calls) = deliver(&bus, records, 10).await;
        assert_eq!((invocations, calls), (1, 10));
        assert_eq!(
            bus.published.lock().unwrap().len(),
            100,
            "each exactly once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_chunk_holds_one_event_per_aggregate_and_a_failure_holds_back_its_successors() {
        let records = vec![
            record(1, "a", 1),
            record(2, "a", 2),
            record(3, "b", 1),
            record(4, "a", 3),
        ];
        struct FailFirstOfA(Mutex<Vec<Vec<String>>>);
        #[async_trait::async_trait]
        impl EventSink for FailFirstOfA {
            async fn put_events(
                &self,
                entries: &[OutboxItem],
            ) -> Result<Vec<EntryResult>, CallError> {
                self.0
                    .lock()
                    .unwrap()
                    .push(entries.iter().map(|e| e.event_id.clone()).collect());

                Ok(entries
                    .iter()
                    .map(|e| {
                        if e.event_id == "ev-a-1" {
                            Err(EntryFailure {
                                code: "InternalFailure".into(),
                                message: String::new(),
                            })
                        } else {
                            Ok(())
                        }
                    })
                    .collect())
            }
        }
        let sink = FailFirstOfA(Mutex::default());
        let (events, _) = outgoing(batch(records));
        let report = publish(&sink, &events, far()).await;
        let calls = sink.0.lock().unwrap().clone();
        assert_eq!(calls[0], ["ev-a-1", "ev-b-1"]);
        assert_eq!(
            calls[1..],
            [vec!["ev-a-1".to_owned()], vec!["ev-a-1".to_owned()]],
            "retried in order; a's later events never sent"
        );
        assert_eq!(
            report.failed,
            [
                format!("{:021}", 1),
                format!("{:021}", 2),
                format!("{:021}", 4)
            ]
        );
        assert_eq!(report.published, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_poison_record_is_reported_without_blocking_the_others() {
        let mut poison = record(2, "p", 1);
        poison["dynamodb"]["NewImage"]
            .as_object_mut()
            .unwrap()
            .remove("detail");
        let records = vec![record(1, "a", 1), poison, record(3, "b", 1)];
        let bus = FlakyBus::new(0, 0);
        let (events, bad) = outgoing(batch(records.clone()));
        let report = publish(&bus, &events, far()).await;
        assert_eq!(bad, [format!("{:021}", 2)]);
        assert_eq!(report.published, 2, "the records behind it are published");
        // Retried up to the limit (Lambda then sends it to the on-failure destination).
        let (invocations, _) = deliver(&bus, records, 3).await;
        assert_eq!(invocations, 3);
        let published: HashSet<String> = bus.published.lock().unwrap().iter().cloned().collect();
        assert_eq!(
            published,
            HashSet::from(["ev-a-1".to_owned(), "ev-b-1".to_owned()])
        );
    }
}
