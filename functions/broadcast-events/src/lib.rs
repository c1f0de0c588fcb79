//! The live-update broadcaster: an EventBridge target for the events the channels carry.
//! It plans ([`bouquet_app::live::broadcast`]): each public channel's shards become units of
//! work on the fan-out queue (`push-frames` pushes them); private channels are pushed here.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use tracing::Instrument;

use bouquet_app::live::{self, Broadcast, LivePorts};
use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<Broadcast, Error> {
    let ports = app.ports.live().await?;
    let span = bouquet_app::event_span(&event.payload);
    broadcast(app, ports, &event.payload).instrument(span).await
}

async fn broadcast(app: &App, ports: &LivePorts, bus_event: &Value) -> Result<Broadcast, Error> {
    let name = bus_event["detail-type"]
        .as_str()
        .ok_or("not an EventBridge event: no detail-type")?;
    let detail = &bus_event["detail"];
    let report = live::broadcast(
        app,
        ports.pusher.as_ref(),
        ports.queue.as_ref(),
        name,
        detail,
    )
    .await?;
    tracing::info!(
        event = %name,
        event_id = %detail["eventId"],
        correlation_id = %detail["correlationId"],
        ?report,
        "broadcast planned"
    );
    Ok(report)
}
