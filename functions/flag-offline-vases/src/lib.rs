//! The offline sweeper, scheduled every minute: online vases whose last heartbeat is older
//! than `OFFLINE_AFTER_SECONDS` (one hour) become `offline` with `VaseWentOffline`. See
//! [`bouquet_app::vases::sweep_offline`]: each write re-checks the heartbeat it read, so a
//! heartbeat racing the sweep keeps the vase online and two sweepers emit one event.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_app::vases::OfflineSweep;
use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<OfflineSweep, Error> {
    let correlation_id =
        bouquet_app::scheduled::correlation_id(&event.payload, &event.context.request_id);
    let report = bouquet_app::vases::sweep_offline(
        app,
        app.clock.now(),
        app.config.offline_after,
        &correlation_id,
    )
    .await?;
    tracing::info!(correlation_id = %correlation_id, ?report, "offline sweep");
    Ok(report)
}
