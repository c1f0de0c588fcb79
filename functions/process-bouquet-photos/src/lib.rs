//! Consumes the photo queue, which the upload bucket's `s3:ObjectCreated:*` notifications
//! feed (`uploads/` keys only). Each message is one S3 event; each record of it runs
//! [`bouquet_app::photos::process_upload`]: the sizes are made and written to the photo bucket,
//! the bouquet shows them (`BouquetPhotoChanged`), or the upload is recorded as refused (not an
//! image, too large, too many pixels, damaged: the console tells the vendor).
//!
//! The answer is `ReportBatchItemFailures`: a message whose processing failed (S3 or DynamoDB
//! unavailable, a body that is not an S3 event) is delivered again after the visibility
//! timeout, and the queue's redrive parks it whole on `PhotoDeadLetterQueue` after
//! `maxReceiveCount` receives (alarmed; redrive with SQS's `StartMessageMoveTask`). A
//! redelivered event changes nothing: the upload has ended, and the sizes' keys name their
//! content. Messages run one after another: each decodes an image of up to 24 megapixels,
//! and one at a time bounds the function's memory.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{Error, LambdaEvent};
use serde::{Deserialize, Serialize};

use bouquet_app::photos::{self, PhotoError, Processed};
use bouquet_app::App;
use bouquet_photos::render::ImageRenderer;
use bouquet_photos::s3::S3Objects;
use bouquet_photos::PhotoObjects;

/// What is read of an S3 event notification: each record's event name and object key. The
/// rest (identities, request ids, sequencers) is not needed, and not every sender fills it.
#[derive(Deserialize)]
struct S3Notification {
    #[serde(rename = "Records", default)]
    records: Vec<S3Record>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct S3Record {
    #[serde(default)]
    event_name: String,
    s3: S3Entity,
}

#[derive(Deserialize)]
struct S3Entity {
    object: S3Object,
}

#[derive(Deserialize)]
struct S3Object {
    key: String,
}

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
    /// Keys no upload was allowed for, and S3's test event.
    pub ignored: usize,
    /// Reported in `batchItemFailures`: SQS delivers them again.
    pub retried: usize,
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
        let (response, report) = self.process(event.payload.records).await;
        tracing::info!(
            received = report.received,
            shown = report.shown,
            rejected = report.rejected,
            superseded = report.superseded,
            duplicates = report.duplicates,
            ignored = report.ignored,
            retried = report.retried,
            "photo batch"
        );
        Ok(response)
    }

    pub async fn process(&self, messages: Vec<SqsMessage>) -> (SqsBatchResponse, BatchReport) {
        let mut report = BatchReport {
            received: messages.len(),
            ..Default::default()
        };
        let mut response = SqsBatchResponse::default();
        for message in messages {
            let id = message.message_id.clone().unwrap_or_default();
            match self.message(&message, &mut report).await {
                Ok(()) => {}
                Err(error) => {
                    tracing::warn!(message_id = %id, error = %bouquet_app::aws::describe(&*error), "photo message failed; SQS delivers it again");
                    report.retried += 1;
                    let mut failure = BatchItemFailure::default();
                    failure.item_identifier = id;
                    response.batch_item_failures.push(failure);
                }
            }
        }
        (response, report)
    }

    async fn message(
        &self,
        message: &SqsMessage,
        report: &mut BatchReport,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let body = message.body.as_deref().unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(body)?;
        // S3 sends one when the notification is configured; it names no object.
        if value["Event"] == "s3:TestEvent" {
            report.ignored += 1;
            return Ok(());
        }
        let event: S3Notification = serde_json::from_value(value)?;
        for record in event.records {
            if !record.event_name.starts_with("ObjectCreated") {
                report.ignored += 1;
                continue;
            }
            let key = record.s3.object.key;
            // Keys in S3 events are URL-encoded, spaces as `+`.
            let key = key.replace('+', " ");
            let key = percent_encoding::percent_decode_str(&key).decode_utf8()?;
            let correlation_id = message.message_id.clone().unwrap_or_default();
            let now = self.app.clock.now();
            match photos::process_upload(
                &self.app,
                self.objects.as_ref(),
                &ImageRenderer,
                &key,
                &correlation_id,
                now,
            )
            .await
            {
                Ok(Processed::Shown(_)) => report.shown += 1,
                Ok(Processed::Rejected(refusal)) => {
                    tracing::info!(%key, code = refusal.code(), "upload refused");
                    report.rejected += 1
                }
                Ok(Processed::Superseded) => report.superseded += 1,
                Ok(Processed::Duplicate) => report.duplicates += 1,
                Ok(Processed::Unknown) => report.ignored += 1,
                Err(error @ (PhotoError::NotFound | PhotoError::Forbidden(_))) => {
                    // The bouquet is gone: nothing will ever show this photo.
                    tracing::warn!(%key, %error, "upload for a bouquet that is gone");
                    report.ignored += 1
                }
                Err(error) => return Err(Box::new(error)),
            }
        }
        Ok(())
    }
}
