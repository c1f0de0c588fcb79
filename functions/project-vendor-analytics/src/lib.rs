//! The shops' projector, an EventBridge target of the order events (`OrderPaid`,
//! `OrderCancelled`, `ReservationExpired`, `OrderFulfilled`, `OrderRejected`) and the review
//! events (`ReviewWritten`, `ReviewEdited`, `ReviewHidden`; the rule is in the template): a thin
//! function over [`bouquet_app::analytics::project`] (sales and earnings per day) and
//! [`bouquet_app::reviews::project_rating`] (each shop's rating), each deduped by event.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<Value, Error> {
    let span = bouquet_app::event_span(&event.payload);
    async {
        let review = event.payload["detail-type"]
            .as_str()
            .is_some_and(|name| name.starts_with("Review"));
        let applied = if review {
            bouquet_app::reviews::project_rating(app, &event.payload).await?
        } else {
            bouquet_app::analytics::project(app, &event.payload).await?
        };
        tracing::info!(applied, "projected");
        Ok(json!({ "applied": applied }))
    }
    .instrument(span)
    .await
}
