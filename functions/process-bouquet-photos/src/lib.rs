//! Consumes the photo queue, which the upload bucket's `s3:ObjectCreated:*` notifications
//! feed (`uploads/` keys only). Each message is one S3 event notification, which
//! [`bouquet_app::photos::receive_notification`] processes: the sizes are made and written to
//! the photo bucket, the bouquet shows them (`BouquetPhotoChanged`), or the upload is recorded
//! as refused (not an image, too large, too many pixels, damaged: the console tells the
//! vendor).
//!
//! The batch goes through the one runner ([`bouquet_runtime::batch`]): a message whose
//! processing failed (S3 or DynamoDB unavailable, a body that is not an S3 event) is answered
//! in `batchItemFailures`, delivered again after the visibility timeout, and parked whole on
//! `PhotoDeadLetterQueue` by the queue's redrive after `maxReceiveCount` receives (alarmed;
//! redrive with SQS's `StartMessageMoveTask`). A redelivered event changes nothing: the upload
//! has ended, and the sizes' keys name their content. Messages run one after another: each
//! decodes an image of up to 24 megapixels, and one at a time bounds the function's memory.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{Error, LambdaEvent};
use serde::Serialize;

use bouquet_app::photos::{self, Processed, Received};
use bouquet_app::App;
use bouquet_photos::render::ImageRenderer;
use bouquet_photos::s3::S3Objects;
use bouquet_photos::PhotoObjects;
use bouquet_runtime::batch::{self, Message, Outcome, Plan, Settled};

pub struct ProcessPhotos {
    pub app: App,
    pub objects: std::sync::Arc<dyn PhotoObjects>,
}

/// One batch, counted (logged as one line).
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchReport {
    pub received: usize,
    pub shown: usize,
    pub rejected: usize,
    pub superseded: usize,
    pub duplicates: usize,
    /// Keys no upload was allowed for, uploads for bouquets that are gone, and S3's test
    /// event.
    pub ignored: usize,
    /// Answered in `batchItemFailures`: SQS delivers them again.
    pub retried: usize,
}

impl BatchReport {
    fn of(settled: &Settled<Vec<Received>>) -> Self {
        let mut report = BatchReport {
            received: settled.received,
            retried: settled.retried.len(),
            ..BatchReport::default()
        };
        for received in settled.done.iter().flatten() {
            match received {
                Received::Processed(Processed::Shown(_)) => report.shown += 1,
                Received::Processed(Processed::Rejected(_)) => report.rejected += 1,
                Received::Processed(Processed::Superseded) => report.superseded += 1,
                Received::Processed(Processed::Duplicate) => report.duplicates += 1,
                Received::Processed(Processed::Unknown) | Received::Ignored => report.ignored += 1,
            }
        }
        report
    }
}

impl ProcessPhotos {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_app::aws_sdk_config()?;
        let app = App::from_sdk(&sdk).await?;
        let upload_bucket =
            std::env::var("PHOTO_UPLOAD_BUCKET").map_err(|_| "PHOTO_UPLOAD_BUCKET is not set")?;
        let photo_bucket = std::env::var("PHOTO_BUCKET").map_err(|_| "PHOTO_BUCKET is not set")?;
        Ok(Self {
            app,
            objects: std::sync::Arc::new(S3Objects::new(&sdk, upload_bucket, photo_bucket)),
        })
    }

    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
        let (response, _) = self.process(event.payload.records).await;
        Ok(response)
    }

    pub async fn process(&self, records: Vec<SqsMessage>) -> (SqsBatchResponse, BatchReport) {
        let settled = batch::run(
            Message::from_sqs(records),
            Plan::ONE_AT_A_TIME,
            |_| None,
            |message| async move {
                let received = photos::receive_notification(
                    &self.app,
                    self.objects.as_ref(),
                    &ImageRenderer,
                    &message.body,
                    &message.id,
                )
                .await;
                let outcome = match received {
                    Ok(received) => Outcome::Done(received),
                    Err(error) => Outcome::Retry(bouquet_app::aws::describe(&error)),
                };
                (message, outcome)
            },
            None,
        )
        .await;
        let report = BatchReport::of(&settled);
        tracing::info!(?report, "photo batch");
        (settled.sqs_response(), report)
    }
}
