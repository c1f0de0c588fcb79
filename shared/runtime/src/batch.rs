//! The one batch runner of the queue and stream functions: each message settles as done, to
//! retry, or rejected; a rejected message is parked whole on the dead-letter queue with its
//! reason at once (it can never succeed, so it should not wait out `maxReceiveCount`
//! receives); whatever is to be retried, or could not be parked, is answered in
//! `batchItemFailures` so the source delivers it again. Nothing settles nowhere.

use std::collections::HashMap;
use std::future::Future;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsMessage};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures::StreamExt;

/// One message of a batch: its id (the SQS message id, or the stream record's sequence
/// number) and its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub body: String,
}

impl Message {
    /// The messages of an SQS batch (a message without an id or body has them empty).
    pub fn from_sqs(records: Vec<SqsMessage>) -> Vec<Message> {
        records
            .into_iter()
            .map(|record| Message {
                id: record.message_id.unwrap_or_default(),
                body: record.body.unwrap_or_default(),
            })
            .collect()
    }
}

/// What became of one message.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<R> {
    /// Handled (or nothing to do); `R` is what the function counts.
    Done(R),
    /// Not now: the source delivers it again; its redrive parks it after the last receive.
    Retry(String),
    /// Never: parked on the dead-letter queue now, with this reason.
    Reject(String),
}

/// A message that can never be handled, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub message: Message,
    pub reason: String,
}

/// Where rejected messages are parked whole.
#[async_trait::async_trait]
pub trait DeadLetters: Send + Sync {
    /// Parks `rejected`; returns the ids of those it could not park (they are retried).
    async fn park(&self, rejected: &[Rejected]) -> Vec<String>;
}

/// How a batch runs: up to `concurrency` messages at once, except that messages of one
/// `group` (the same vase, the same item) run one after another in the batch's order, since
/// side by side they would only contend.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub concurrency: usize,
}

impl Plan {
    /// One message at a time (each is heavy: an image decoded, say).
    pub const ONE_AT_A_TIME: Plan = Plan { concurrency: 1 };

    pub const fn at_once(concurrency: usize) -> Plan {
        Plan {
            concurrency: if concurrency == 0 { 1 } else { concurrency },
        }
    }
}

/// What a batch came to.
#[derive(Debug, PartialEq, Eq)]
pub struct Settled<R> {
    pub received: usize,
    /// What each message done returned, in no particular order.
    pub done: Vec<R>,
    pub dead_lettered: usize,
    /// Ids answered in `batchItemFailures`: delivered again.
    pub retried: Vec<String>,
}

impl<R> Settled<R> {
    /// A batch whose messages all failed or all succeeded as one, by ids (a stream's ordered
    /// publish, a fan-out of the whole batch).
    pub fn retrying(received: usize, retried: Vec<String>) -> Settled<R> {
        Settled {
            received,
            done: Vec::new(),
            dead_lettered: 0,
            retried,
        }
    }

    /// Also retries `ids` (what a later step over the done messages could not finish).
    pub fn and_retry(mut self, ids: impl IntoIterator<Item = String>) -> Self {
        self.retried.extend(ids);
        self
    }

    /// The answer to an SQS event source mapping with `ReportBatchItemFailures`.
    pub fn sqs_response(&self) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = self.failures(|failure: &mut BatchItemFailure, id| {
            failure.item_identifier = id;
        });
        response
    }

    /// The answer to a DynamoDB stream mapping with `ReportBatchItemFailures` (ids are
    /// sequence numbers; Lambda restarts the shard from the lowest).
    pub fn stream_response(&self) -> DynamoDbEventResponse {
        let mut response = DynamoDbEventResponse::default();
        response.batch_item_failures =
            self.failures(|failure: &mut DynamoDbBatchItemFailure, id| {
                failure.item_identifier = Some(id);
            });
        response
    }

    /// One failure entry per retried id (the event types are non-exhaustive: built from
    /// their defaults).
    fn failures<F: Default>(&self, set: impl Fn(&mut F, String)) -> Vec<F> {
        self.retried
            .iter()
            .map(|id| {
                let mut failure = F::default();
                set(&mut failure, id.clone());
                failure
            })
            .collect()
    }
}

/// Runs `handle` over `messages` by `plan` (`group` names a message's group, `None` when it
/// has none), parks the rejected on `dead_letters` (without one, they are retried, logged).
pub async fn run<R, G, F, Fut>(
    messages: Vec<Message>,
    plan: Plan,
    group: G,
    handle: F,
    dead_letters: Option<&dyn DeadLetters>,
) -> Settled<R>
where
    G: Fn(&Message) -> Option<String>,
    F: Fn(Message) -> Fut,
    Fut: Future<Output = (Message, Outcome<R>)>,
{
    let received = messages.len();
    let mut groups: Vec<Vec<Message>> = Vec::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    for message in messages {
        match group(&message) {
            Some(key) => {
                let next = groups.len();
                let at = *slot.entry(key).or_insert(next);
                if at == next {
                    groups.push(Vec::new());
                }
                groups[at].push(message);
            }
            None => groups.push(vec![message]),
        }
    }
    let handle = &handle;
    let outcomes: Vec<(Message, Outcome<R>)> = futures::stream::iter(groups)
        .map(|group| async move {
            let mut outcomes = Vec::with_capacity(group.len());
            for message in group {
                outcomes.push(handle(message).await);
            }
            outcomes
        })
        .buffer_unordered(plan.concurrency)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut settled = Settled {
        received,
        done: Vec::new(),
        dead_lettered: 0,
        retried: Vec::new(),
    };
    let mut rejected = Vec::new();
    for (message, outcome) in outcomes {
        match outcome {
            Outcome::Done(counted) => settled.done.push(counted),
            Outcome::Retry(reason) => {
                tracing::warn!(message_id = %message.id, %reason, "message failed; it is delivered again");
                settled.retried.push(message.id);
            }
            Outcome::Reject(reason) => {
                tracing::warn!(message_id = %message.id, %reason, "message can never succeed; parked");
                rejected.push(Rejected { message, reason });
            }
        }
    }
    if rejected.is_empty() {
        return settled;
    }
    let unparked = match dead_letters {
        Some(dead_letters) => dead_letters.park(&rejected).await,
        None => rejected.iter().map(|r| r.message.id.clone()).collect(),
    };
    settled.dead_lettered = rejected.len() - unparked.len();
    settled.retried.extend(unparked);
    settled
}

/// [`DeadLetters`] on an SQS queue: each message's body as it came, its reason and id as
/// message attributes, 10 to a `SendMessageBatch`.
#[cfg(feature = "sqs")]
pub struct SqsDeadLetters {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
}

#[cfg(feature = "sqs")]
impl SqsDeadLetters {
    /// `SendMessageBatch` takes at most 10 entries.
    const AT_ONCE: usize = 10;

    async fn send(&self, chunk: &[Rejected]) -> Vec<String> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
        let mut entries = Vec::with_capacity(chunk.len());
        let mut ids_by_entry = HashMap::new();
        let mut unsent = Vec::new();
        for (i, rejected) in chunk.iter().enumerate() {
            let message_id = &rejected.message.id;
            let entry = SendMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .message_body(&rejected.message.body)
                .set_message_attributes(attributes(&[
                    ("reason", &rejected.reason),
                    ("sourceMessageId", message_id),
                ]))
                .build();
            match entry {
                Ok(entry) => {
                    ids_by_entry.insert(entry.id.clone(), message_id.clone());
                    entries.push(entry);
                }
                Err(error) => {
                    tracing::error!(%error, "dead-letter entry");
                    unsent.push(message_id.clone());
                }
            }
        }
        if entries.is_empty() {
            return unsent;
        }
        let sent = self
            .sqs
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
        match sent {
            Ok(output) => unsent.extend(
                output
                    .failed
                    .iter()
                    .filter_map(|f| ids_by_entry.get(&f.id).cloned()),
            ),
            Err(error) => {
                tracing::error!(error = %bouquet_aws::describe(&error), "dead-letter queue unreachable; the messages are retried");
                unsent.extend(ids_by_entry.into_values());
            }
        }
        unsent
    }
}

#[cfg(feature = "sqs")]
#[async_trait::async_trait]
impl DeadLetters for SqsDeadLetters {
    async fn park(&self, rejected: &[Rejected]) -> Vec<String> {
        let mut unsent = Vec::new();
        for chunk in rejected.chunks(Self::AT_ONCE) {
            unsent.extend(self.send(chunk).await);
        }
        unsent
    }
}

/// String message attributes (at most 256 characters each: they are for people reading the
/// queue; the body is the message).
#[cfg(feature = "sqs")]
fn attributes(
    pairs: &[(&str, &str)],
) -> Option<HashMap<String, aws_sdk_sqs::types::MessageAttributeValue>> {
    pairs
        .iter()
        .map(|(name, value)| {
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value.chars().take(256).collect::<String>())
                .build()
                .map(|attribute| ((*name).to_owned(), attribute))
        })
        .collect::<Result<_, _>>()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn messages(bodies: &[&str]) -> Vec<Message> {
        bodies
            .iter()
            .enumerate()
            .map(|(i, body)| Message {
                id: format!("m{i}"),
                body: (*body).to_owned(),
            })
            .collect()
    }

    /// Parks what it is given, except bodies it refuses.
    #[derive(Default)]
    struct Parking {
        parked: Mutex<Vec<Rejected>>,
        refuse: Option<&'static str>,
    }

    #[async_trait::async_trait]
    impl DeadLetters for Parking {
        async fn park(&self, rejected: &[Rejected]) -> Vec<String> {
            let mut unparked = Vec::new();
            for r in rejected {
                if Some(r.message.body.as_str()) == self.refuse {
                    unparked.push(r.message.id.clone());
                } else {
                    self.parked.lock().unwrap().push(r.clone());
                }
            }
            unparked
        }
    }

    /// `bad` can never be handled, `later` not now, anything else is done (its length).
    async fn settle_by_body(message: Message) -> (Message, Outcome<usize>) {
        let outcome = match message.body.as_str() {
            "bad" => Outcome::Reject("malformed".into()),
            "later" => Outcome::Retry("table unavailable".into()),
            body => Outcome::Done(body.len()),
        };
        (message, outcome)
    }

    #[tokio::test]
    async fn every_message_settles_once_done_retried_or_parked() {
        let parking = Parking::default();
        let settled = run(
            messages(&["a", "bad", "later", "ccc", "bad"]),
            Plan::at_once(4),
            |_| None,
            settle_by_body,
            Some(&parking),
        )
        .await;
        let mut done = settled.done.clone();
        done.sort();
        assert_eq!(done, vec![1, 3]);
        assert_eq!(settled.retried, vec!["m2".to_owned()]);
        assert_eq!(settled.dead_lettered, 2);
        let parked = parking.parked.lock().unwrap();
        assert_eq!(
            parked
                .iter()
                .map(|r| r.message.id.as_str())
                .collect::<Vec<_>>(),
            ["m1", "m4"]
        );
        assert!(parked
            .iter()
            .all(|r| r.reason == "malformed" && r.message.body == "bad"));
        assert_eq!(settled.received, 5);
        let failures = settled.sqs_response().batch_item_failures;
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].item_identifier, "m2");
    }

    #[tokio::test]
    async fn a_rejection_that_cannot_be_parked_is_retried() {
        let parking = Parking {
            refuse: Some("bad"),
            ..Parking::default()
        };
        let settled = run(
            messages(&["bad", "ok"]),
            Plan::ONE_AT_A_TIME,
            |_| None,
            settle_by_body,
            Some(&parking),
        )
        .await;
        assert_eq!(settled.dead_lettered, 0);
        assert_eq!(settled.retried, vec!["m0".to_owned()]);
        // Without a dead-letter queue, too.
        let settled = run(
            messages(&["bad"]),
            Plan::ONE_AT_A_TIME,
            |_| None,
            settle_by_body,
            None,
        )
        .await;
        assert_eq!(settled.retried, vec!["m0".to_owned()]);
        let response = settled.stream_response();
        assert_eq!(
            response.batch_item_failures[0].item_identifier.as_deref(),
            Some("m0")
        );
    }

    #[tokio::test]
    async fn a_groups_messages_run_in_order_one_at_a_time_groups_side_by_side() {
        let seen = Mutex::new(Vec::new());
        let running = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let bodies = ["v1:1", "v2:1", "v1:2", "v2:2", "v1:3", "v3:1"];
        let settled = run(
            messages(&bodies),
            Plan::at_once(8),
            |m| m.body.split(':').next().map(str::to_owned),
            |m| {
                let (seen, running, most) = (&seen, &running, &most);
                async move {
                    use std::sync::atomic::Ordering::SeqCst;
                    let now = running.fetch_add(1, SeqCst) + 1;
                    most.fetch_max(now, SeqCst);
                    tokio::task::yield_now().await;
                    seen.lock().unwrap().push(m.body.clone());
                    running.fetch_sub(1, SeqCst);
                    (m, Outcome::Done(()))
                }
            },
            None,
        )
        .await;
        assert_eq!(settled.done.len(), 6);
        let seen = seen.into_inner().unwrap();
        let of =
            |vase: &str| -> Vec<&String> { seen.iter().filter(|b| b.starts_with(vase)).collect() };
        assert_eq!(of("v1:"), ["v1:1", "v1:2", "v1:3"]);
        assert_eq!(of("v2:"), ["v2:1", "v2:2"]);
        // Three groups, so at most three at once.
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) <= 3);
    }
}
