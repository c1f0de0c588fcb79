//! Consumes the vase message queue that the IoT topic rules feed (`vases/+/heartbeat`,
//! `vases/+/telemetry`, with `vaseId`, `receivedAt` and `messageType` added by the rule).
//!
//! Per message: parse (the domain), apply (`bouquet_app::vases::apply`: conditional writes, so a
//! redelivery or an out-of-order message changes nothing). Messages of one batch run
//! concurrently, bounded. The answer is `ReportBatchItemFailures`:
//! - applied, or a no-op duplicate: done;
//! - malformed, or for a vase that is not registered: it can never succeed, so it is sent to
//!   the dead-letter queue at once (with the reason as a message attribute) and reported done,
//!   rather than retried `maxReceiveCount` times; if that send fails, it is reported failed;
//! - any other failure (DynamoDB, a vase that kept changing): reported failed, SQS delivers
//!   it again after the visibility timeout and the queue's redrive moves it to the
//!   dead-letter queue after `maxReceiveCount` receives. Nothing is lost.

use bouquet_app::metrics;
use std::collections::HashMap;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use futures::StreamExt;
use lambda_runtime::{Error, LambdaEvent};
use serde::Serialize;

use bouquet_app::domain::VaseMessage;
use bouquet_app::vases::{Applied, VaseError};
use bouquet_app::App;

/// Messages applied at once; each is a few DynamoDB calls.
const CONCURRENCY: usize = 16;
/// `SendMessageBatch` takes at most 10 entries.
const DLQ_BATCH: usize = 10;

pub struct Ingest {
    pub app: App,
    pub sqs: aws_sdk_sqs::Client,
    /// Where messages that can never be applied go (`DEAD_LETTER_QUEUE_URL`).
    pub dead_letter_queue_url: String,
}

/// One batch, counted (logged as one line).
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchReport {
    pub received: usize,
    pub heartbeats: usize,
    pub came_online: usize,
    pub readings: usize,
    pub freshness_events: usize,
    /// Duplicates and out-of-order heartbeats: nothing to change.
    pub no_ops: usize,
    pub dead_lettered: usize,
    /// Reported in `batchItemFailures`: SQS delivers them again.
    pub retried: usize,
}

enum Outcome {
    Applied(Applied),
    DeadLetter(String),
    Retry(String),
}

impl Ingest {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_app::aws_sdk_config()?;
        let app = App::from_sdk(&sdk).await?;
        let dead_letter_queue_url = std::env::var("DEAD_LETTER_QUEUE_URL")
            .map_err(|_| "DEAD_LETTER_QUEUE_URL is not set")?;
        Ok(Self {
            app,
            sqs: bouquet_aws::client!(aws_sdk_sqs, &sdk),
            dead_letter_queue_url,
        })
    }

    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
        let (response, report) = self.ingest(event.payload.records).await;
        tracing::info!(
            received = report.received,
            heartbeats = report.heartbeats,
            came_online = report.came_online,
            readings = report.readings,
            freshness_events = report.freshness_events,
            no_ops = report.no_ops,
            dead_lettered = report.dead_lettered,
            retried = report.retried,
            "vase message batch"
        );
        let applied = report
            .received
            .saturating_sub(report.dead_lettered + report.retried);
        metrics::count(metrics::VASE_MESSAGES, "applied", applied as u64);
        metrics::count(
            metrics::VASE_MESSAGES,
            "rejected",
            report.dead_lettered as u64,
        );
        metrics::count(metrics::VASE_MESSAGES, "retried", report.retried as u64);
        Ok(response)
    }

    /// Applies a batch; returns the partial-failure response and the counts.
    pub async fn ingest(&self, records: Vec<SqsMessage>) -> (SqsBatchResponse, BatchReport) {
        let mut report = BatchReport {
            received: records.len(),
            ..BatchReport::default()
        };
        // One vase's messages one after another, vases side by side: a vase's messages write
        // the same item, so at once they only contend, and one that loses every attempt waits
        // out the queue's visibility timeout (seen: 7 messages of one vase in a batch, one
        // failed after 5 attempts and came back 180 s later).
        let mut by_vase: Vec<Vec<SqsMessage>> = Vec::new();
        let mut slot: HashMap<String, usize> = HashMap::new();
        for record in records {
            let vase = record
                .body
                .as_deref()
                .and_then(|body| VaseMessage::parse(body).ok())
                .map(|message| message.vase_id().to_string());
            match vase {
                Some(vase) => {
                    let next = by_vase.len();
                    let at = *slot.entry(vase).or_insert(next);
                    if at == next {
                        by_vase.push(Vec::new());
                    }
                    by_vase[at].push(record);
                }
                None => by_vase.push(vec![record]),
            }
        }
        let outcomes: Vec<(SqsMessage, Outcome)> = futures::stream::iter(by_vase)
            .map(|messages| async move {
                let mut outcomes = Vec::with_capacity(messages.len());
                for record in messages {
                    let outcome = self.apply(&record).await;
                    outcomes.push((record, outcome));
                }
                outcomes
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .flatten()
            .collect();
        let mut failures = Vec::new();
        let mut dead = Vec::new();
        for (record, outcome) in outcomes {
            match outcome {
                Outcome::Applied(applied) => count(&mut report, applied),
                Outcome::DeadLetter(reason) => dead.push((record, reason)),
                Outcome::Retry(reason) => {
                    tracing::warn!(message_id = ?record.message_id, %reason, "vase message failed; SQS will deliver it again");
                    report.retried += 1;
                    failures.push(record.message_id.unwrap_or_default());
                }
            }
        }
        for chunk in dead.chunks(DLQ_BATCH) {
            let unsent = self.dead_letter(chunk).await;
            report.dead_lettered += chunk.len() - unsent.len();
            report.retried += unsent.len();
            failures.extend(unsent);
        }
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = failures
            .into_iter()
            .map(|id| {
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id;
                failure
            })
            .collect();
        (response, report)
    }

    async fn apply(&self, record: &SqsMessage) -> Outcome {
        let body = record.body.as_deref().unwrap_or_default();
        let message = match VaseMessage::parse(body) {
            Ok(message) => message,
            Err(error) => return Outcome::DeadLetter(format!("malformed: {error}")),
        };
        let correlation_id = record.message_id.as_deref().unwrap_or("sqs");
        match bouquet_app::vases::apply(&self.app, &message, correlation_id).await {
            Ok(applied) => Outcome::Applied(applied),
            Err(error @ VaseError::UnknownVase(_)) => Outcome::DeadLetter(error.to_string()),
            Err(error) => Outcome::Retry(error.to_string()),
        }
    }

    /// Sends up to 10 messages to the dead-letter queue in one call; returns the message ids
    /// that were not sent (to be retried).
    async fn dead_letter(&self, chunk: &[(SqsMessage, String)]) -> Vec<String> {
        let mut entries = Vec::with_capacity(chunk.len());
        let mut ids_by_entry = HashMap::new();
        let mut unsent = Vec::new();
        for (i, (record, reason)) in chunk.iter().enumerate() {
            let message_id = record.message_id.clone().unwrap_or_default();
            tracing::warn!(%message_id, %reason, "vase message to the dead-letter queue");
            let entry = SendMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .message_body(record.body.clone().unwrap_or_default())
                .set_message_attributes(attributes(&[
                    ("reason", reason),
                    ("sourceMessageId", &message_id),
                ]))
                .build();
            match entry {
                Ok(entry) => {
                    ids_by_entry.insert(entry.id.clone(), message_id);
                    entries.push(entry);
                }
                Err(error) => {
                    tracing::error!(%error, "dead-letter entry");
                    unsent.push(message_id);
                }
            }
        }
        if entries.is_empty() {
            return unsent;
        }
        let result = self
            .sqs
            .send_message_batch()
            .queue_url(&self.dead_letter_queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
        match result {
            Ok(output) => unsent.extend(
                output
                    .failed
                    .iter()
                    .filter_map(|f| ids_by_entry.get(&f.id).cloned()),
            ),
            Err(error) => {
                tracing::error!(error = %bouquet_app::aws::describe(&error), "dead-letter queue unreachable; the messages will be retried");
                unsent.extend(ids_by_entry.into_values());
            }
        }
        unsent
    }
}

/// String message attributes (at most 256 characters each: they are for people reading
/// the queue, the body is the message).
fn attributes(pairs: &[(&str, &str)]) -> Option<HashMap<String, MessageAttributeValue>> {
    pairs
        .iter()
        .map(|(name, value)| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value.chars().take(256).collect::<String>())
                .build()
                .map(|attribute| ((*name).to_owned(), attribute))
        })
        .collect::<Result<_, _>>()
        .ok()
}

fn count(report: &mut BatchReport, applied: Applied) {
    match applied {
        Applied::Heartbeat => report.heartbeats += 1,
        Applied::CameOnline => {
            report.heartbeats += 1;
            report.came_online += 1;
        }
        Applied::LatestReading { freshness_event } => {
            report.readings += 1;
            report.freshness_events += usize::from(freshness_event);
        }
        Applied::HistoryReading => report.readings += 1,
        Applied::StaleHeartbeat | Applied::DuplicateReading => report.no_ops += 1,
    }
}
