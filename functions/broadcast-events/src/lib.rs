//! The live-update broadcaster: an EventBridge target for the events the channels carry.
//! Each event goes to the subscribers of each channel it belongs to
//! ([`bouquet_app::live::broadcast`]); the frame is the bus event itself.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use tracing::Instrument;

use bouquet_app::live::{self, Broadcast};
use bouquet_app::realtime::Pusher;
use bouquet_app::App;

pub async fn handler(
    app: &App,
    pusher: &dyn Pusher,
    event: LambdaEvent<Value>,
) -> Result<Broadcast, Error> {
    let span = bouquet_app::event_span(&event.payload);
    broadcast(app, pusher, &event.payload)
        .instrument(span)
        .await
}

async fn broadcast(app: &App, pusher: &dyn Pusher, bus_event: &Value) -> Result<Broadcast, Error> {
    let name = bus_event["detail-type"]
        .as_str()
        .ok_or("not an EventBridge event: no detail-type")?;
    let detail = &bus_event["detail"];
    let report = live::broadcast(app, pusher, name, detail).await?;
    tracing::info!(
        event = %name,
        event_id = %detail["eventId"],
        correlation_id = %detail["correlationId"],
        ?report,
        "broadcast"
    );
    Ok(report)
}
