//! The IoT reconciliation sweep, hourly. A registration whose deadline fired mid-saga, an
//! undo that IoT Core refused, a decommission whose removal failed: each can leave a thing
//! or an active certificate that no vase owns. This finds them, scoped to this stack's vase
//! policy, and removes them:
//!
//! - things of the stack older than [`GRACE`] whose vase is not in the table (a younger
//!   one may still be registering) lose their certificates and are deleted;
//! - certificates carrying the vase policy that no thing holds, older than [`GRACE`], are
//!   revoked.
//!
//! A run that could not remove something fails (after trying everything), so the run's
//! record lands in the schedules' failure queue and its alarm fires; the next run tries
//! again.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_app::vase_saga::{self, Reconciliation};
use bouquet_app::App;

pub use bouquet_app::vase_saga::GRACE;

pub async fn handler(app: &App, event: LambdaEvent<Value>) -> Result<Reconciliation, Error> {
    let registrar = app.ports.registrar().await?;
    let correlation_id =
        bouquet_app::scheduled::correlation_id(&event.payload, &event.context.request_id);
    let report = vase_saga::reconcile(app, registrar).await?;
    tracing::info!(correlation_id = %correlation_id, ?report, "IoT reconciliation");
    if report.leftovers.is_empty() {
        Ok(report)
    } else {
        Err(format!("not removed: {}", report.leftovers.join(", ")).into())
    }
}
