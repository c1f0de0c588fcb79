//! The expiry sweeper, scheduled every minute: a thin function over
//! [`bouquet_app::expiry::sweep`], which says what a run does.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_app::expiry::{self, SweepReport};
use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<SweepReport, Error> {
    let correlation_id =
        bouquet_app::scheduled::correlation_id(&event.payload, &event.context.request_id);
    let report = expiry::sweep(app, &correlation_id).await?;
    tracing::info!(correlation_id = %correlation_id, ?report, "sweep");
    Ok(report)
}
