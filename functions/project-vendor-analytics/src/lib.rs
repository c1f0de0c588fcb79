//! The vendor analytics projector, an EventBridge target of `OrderPaid`, `OrderCancelled`,
//! `ReservationExpired` and `OrderFulfilled` (the rule is in the template): a thin function
//! over [`bouquet_app::analytics::project`].

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<Value, Error> {
    let span = bouquet_app::event_span(&event.payload);
    async {
        let applied = bouquet_app::analytics::project(app, &event.payload).await?;
        tracing::info!(applied, "projected");
        Ok(json!({ "applied": applied }))
    }
    .instrument(span)
    .await
}
