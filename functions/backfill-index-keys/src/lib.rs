//! Invoked by an operator after an upgrade that added an index (docs/deploying.md): gives the
//! bouquets, shops and orders written before it the keys it takes
//! ([`bouquet_app::maintenance::backfill_index_keys`]). The payload may carry `cursor`, where
//! the last run stopped; the answer says what was done and the `nextCursor` to pass on (`null`
//! once the whole table has been read).

use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent};
use serde::Deserialize;
use serde_json::Value;

use bouquet_app::maintenance::{self, BackfillReport};
use bouquet_app::App;

/// Kept back from the Lambda deadline to answer.
const DEADLINE_MARGIN: Duration = Duration::from_secs(10);

#[derive(Deserialize, Default)]
#[serde(default)]
struct Request {
    cursor: Option<String>,
}

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<BackfillReport, Error> {
    let request: Request = serde_json::from_value(event.payload)
        .map_err(|e| format!("the payload is {{\"cursor\": <nextCursor or null>}}: {e}"))?;
    let deadline = bouquet_retry::deadline(
        event.context.deadline,
        DEADLINE_MARGIN,
        Duration::from_secs(60),
    );
    let report = maintenance::backfill_index_keys(app, request.cursor, deadline).await?;
    tracing::info!(?report, "index keys backfilled");
    Ok(report)
}
