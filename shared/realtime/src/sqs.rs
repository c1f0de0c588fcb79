//! [`WorkQueue`] on SQS: `SendMessageBatch` (10 a call, all calls at once), and entries SQS
//! refused sent again a few times before the whole send fails.

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use futures::FutureExt;

use crate::{QueueError, WorkQueue};

pub struct SqsWorkQueue {
    client: Client,
    queue_url: String,
    dead_letter_url: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0} is not set (the template sets the fan-out queue's and its dead-letter queue's URLs)")]
pub struct WorkQueueNotSet(&'static str);

impl SqsWorkQueue {
    pub fn new(client: Client, queue_url: String, dead_letter_url: String) -> Self {
        Self {
            client,
            queue_url,
            dead_letter_url,
        }
    }

    /// `FANOUT_QUEUE_URL` and `FANOUT_DEAD_LETTER_QUEUE_URL` from the template's environment.
    pub fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, WorkQueueNotSet> {
        let var = |name: &'static str| std::env::var(name).map_err(|_| WorkQueueNotSet(name));
        Ok(Self::new(
            bouquet_aws::client!(aws_sdk_sqs, sdk),
            var("FANOUT_QUEUE_URL")?,
            var("FANOUT_DEAD_LETTER_QUEUE_URL")?,
        ))
    }

    async fn send_to(&self, queue_url: &str, bodies: &[String]) -> Result<(), QueueError> {
        let calls = bodies
            .chunks(10)
            .map(|chunk| self.send_chunk(queue_url, chunk));
        let refused: usize = futures::future::join_all(calls)
            .await
            .into_iter()
            .map(|r| r.map_err(|e| (bodies.len(), e)))
            .try_fold(0, |sum, r| r.map(|n| sum + n))
            .map_err(|(sent, e)| QueueError {
                sent,
                refused: sent,
                source: Some(e),
            })?;
        if refused > 0 {
            return Err(QueueError {
                sent: bodies.len(),
                refused,
                source: None,
            });
        }
        Ok(())
    }

    /// Sends up to 10 bodies; returns how many SQS still refused after the retries.
    async fn send_chunk(
        &self,
        queue_url: &str,
        chunk: &[String],
    ) -> Result<usize, Box<dyn std::error::Error + Send + Sync>> {
        let mut pending: Vec<(usize, &String)> = chunk.iter().enumerate().collect();
        let mut retry = bouquet_retry::Retry::attempts(4);
        while retry.next().await {
            let entries = pending
                .iter()
                .map(|(i, body)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body.as_str())
                        .build()
                })
                .collect::<Result<Vec<_>, _>>()?;
            let output = self
                .client
                .send_message_batch()
                .queue_url(queue_url)
                .set_entries(Some(entries))
                .send()
                .await?;
            let failed: Vec<String> = output.failed.iter().map(|f| f.id.clone()).collect();
            pending.retain(|(i, _)| failed.contains(&i.to_string()));
            if pending.is_empty() {
                break;
            }
        }
        Ok(pending.len())
    }
}

#[async_trait::async_trait]
impl WorkQueue for SqsWorkQueue {
    async fn send(&self, bodies: &[String]) -> Result<(), QueueError> {
        self.send_to(&self.queue_url, bodies).boxed().await
    }

    async fn park(&self, bodies: &[String]) -> Result<(), QueueError> {
        self.send_to(&self.dead_letter_url, bodies).boxed().await
    }

    async fn send_later(&self, body: &str, delay: std::time::Duration) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay.as_secs().clamp(0, 900) as i32)
            .send()
            .await
            .map(|_| ())
            .map_err(|error| QueueError {
                sent: 1,
                refused: 1,
                source: Some(Box::new(error)),
            })
    }
}
