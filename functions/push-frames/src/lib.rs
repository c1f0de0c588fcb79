//! The fan-out worker: consumes the fan-out queue that `broadcast-events` fills. Each message
//! is work ([`bouquet_app::live::Work`]): a unit (frames for one shard of a public channel, or
//! for listed connections: a parked failure, redriven), or a crowded channel's digest window
//! to close. The batch goes to [`bouquet_app::live::fan_out`], which reads each audience once,
//! coalesces, and pushes.
//!
//! The answer is `ReportBatchItemFailures`: a unit whose audience could not be read goes back
//! to the queue (the queue's redrive moves it to the dead-letter queue after
//! `maxReceiveCount` receives); a body that is no unit can never succeed, so it is parked on
//! the dead-letter queue at once. Pushes that failed were parked by the use case.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_app::live::{self, Work};
use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
    let ports = app.ports.live().await?;
    let mut units = Vec::new();
    let mut malformed = Vec::new();
    for record in event.payload.records {
        let id = record.message_id.unwrap_or_default();
        let body = record.body.unwrap_or_default();
        match serde_json::from_str::<Work>(&body) {
            Ok(unit) => units.push((id, unit)),
            Err(error) => {
                tracing::warn!(message_id = %id, %error, "not a unit of fan-out work; parked");
                malformed.push((id, body));
            }
        }
    }
    let mut failures = Vec::new();
    if !malformed.is_empty() {
        let bodies: Vec<String> = malformed.iter().map(|(_, b)| b.clone()).collect();
        if let Err(error) = ports.queue.park(&bodies).await {
            tracing::warn!(error = %bouquet_app::aws::describe(&error), "malformed units not parked; they go back to the queue");
            failures.extend(malformed.into_iter().map(|(id, _)| id));
        }
    }
    let report = live::fan_out(app, ports.pusher.as_ref(), ports.queue.as_ref(), units).await;
    tracing::info!(?report, "fan-out");
    failures.extend(report.retried);
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    Ok(response)
}
