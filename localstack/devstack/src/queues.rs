//! SQS → function, as Lambda's event-source mapping does it, from the template's `SQS`
//! event: long-poll the queue, gather up to `BatchSize` messages (10 per receive, up to
//! `MaximumBatchingWindowInSeconds`), invoke the function with an SQS event, and with
//! `ReportBatchItemFailures` delete only the messages not reported failed. Failed messages
//! (all of them when the invocation itself fails) are left alone: they reappear after the
//! queue's visibility timeout, and the queue's redrive policy moves them to the dead-letter
//! queue after `maxReceiveCount` receives. The emulator does the redrive, as SQS does.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use serde_json::Value;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};

use crate::lambda::{Invoke, Resolver};

use crate::error::{aws, DevError};

/// How long an empty poll waits before the next one.
const IDLE_PAUSE: Duration = Duration::from_millis(200);
/// The most batches one mapping has in flight here (two cores).
pub const MAX_POLLERS: usize = 4;

pub struct QueueMapping {
    pub function: String,
    pub queue_url: String,
    pub queue_arn: String,
    pub batch_size: usize,
    pub window: Duration,
    pub report_failures: bool,
    /// Batches in flight at once: the event's `ScalingConfig.MaximumConcurrency`, at most
    /// [`MAX_POLLERS`] here (Lambda starts five pollers and scales them with the backlog).
    pub pollers: usize,
    pub invoke: Invoke,
    pub sqs: aws_sdk_sqs::Client,
}

/// Counts of one poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct QueuePoll {
    pub received: usize,
    pub deleted: usize,
    pub failed: usize,
}

impl QueueMapping {
    pub fn new(
        function: String,
        queue_url: String,
        queue_arn: String,
        event: &Value,
        invoke: Invoke,
        sqs: aws_sdk_sqs::Client,
    ) -> Self {
        let p = &event["Properties"];
        Self {
            function,
            queue_url,
            queue_arn,
            batch_size: p["BatchSize"].as_u64().unwrap_or(10).clamp(1, 10_000) as usize,
            window: Duration::from_secs(p["MaximumBatchingWindowInSeconds"].as_u64().unwrap_or(0)),
            pollers: p["ScalingConfig"]["MaximumConcurrency"]
                .as_u64()
                .unwrap_or(1)
                .clamp(1, MAX_POLLERS as u64) as usize,
            report_failures: p["FunctionResponseTypes"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "ReportBatchItemFailures")),
            invoke,
            sqs,
        }
    }

    /// Polls for ever, [`Self::pollers`] batches at once, logging each batch. An idle mapping
    /// polls its queue [`IDLE_PAUSE`] apart whatever its pollers (they take turns, each
    /// `pollers` pauses apart), and each of them polls again at once after a batch: they scale
    /// with the backlog, as Lambda's do, without a Python emulator's CPU spent on empty
    /// receives (11 mappings of up to 4 pollers made 5 receives a second each).
    pub fn spawn(self: std::sync::Arc<Self>) {
        let idle_pause = IDLE_PAUSE * self.pollers.max(1) as u32;
        for turn in 0..self.pollers {
            let mapping = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(IDLE_PAUSE * turn as u32).await;
                loop {
                    match mapping.poll_pausing(idle_pause).await {
                        Ok(report) if report.received > 0 => {
                            tracing::info!(function = %mapping.function, ?report, "SQS batch")
                        }
                        Ok(_) => {}
                        Err(error) => {
                            tracing::warn!(function = %mapping.function, %error, "SQS poll failed");
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            });
        }
    }

    /// Receives one batch (up to `BatchSize`, gathering for up to the batching window) and
    /// delivers it; pauses briefly when the queue is empty.
    pub async fn poll(&self) -> Result<QueuePoll, DevError> {
        self.poll_pausing(IDLE_PAUSE).await
    }

    /// [`Self::poll`], pausing for `idle_pause` when the queue is empty.
    pub async fn poll_pausing(&self, idle_pause: Duration) -> Result<QueuePoll, DevError> {
        let mut messages: Vec<Message> = Vec::new();
        let started = Instant::now();
        while messages.len() < self.batch_size {
            // Short polls with a pause rather than long polls: the emulator's long poll
            // holds the queue and slows every sender (measured: 18 ms a SendMessage idle,
            // 72 ms during a long poll).
            let output = self
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages((self.batch_size - messages.len()).min(10) as i32)
                .wait_time_seconds(0)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send()
                .await
                .map_err(aws)?;
            let got = output.messages.unwrap_or_default();
            let empty = got.is_empty();
            messages.extend(got);
            if empty && (messages.is_empty() || started.elapsed() >= self.window) {
                break;
            }
            if empty {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        if messages.is_empty() {
            tokio::time::sleep(idle_pause).await;
            return Ok(QueuePoll::default());
        }
        let event = self.event(&messages);
        if crate::faults::roll(crate::faults::Fault::SqsBatchRedelivered) {
            // At least once: the same batch twice (a fault the soak injects); what counts is
            // the second delivery's outcome.
            if let Err(error) = (self.invoke)(event.clone()).await {
                tracing::warn!(function = %self.function, %error, "the first of a duplicated delivery failed");
            }
        }
        let failed: HashSet<String> = match (self.invoke)(event).await {
            Ok(response) if self.report_failures => response["batchItemFailures"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
                .collect(),
            Ok(_) => HashSet::new(),
            Err(error) => {
                tracing::warn!(function = %self.function, %error, "invocation failed; the whole batch returns to the queue");
                messages
                    .iter()
                    .filter_map(|m| m.message_id.clone())
                    .collect()
            }
        };
        let mut report = QueuePoll {
            received: messages.len(),
            failed: failed.len(),
            ..QueuePoll::default()
        };
        // Lambda deletes what succeeded in batches; so does the mapping here.
        let done: Vec<&Message> = messages
            .iter()
            .filter(|m| !m.message_id.as_ref().is_some_and(|id| failed.contains(id)))
            .collect();
        for chunk in done.chunks(10) {
            let entries: Vec<_> = chunk
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(m.receipt_handle.clone()?)
                        .build()
                        .ok()
                })
                .collect();
            let count = entries.len();
            match self
                .sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                Ok(output) => report.deleted += count - output.failed.len(),
                Err(error) => {
                    tracing::warn!(function = %self.function, error = %bouquet_app::store::describe(&error), "delete after success failed; the messages will be delivered again")
                }
            }
        }
        Ok(report)
    }

    /// The SQS event Lambda gives the function, built from `aws_lambda_events`' own type.
    fn event(&self, messages: &[Message]) -> Value {
        let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into());
        let mut event = SqsEvent::default();
        event.records = messages
            .iter()
            .map(|m| {
                let mut record = SqsMessage::default();
                record.message_id = m.message_id.clone();
                record.receipt_handle = m.receipt_handle.clone();
                record.body = m.body.clone();
                record.md5_of_body = m.md5_of_body.clone();
                record.attributes = m
                    .attributes
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                    .collect();
                record.event_source = Some("aws:sqs".into());
                record.event_source_arn = Some(self.queue_arn.clone());
                record.aws_region = Some(region.clone());
                record
            })
            .collect();
        serde_json::to_value(event).unwrap_or_default()
    }
}

/// Starts a polling task for every `SQS` event of the template; returns their names.
pub fn start_all(
    template: &bouquet_template::Template,
    names: &crate::provision::Names,
    functions: &dyn Resolver,
    sdk: &aws_config::SdkConfig,
) -> Result<Vec<String>, DevError> {
    let mut started = Vec::new();
    for (function, event) in template.events_of_type("SQS").map_err(DevError::from)? {
        // A test's resolver may hold only the functions it runs; the dev stack's holds all.
        let Some(invoke) = functions.invoker(&function.binary) else {
            tracing::debug!(function = %function.binary, "no such function here: its queue is not polled");
            continue;
        };
        let arn = crate::provision::resolve(template, &event["Properties"]["Queue"], names);
        let url = crate::provision::queue_url_of_arn(names, &arn).ok_or_else(|| {
            DevError::Unsupported(format!(
                "{}: queue {arn} was not provisioned",
                function.binary
            ))
        })?;
        let mapping = QueueMapping::new(
            function.binary.clone(),
            url.clone(),
            arn,
            &event,
            invoke,
            aws_sdk_sqs::Client::new(sdk),
        );
        std::sync::Arc::new(mapping).spawn();
        started.push(format!("{} <- {url}", function.binary));
    }
    Ok(started)
}
