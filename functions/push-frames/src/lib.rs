//! The fan-out worker: consumes the fan-out queue that `broadcast-events` fills. Each message
//! is work ([`bouquet_app::live::Work`]): a unit (frames for one shard of a public channel, or
//! for listed connections: a parked failure, redriven), or a crowded channel's digest window
//! to close. [`bouquet_app::live::receive_work`] reads each audience once, coalesces, and
//! pushes.
//!
//! The answer is `ReportBatchItemFailures` (the one batch runner, `bouquet_runtime::batch`): a
//! unit whose audience could not be read goes back to the queue (the queue's redrive moves it
//! to the dead-letter queue after `maxReceiveCount` receives); a body that is no unit can
//! never succeed, so it is parked on the dead-letter queue at once. Pushes that failed were
//! parked by the use case.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_app::live;
use bouquet_app::App;
use bouquet_runtime::batch::Message;

pub async fn handler(app: &App, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
    let ports = app.ports.live().await?;
    let (settled, report) = live::receive_work(
        app,
        ports.pusher.as_ref(),
        ports.queue.as_ref(),
        Message::from_sqs(event.payload.records),
    )
    .await;
    tracing::info!(?report, dead_lettered = settled.dead_lettered, "fan-out");
    Ok(settled.sqs_response())
}
