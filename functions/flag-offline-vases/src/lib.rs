//! The offline sweeper, scheduled every minute: online vases whose last heartbeat is older
//! than `OFFLINE_AFTER_SECONDS` (one hour) become `offline` with `VaseWentOffline`. They are
//! read from the sparse `VaseHeartbeatIndex` (no Scan); each write re-checks the heartbeat it
//! read, so a heartbeat racing the sweep keeps the vase online and two sweepers emit one
//! event. Readers do not wait for it: a silent vase already reads as offline.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_http::App;
use bouquet_vases::OfflineSweep;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<OfflineSweep, Error> {
    let correlation_id = bouquet_http::scheduled::correlation_id(&event);
    let report = sweep(app, &correlation_id).await?;
    bouquet_http::tracing::info!(correlation_id = %correlation_id, ?report, "offline sweep");
    Ok(report)
}

pub async fn sweep(app: &App, correlation_id: &str) -> Result<OfflineSweep, Error> {
    Ok(bouquet_vases::sweep_offline(
        &app.store,
        app.clock.now(),
        app.config.offline_after,
        correlation_id,
    )
    .await?)
}
