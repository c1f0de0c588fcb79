//! The shops' projector, an EventBridge target of the order events (`OrderPaid`,
//! `OrderCancelled`, `ReservationExpired`, `OrderFulfilled`, `OrderRejected`) and the review
//! events (`ReviewWritten`, `ReviewEdited`, `ReviewHidden`) and `BouquetListed` (the rule is
//! in the template): a thin function over [`bouquet_app::analytics::project`] (sales and
//! earnings per day, deduped by event), [`bouquet_app::reviews::project_rating`] (each shop's
//! rating, deduped by event, then copied onto its bouquets) and
//! [`bouquet_app::reviews::rate_listed_bouquet`] and
//! [`bouquet_app::reviews::rate_returned_bouquets`] (a new bouquet, or one a rejected order
//! puts back on sale, takes its shop's rating).

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

use bouquet_app::App;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<Value, Error> {
    let span = bouquet_app::event_span(&event.payload);
    async {
        let name = event.payload["detail-type"].as_str().unwrap_or_default();
        let applied = if name.starts_with("Review") {
            bouquet_app::reviews::project_rating(app, &event.payload).await?
        } else if name == "BouquetListed" {
            bouquet_app::reviews::rate_listed_bouquet(app, &event.payload).await?
        } else {
            let rated = bouquet_app::reviews::rate_returned_bouquets(app, &event.payload).await?;
            bouquet_app::analytics::project(app, &event.payload).await? || rated
        };
        tracing::info!(applied, "projected");
        Ok(json!({ "applied": applied }))
    }
    .instrument(span)
    .await
}
