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

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use lambda_runtime::{Error, LambdaEvent};
use serde::Serialize;
use serde_json::Value;

use bouquet_app::domain::VaseId;
use bouquet_app::App;
use bouquet_iot::{reconcile, Registrar};

/// Longer than any registration or rotation can run (their functions time out in 30 s).
pub const GRACE: Duration = Duration::from_secs(15 * 60);
/// Things and certificates looked at per run; the rest wait for the next run.
const LIMIT: usize = 1000;
/// Concurrent table reads.
const READS: usize = 8;

#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliation {
    pub things_checked: usize,
    pub things_removed: Vec<String>,
    pub certificates_revoked: Vec<String>,
    pub leftovers: Vec<String>,
}

pub async fn handler(
    app: &App,
    registrar: &Registrar,
    event: LambdaEvent<Value>,
) -> Result<Reconciliation, Error> {
    let correlation_id =
        bouquet_app::scheduled::correlation_id(&event.payload, &event.context.request_id);
    let report = reconcile(app, registrar).await?;
    tracing::info!(correlation_id = %correlation_id, ?report, "IoT reconciliation");
    if report.leftovers.is_empty() {
        Ok(report)
    } else {
        Err(format!("not removed: {}", report.leftovers.join(", ")).into())
    }
}

pub async fn reconcile(app: &App, registrar: &Registrar) -> Result<Reconciliation, Error> {
    let registry = registrar.registry.as_ref();
    let policy = registrar.policy.as_str();
    let settled_before =
        (app.clock.now().as_millis() / 1000).saturating_sub(GRACE.as_secs() as i64);
    let things = reconcile::settled_things(registry, policy, settled_before, LIMIT).await?;
    let mut report = Reconciliation {
        things_checked: things.len(),
        ..Reconciliation::default()
    };
    // Names that are not vase ids are not this system's things.
    let ids: Vec<(String, VaseId)> = things
        .into_iter()
        .filter_map(|thing| Some((VaseId::parse(&thing.name).ok()?, thing.name)))
        .map(|(id, name)| (name, id))
        .collect();
    let orphans: Vec<String> = futures::stream::iter(ids)
        .map(|(name, id)| async move {
            let vase = app.store.vase(id, true).await?;
            Ok::<_, Error>(vase.is_none().then_some(name))
        })
        .buffer_unordered(READS)
        .try_filter_map(|orphan| async move { Ok(orphan) })
        .try_collect()
        .await?;
    for thing in orphans {
        tracing::warn!(%thing, "thing without a vase; removing it");
        match bouquet_iot::retire(registry, &thing, policy).await {
            Ok(leftovers) if leftovers.is_empty() => report.things_removed.push(thing),
            Ok(leftovers) => report.leftovers.extend(leftovers),
            Err(error) => report.leftovers.push(format!("thing {thing}: {error}")),
        }
    }
    for arn in reconcile::unattached_certificates(registry, policy, settled_before, LIMIT).await? {
        tracing::warn!(certificate = %arn, "vase certificate on no thing; revoking it");
        let leftovers = bouquet_iot::revoke_unattached(registry, &arn, policy).await;
        if leftovers.is_empty() {
            report.certificates_revoked.push(arn);
        } else {
            report.leftovers.extend(leftovers);
        }
    }
    Ok(report)
}
