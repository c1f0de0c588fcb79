//! Events that cannot be published are parked whole (the outbox item, its full `detail`) in
//! a dead-letter queue, instead of living on only as a pointer into a stream that keeps
//! records for 24 hours; [`redrive`] republishes them. Consumers dedupe by `eventId`, so a
//! redriven event that was also published once counts once.

use std::collections::HashMap;

use bouquet_events::OutboxItem;

use crate::{publish, CallError, EventSink, Outgoing, PublishReport};

/// A parked event and the handle that removes it once it is republished.
#[derive(Clone, Debug)]
pub struct Parked {
    pub handle: String,
    pub item: OutboxItem,
}

/// Where events are parked.
#[async_trait::async_trait]
pub trait ParkingLot: Send + Sync {
    /// Parks `items` whole; `Err` when not every one of them was parked.
    async fn park(&self, items: &[OutboxItem]) -> Result<(), CallError>;
    /// Up to 10 parked events (none when the lot is empty).
    async fn take(&self) -> Result<Vec<Parked>, CallError>;
    /// Removes republished events.
    async fn remove(&self, handles: &[String]) -> Result<(), CallError>;
    /// Gives back events taken but not republished, at once (the next redrive sees them).
    async fn release(&self, handles: &[String]) -> Result<(), CallError>;
}

/// Parks the events `report` could not publish: when that succeeds they are no longer
/// failures (the batch moves on); when it does not, they stay reported, so the stream retries
/// them and finally hands them to its on-failure destination.
pub async fn park_failed(
    parking: &dyn ParkingLot,
    events: &[Outgoing],
    report: &mut PublishReport,
) {
    if report.failed.is_empty() {
        return;
    }
    let by_sequence: HashMap<&str, &OutboxItem> = events
        .iter()
        .map(|e| (e.sequence_number.as_str(), &e.item))
        .collect();
    let items: Vec<OutboxItem> = report
        .failed
        .iter()
        .filter_map(|sequence| {
            by_sequence
                .get(sequence.as_str())
                .map(|item| (*item).clone())
        })
        .collect();
    match parking.park(&items).await {
        Ok(()) => {
            tracing::warn!(
                parked = items.len(),
                "events parked on the outbox dead-letter queue"
            );
            report.parked += items.len();
            report.failed.clear();
        }
        Err(error) => {
            tracing::error!(error = %bouquet_aws::describe(&error), events = items.len(), "parking failed; the records stay failed")
        }
    }
}

/// What a redrive did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RedriveReport {
    pub taken: usize,
    pub republished: usize,
    /// Left parked (the bus refused them again); a later redrive retries them.
    pub still_parked: usize,
}

/// Republishes parked events until the lot is empty or a round republishes nothing, removing
/// each one the bus accepted. At most `max_rounds` rounds of 10.
pub async fn redrive(
    parking: &dyn ParkingLot,
    sink: &dyn EventSink,
    max_rounds: usize,
    deadline: tokio::time::Instant,
) -> Result<RedriveReport, CallError> {
    let mut report = RedriveReport::default();
    for _ in 0..max_rounds {
        let parked = parking.take().await?;
        if parked.is_empty() {
            break;
        }
        report.taken += parked.len();
        // Handles stand in for stream sequence numbers: failures come back by handle.
        let events: Vec<Outgoing> = parked
            .iter()
            .map(|p| Outgoing {
                sequence_number: p.handle.clone(),
                item: p.item.clone(),
            })
            .collect();
        let published = publish(sink, &events, deadline).await;
        let done: Vec<String> = parked
            .iter()
            .map(|p| p.handle.clone())
            .filter(|h| !published.failed.contains(h))
            .collect();
        parking.remove(&done).await?;
        parking.release(&published.failed).await?;
        report.republished += done.len();
        report.still_parked += published.failed.len();
        if done.is_empty() {
            break;
        }
    }
    Ok(report)
}

/// An SQS queue as the parking lot: one message per event, its body the outbox item as JSON.
pub struct SqsParkingLot {
    pub client: aws_sdk_sqs::Client,
    pub queue_url: String,
}

fn sqs_error(error: impl std::error::Error + Send + Sync + 'static) -> CallError {
    CallError::Unavailable(Box::new(error))
}

/// Sends one SQS batch call per ten receipt handles (the most a batch takes), each entry made
/// by `entry` from its id in the batch and its handle.
async fn in_batches<Entry, Sent, BuildError, SendError, Sending>(
    handles: &[String],
    entry: impl Fn(String, &str) -> Result<Entry, BuildError>,
    send: impl Fn(Vec<Entry>) -> Sending,
) -> Result<(), CallError>
where
    BuildError: std::error::Error + Send + Sync + 'static,
    SendError: std::error::Error + Send + Sync + 'static,
    Sending: std::future::Future<Output = Result<Sent, SendError>>,
{
    for chunk in handles.chunks(10) {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, handle)| entry(i.to_string(), handle).map_err(sqs_error))
            .collect::<Result<Vec<_>, _>>()?;
        send(entries).await.map_err(sqs_error)?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl ParkingLot for SqsParkingLot {
    async fn park(&self, items: &[OutboxItem]) -> Result<(), CallError> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
        for chunk in items.chunks(10) {
            let mut entries = Vec::with_capacity(chunk.len());
            for (i, item) in chunk.iter().enumerate() {
                let body = serde_json::to_string(item).map_err(sqs_error)?;
                entries.push(
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                        .map_err(sqs_error)?,
                );
            }
            let output = self
                .client
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(sqs_error)?;
            if let Some(failed) = output.failed().first() {
                return Err(CallError::Refused(
                    format!(
                        "parking refused: {} {}",
                        failed.code(),
                        failed.message().unwrap_or_default()
                    )
                    .into(),
                ));
            }
        }
        Ok(())
    }

    async fn take(&self) -> Result<Vec<Parked>, CallError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .send()
            .await
            .map_err(sqs_error)?;
        let mut parked = Vec::new();
        for message in output.messages.unwrap_or_default() {
            let (Some(handle), Some(body)) = (message.receipt_handle, message.body) else {
                continue;
            };
            match serde_json::from_str(&body) {
                Ok(item) => parked.push(Parked { handle, item }),
                // Left on the queue: it becomes visible again and, after the queue's
                // redrive policy, moves on; never deleted unread.
                Err(error) => tracing::error!(%error, "a parked message is not an outbox item"),
            }
        }
        Ok(parked)
    }

    async fn remove(&self, handles: &[String]) -> Result<(), CallError> {
        use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
        in_batches(
            handles,
            |id, handle| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(id)
                    .receipt_handle(handle)
                    .build()
            },
            |entries| {
                self.client
                    .delete_message_batch()
                    .queue_url(&self.queue_url)
                    .set_entries(Some(entries))
                    .send()
            },
        )
        .await
    }

    async fn release(&self, handles: &[String]) -> Result<(), CallError> {
        use aws_sdk_sqs::types::ChangeMessageVisibilityBatchRequestEntry;
        in_batches(
            handles,
            |id, handle| {
                ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(id)
                    .receipt_handle(handle)
                    .visibility_timeout(0)
                    .build()
            },
            |entries| {
                self.client
                    .change_message_visibility_batch()
                    .queue_url(&self.queue_url)
                    .set_entries(Some(entries))
                    .send()
            },
        )
        .await
    }
}
