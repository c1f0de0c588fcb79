//! The expiry sweeper, scheduled every minute: a thin function over
//! [`bouquet_app::expiry::sweep`], which says what a run does.

use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_app::expiry::{self, SweepReport};
use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<SweepReport, Error> {
    let correlation_id =
        bouquet_app::scheduled::correlation_id(&event.payload, &event.context.request_id);
    // Stop starting rounds a few seconds before Lambda would stop the run.
    let deadline = bouquet_app::retry::deadline(
        event.context.deadline,
        Duration::from_secs(3),
        Duration::from_secs(50),
    );
    let report = expiry::sweep(app, &correlation_id, deadline).await?;
    tracing::info!(correlation_id = %correlation_id, ?report, "sweep");
    Ok(report)
}
