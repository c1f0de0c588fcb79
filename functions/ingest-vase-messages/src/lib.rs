//! Consumes the vase message queue that the IoT topic rules feed (`vases/+/heartbeat`,
//! `vases/+/telemetry`, with `vaseId`, `receivedAt` and `messageType` added by the rule).
//!
//! Each message is [`bouquet_app::vases::receive`]d (conditional writes, so a redelivery or an
//! out-of-order message changes nothing), through the one batch runner
//! ([`bouquet_runtime::batch`]): one vase's messages in order, vases side by side. Applied, or a
//! no-op duplicate: done. Malformed, or for a vase that is not registered: it can never
//! succeed, so it is parked on the dead-letter queue at once with its reason. Any other failure
//! (DynamoDB, a vase that kept changing) is answered in `batchItemFailures`: SQS delivers it
//! again, and the queue's redrive parks it after `maxReceiveCount` receives. Nothing is lost.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{Error, LambdaEvent};
use serde::Serialize;

use bouquet_app::metrics;
use bouquet_app::vases::{self, Applied};
use bouquet_app::App;
use bouquet_runtime::batch::{self, Message, Outcome, Plan, Settled, SqsDeadLetters};

/// Vases whose messages are applied at once; each message is a few DynamoDB calls.
const VASES_AT_ONCE: usize = 16;

pub struct Ingest {
    pub app: App,
    /// Where messages that can never be applied go (`DEAD_LETTER_QUEUE_URL`).
    pub dead_letters: SqsDeadLetters,
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
    /// Answered in `batchItemFailures`: SQS delivers them again.
    pub retried: usize,
}

impl BatchReport {
    fn of(settled: &Settled<Applied>) -> Self {
        let mut report = BatchReport {
            received: settled.received,
            dead_lettered: settled.dead_lettered,
            retried: settled.retried.len(),
            ..BatchReport::default()
        };
        for applied in &settled.done {
            match applied {
                Applied::Heartbeat => report.heartbeats += 1,
                Applied::CameOnline => {
                    report.heartbeats += 1;
                    report.came_online += 1;
                }
                Applied::LatestReading { freshness_event } => {
                    report.readings += 1;
                    report.freshness_events += usize::from(*freshness_event);
                }
                Applied::HistoryReading => report.readings += 1,
                Applied::StaleHeartbeat | Applied::DuplicateReading => report.no_ops += 1,
            }
        }
        report
    }
}

impl Ingest {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_app::aws_sdk_config()?;
        let app = App::from_sdk(&sdk).await?;
        let queue_url = std::env::var("DEAD_LETTER_QUEUE_URL")
            .map_err(|_| "DEAD_LETTER_QUEUE_URL is not set")?;
        Ok(Self::new(
            app,
            bouquet_aws::client!(aws_sdk_sqs, &sdk),
            queue_url,
        ))
    }

    pub fn new(app: App, sqs: aws_sdk_sqs::Client, dead_letter_queue_url: String) -> Self {
        Self {
            app,
            dead_letters: SqsDeadLetters {
                sqs,
                queue_url: dead_letter_queue_url,
            },
        }
    }

    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
        let (response, report) = self.ingest(event.payload.records).await;
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

    /// Applies a batch: one vase's messages one after another, vases side by side (at once
    /// they only contend, and one that loses every attempt waits out the queue's visibility
    /// timeout: seen, 7 messages of one vase in a batch, one failed after 5 attempts and came
    /// back 180 s later).
    pub async fn ingest(&self, records: Vec<SqsMessage>) -> (SqsBatchResponse, BatchReport) {
        let settled = batch::run(
            Message::from_sqs(records),
            Plan::at_once(VASES_AT_ONCE),
            |message| vases::vase_of(&message.body).map(|vase| vase.to_string()),
            |message| async move {
                let outcome = match vases::receive(&self.app, &message.body, &message.id).await {
                    Ok(applied) => Outcome::Done(applied),
                    Err(error) if error.is_permanent() => Outcome::Reject(error.to_string()),
                    Err(error) => Outcome::Retry(error.to_string()),
                };
                (message, outcome)
            },
            Some(&self.dead_letters),
        )
        .await;
        let report = BatchReport::of(&settled);
        tracing::info!(?report, "vase message batch");
        (settled.sqs_response(), report)
    }
}
