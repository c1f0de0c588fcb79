//! A vase's credentials in IoT Core, kept in step with its item in the table: registration,
//! certificate rotation and decommissioning. IoT Core takes no part in a DynamoDB transaction,
//! so each is a saga: the IoT steps (each undone if a later one fails, `bouquet_iot`), then
//! the table's conditional write; when that write fails, the IoT steps are undone too. The
//! IoT steps run in a task of their own, so that a request's deadline cannot cut a saga
//! between a step and its undo.

use crate::problem::{ApiError, Refusal};
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::vase::Vase;
use bouquet_domain::{BouquetId, Timestamp, VaseId, VendorId};
use bouquet_iot::{reconcile, IotError, NewThing, Registrar, Registration, RegistrationError};
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;

use bouquet_store::retry::Retry;
use bouquet_store::{StoreError, Target};

use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum VaseSagaError {
    #[error("no such vendor")]
    UnknownVendor,
    /// No such vase (or not the caller's to see: vase ids are not public).
    #[error("no such vase")]
    NotFound,
    #[error("the vase is another vendor's")]
    Forbidden(#[from] NotAllowed),
    /// A bouquet stands in the vase.
    #[error("bouquet {0} stands in this vase")]
    InUse(BouquetId),
    /// The vase kept changing (heartbeats, another rotation): nothing was left behind.
    #[error("the vase kept changing; retry shortly")]
    Busy,
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    #[error("the IoT task did not finish")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A registered vase and its credentials (the private key exists only here: IoT Core keeps
/// no copy and neither does the table).
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    pub vase: Vase,
    pub credentials: Registration,
}

/// A vase's new credentials after a rotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotated {
    pub vase_id: VaseId,
    pub credentials: Registration,
}

/// The answer stored under `key`, read before any IoT step (a DynamoDB condition cannot undo
/// those).
async fn replay<T>(
    app: &App,
    key: Option<&Idempotency<'_, T>>,
    now: Timestamp,
) -> Result<Option<Replayable<T>>, StoreError> {
    let Some(key) = key else { return Ok(None) };
    let record = app.store.idempotency_record(key.key_hash, now).await?;
    Ok(record.map(Replayable::Replayed))
}

/// The caller's vase, read for a change.
async fn own_vase(app: &App, caller: &Identity, vase_id: VaseId) -> Result<Vase, VaseSagaError> {
    // Vase ids are not public: another vendor's is as unknown to the caller as a missing one.
    let vase = app
        .store
        .vase(vase_id, true)
        .await?
        .filter(|vase| caller.require_vendor(vase.vendor_id).is_ok())
        .ok_or(VaseSagaError::NotFound)?;
    Ok(vase)
}

/// Logs what an undo could not remove: the reconciliation sweep (`reconcile-vase-things`)
/// finds it later.
fn report_leftovers(leftovers: &[String], what: &str) {
    if !leftovers.is_empty() {
        tracing::error!(?leftovers, "{what}");
    }
}

/// `vendor_id`'s vendor registers a vase: a thing, an active certificate with the vase policy,
/// then the vase item with `VaseRegistered` (and the idempotency record) in one transaction.
pub async fn register(
    app: &App,
    registrar: &Registrar,
    caller: &Identity,
    vendor_id: VendorId,
    key: Option<Idempotency<'_, Registered>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Registered>, VaseSagaError> {
    caller.require_vendor(vendor_id)?;
    if let Some(replay) = replay(app, key.as_ref(), now).await? {
        return Ok(replay);
    }
    // The shop's standing was the pipeline's (`ShopStanding`); it must still exist.
    if app.store.vendor(vendor_id, true).await?.is_none() {
        return Err(VaseSagaError::UnknownVendor);
    }
    let vase = Vase::register(VaseId::generate(), vendor_id, now);
    let (registry, policy) = (registrar.registry.clone(), registrar.policy.clone());
    let (thing, vendor) = (vase.vase_id.to_string(), vendor_id.to_string());
    let registered_at = now.as_millis() / 1000;
    let credentials = tokio::spawn(async move {
        let new = NewThing {
            name: &thing,
            vendor_id: &vendor,
            policy: &policy,
            registered_at,
        };
        bouquet_iot::register(registry.as_ref(), &new).await
    })
    .await??;
    let registered = Registered { vase, credentials };
    let event = DomainEvent::new(
        registered.vase.vase_id,
        registered.vase.version,
        now,
        correlation_id,
        EventData::VaseRegistered {
            vase_id: registered.vase.vase_id,
            vendor_id,
        },
    );
    let record = idempotency::record(key.as_ref(), &registered);
    let stored = app
        .store
        .create_vase(&registered.vase, &event, record.as_ref(), now)
        .await;
    let Err(error) = stored else {
        return Ok(Replayable::Done(registered));
    };
    let leftovers = bouquet_iot::deregister(
        registrar.registry.as_ref(),
        &registered.credentials,
        &registrar.policy,
    )
    .await;
    report_leftovers(
        &leftovers,
        "vase not stored and its IoT registration not fully undone",
    );
    match error {
        // A concurrent registration with the same key won: answer as it did.
        StoreError::IdempotencyReplay(record) => Ok(Replayable::Replayed(*record)),
        StoreError::ConditionFailed(conflicts)
            if conflicts
                .iter()
                .any(|c| matches!(c.target, Target::Vendor(_))) =>
        {
            Err(VaseSagaError::UnknownVendor)
        }
        other => Err(other.into()),
    }
}

/// Its vendor gets a new certificate for the vase; the ones it had are revoked. The new one is
/// attached beside the old; the rotation is recorded (the vase's next version, its
/// `VaseCertificateRotated` event, conditional on the version read); only then are the others
/// revoked. Of two concurrent rotations only one records; the other withdraws its certificate
/// (`Busy`), so a rotation never revokes the certificate another one returned.
pub async fn rotate(
    app: &App,
    registrar: &Registrar,
    caller: &Identity,
    vase_id: VaseId,
    key: Option<Idempotency<'_, Rotated>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Rotated>, VaseSagaError> {
    let vase = own_vase(app, caller, vase_id).await?;
    if let Some(replay) = replay(app, key.as_ref(), now).await? {
        return Ok(replay);
    }
    let (registry, policy) = (registrar.registry.clone(), registrar.policy.clone());
    let thing = vase_id.to_string();
    let credentials = tokio::spawn(async move {
        bouquet_iot::issue_certificate(registry.as_ref(), &thing, &policy).await
    })
    .await??;
    let rotated = Rotated {
        vase_id,
        credentials,
    };
    let next = vase.next_version();
    let event = DomainEvent::new(
        vase_id,
        next.version,
        now,
        correlation_id,
        EventData::VaseCertificateRotated {
            vase_id,
            vendor_id: vase.vendor_id,
        },
    );
    let record = idempotency::record(key.as_ref(), &rotated);
    let recorded = app
        .store
        .rotate_vase_certificate(&vase, &next, &event, record.as_ref(), now)
        .await;
    if let Err(error) = recorded {
        let leftovers = bouquet_iot::withdraw(
            registrar.registry.as_ref(),
            &rotated.credentials,
            &registrar.policy,
        )
        .await;
        report_leftovers(
            &leftovers,
            "rotation not recorded and its certificate not fully withdrawn",
        );
        return match error {
            StoreError::IdempotencyReplay(record) => Ok(Replayable::Replayed(*record)),
            StoreError::ConditionFailed(conflicts)
                if conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vase(_)) && c.item.is_none()) =>
            {
                Err(VaseSagaError::NotFound)
            }
            // The vase changed since the read (a heartbeat, another rotation).
            StoreError::ConditionFailed(_) => Err(VaseSagaError::Busy),
            other => Err(other.into()),
        };
    }
    let credentials = &rotated.credentials;
    match bouquet_iot::revoke_all_but(
        registrar.registry.as_ref(),
        &credentials.thing_name,
        &credentials.certificate.arn,
        &registrar.policy,
    )
    .await
    {
        Ok(done) => report_leftovers(
            &done.leftovers,
            "old certificates not fully revoked; revoke them by hand (docs/operations.md)",
        ),
        Err(error) => tracing::error!(
            error = %bouquet_aws::describe(&error),
            "old certificates not listed for revocation; revoke them by hand (docs/operations.md)"
        ),
    }
    Ok(Replayable::Done(rotated))
}

/// Its vendor decommissions the vase: the item deleted with `VaseDecommissioned` (refused
/// while the bouquet standing in it is on sale: available or reserved; a sold or withdrawn one,
/// which a vase written before withdrawals took bouquets out of may still name, does not keep
/// it), then its thing and certificates removed. The table first:
/// once the item is gone the vase cannot be used through the API, and whatever of its IoT
/// resources could not be removed (logged) has no vase, so the reconciliation sweep removes it.
pub async fn decommission(
    app: &App,
    registrar: &Registrar,
    caller: &Identity,
    vase_id: VaseId,
    correlation_id: &str,
    now: Timestamp,
) -> Result<(), VaseSagaError> {
    let mut retry = Retry::optimistic();
    loop {
        let vase = own_vase(app, caller, vase_id).await?;
        let standing = match vase.bouquet {
            Some(held) => app.store.bouquet(held.bouquet_id, true).await?,
            None => None,
        };
        vase.decommission(standing.as_ref())
            .map_err(VaseSagaError::InUse)?;
        let event = DomainEvent::new(
            vase_id,
            vase.next_version().version,
            now,
            correlation_id,
            EventData::VaseDecommissioned {
                vase_id,
                vendor_id: vase.vendor_id,
            },
        );
        match app.store.decommission_vase(&vase, &event).await {
            Ok(()) => break,
            // Changed since the read (a heartbeat, a bouquet placed, a concurrent
            // decommission, its bouquet back on sale): read and decide again.
            Err(StoreError::ConditionFailed(conflicts))
                if conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vase(_) | Target::Bouquet(_))) =>
            {
                if !retry.wait().await {
                    return Err(VaseSagaError::Busy);
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
    let (registry, policy) = (registrar.registry.clone(), registrar.policy.clone());
    let thing = vase_id.to_string();
    let retired =
        tokio::spawn(async move { bouquet_iot::retire(registry.as_ref(), &thing, &policy).await })
            .await;
    let left = "vase decommissioned; IoT resources left for the reconciliation sweep";
    match retired {
        Ok(Ok(leftovers)) => report_leftovers(&leftovers, left),
        Ok(Err(error)) => {
            tracing::error!(error = %bouquet_aws::describe(&error), "{left}")
        }
        Err(error) => tracing::error!(%error, "{left}: the IoT task failed"),
    }
    Ok(())
}

/// Whether a vase item exists for `vase_id` (the reconciliation sweep's question about a
/// thing).
pub async fn has_vase(app: &App, vase_id: VaseId) -> Result<bool, StoreError> {
    Ok(app.store.vase(vase_id, true).await?.is_some())
}

/// Longer than any registration or rotation can run (their functions time out in 30 s).
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// Things and certificates looked at per run; the rest wait for the next run.
const LIMIT: usize = 1000;
/// Concurrent table reads.
const READS: usize = 8;

/// What a reconciliation run found and did.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliation {
    pub things_checked: usize,
    pub things_removed: Vec<String>,
    pub certificates_revoked: Vec<String>,
    pub leftovers: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Iot(#[from] IotError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Finds the things and certificates of this stack's vase policy that no vase owns (older than
/// [`GRACE`]: a younger one may still be registering) and removes them. What could not be
/// removed is in `leftovers`.
pub async fn reconcile(app: &App, registrar: &Registrar) -> Result<Reconciliation, ReconcileError> {
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
            Ok::<_, ReconcileError>(vase.is_none().then_some(name))
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
            Err(error) => report
                .leftovers
                .push(format!("thing {thing}: {}", bouquet_aws::describe(&error))),
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

impl From<VaseSagaError> for ApiError {
    fn from(error: VaseSagaError) -> Self {
        use VaseSagaError as E;
        match error {
            E::UnknownVendor => ApiError::NotFound("vendor"),
            E::NotFound => ApiError::NotFound("vase"),
            E::Forbidden(_) => ApiError::forbidden(),
            E::InUse(bouquet_id) => ApiError::Conflict(
                Refusal::new(
                    "vase.in_use",
                    "Vase in use",
                    format!("bouquet {bouquet_id} stands in this vase; withdraw it or take it out of the vase first"),
                )
                .with("bouquetId", bouquet_id),
            ),
            E::Busy => ApiError::busy(),
            E::Store(error) => error.into(),
            error @ (E::Registration(_) | E::Task(_)) => ApiError::internal(error),
        }
    }
}
