//! Vase registration on AWS IoT Core, as a saga: each step that creates something is undone,
//! in reverse order, when a later step fails, so a failed registration leaves no thing and
//! no active certificate behind.
//!
//! Steps: the data endpoint (`DescribeEndpoint`, read first: it creates nothing), the thing
//! (name = vase id, attribute `vendorId`), a key pair with an active certificate, the vase
//! policy attached to the certificate, the certificate attached to the thing. The caller
//! stores the vase afterwards and calls [`deregister`] if that fails.
//!
//! Besides registration: rotation ([`issue_certificate`], then [`revoke_all_but`]),
//! [`retire`] (a decommissioned vase's thing and certificates removed) and, in
//! [`reconcile`], what a sweep needs to find things and certificates no vase owns.
//!
//! [`DeviceRegistry`] is the narrow seam to IoT Core: [`AwsDeviceRegistry`] calls the SDK,
//! tests wrap it to fail at a chosen step.

use std::collections::HashMap;
use std::time::Duration;

mod aws;
pub mod reconcile;

pub use aws::AwsDeviceRegistry;

/// Thing attributes the sweep reads: the owner, the stack's vase policy (things of other
/// stacks in the same account are never touched) and when registration began (a thing
/// younger than the sweep's grace period may still be mid-registration).
pub const VENDOR_ATTRIBUTE: &str = "vendorId";
pub const POLICY_ATTRIBUTE: &str = "vasePolicy";
pub const REGISTERED_AT_ATTRIBUTE: &str = "registeredAt";

/// What a vase's thing is created with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewThing<'a> {
    pub name: &'a str,
    pub vendor_id: &'a str,
    pub policy: &'a str,
    /// Epoch seconds.
    pub registered_at: i64,
}

/// A thing as IoT Core lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thing {
    pub name: String,
    pub attributes: HashMap<String, String>,
}

/// One page of a listing, and the token of the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// What the vase routes and the sweep need of IoT Core: the registry and the stack's vase
/// policy (attached to every vase certificate; it also scopes the sweep to this stack).
#[derive(Clone)]
pub struct Registrar {
    pub registry: std::sync::Arc<dyn DeviceRegistry>,
    pub policy: String,
}

#[derive(Debug, thiserror::Error)]
#[error("VASE_POLICY_NAME is not set")]
pub struct PolicyNotSet;

impl Registrar {
    /// IoT Core through the SDK, with `VASE_POLICY_NAME` from the template's environment:
    /// what every vase-credential function builds once per container.
    pub fn aws(sdk: &bouquet_aws::SdkConfig) -> Result<Self, PolicyNotSet> {
        Self::from_env(std::sync::Arc::new(AwsDeviceRegistry::lazy(sdk)))
    }

    /// `VASE_POLICY_NAME` from the template's environment.
    pub fn from_env(registry: std::sync::Arc<dyn DeviceRegistry>) -> Result<Self, PolicyNotSet> {
        let policy = std::env::var("VASE_POLICY_NAME").map_err(|_| PolicyNotSet)?;
        Ok(Self { registry, policy })
    }
}

/// An IoT Core call failed, with the SDK's error (or what was missing from its answer) as the
/// source.
#[derive(Debug, thiserror::Error)]
#[error("IoT Core {operation}")]
pub struct IotError {
    pub operation: &'static str,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl IotError {
    pub fn new(
        operation: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            operation,
            source: source.into(),
        }
    }
}

/// A certificate made for one vase. The private key exists only here: IoT Core does not keep
/// it, and nothing stores or logs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate {
    pub arn: String,
    pub id: String,
    pub pem: String,
    pub private_key: String,
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("arn", &self.arn)
            .field("id", &self.id)
            .field("private_key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The IoT Core operations registration needs, and their undo.
#[async_trait::async_trait]
pub trait DeviceRegistry: Send + Sync {
    /// The `iot:Data-ATS` endpoint devices connect to.
    async fn data_endpoint(&self) -> Result<String, IotError>;
    async fn create_thing<'a>(&self, thing: &NewThing<'a>) -> Result<(), IotError>;
    /// A new key pair and an active certificate.
    async fn create_certificate(&self) -> Result<Certificate, IotError>;
    async fn attach_policy(&self, policy: &str, certificate_arn: &str) -> Result<(), IotError>;
    async fn attach_thing_principal(
        &self,
        thing: &str,
        certificate_arn: &str,
    ) -> Result<(), IotError>;

    async fn detach_thing_principal(
        &self,
        thing: &str,
        certificate_arn: &str,
    ) -> Result<(), IotError>;
    async fn detach_policy(&self, policy: &str, certificate_arn: &str) -> Result<(), IotError>;
    /// Marks the certificate inactive and deletes it (IoT Core deletes inactive ones only).
    async fn delete_certificate(&self, certificate_id: &str) -> Result<(), IotError>;
    async fn delete_thing(&self, thing: &str) -> Result<(), IotError>;

    /// The certificate ARNs attached to a thing (`ListThingPrincipals`).
    async fn thing_principals(&self, thing: &str) -> Result<Vec<String>, IotError>;
    /// One page of the things whose `vasePolicy` attribute is `policy` (`ListThings`).
    async fn vase_things(&self, policy: &str, next: Option<&str>) -> Result<Page<Thing>, IotError>;
    /// One page of the certificate ARNs `policy` is attached to (`ListTargetsForPolicy`).
    async fn policy_certificates(
        &self,
        policy: &str,
        next: Option<&str>,
    ) -> Result<Page<String>, IotError>;
    /// The things a certificate is attached to (`ListPrincipalThings`).
    async fn principal_things(&self, certificate_arn: &str) -> Result<Vec<String>, IotError>;
    /// When a certificate was created, epoch seconds (`DescribeCertificate`).
    async fn certificate_created_at(&self, certificate_id: &str) -> Result<i64, IotError>;
}

/// The certificate id in a certificate ARN (`arn:aws:iot:{region}:{account}:cert/{id}`).
pub fn certificate_id(arn: &str) -> &str {
    arn.rsplit_once("cert/").map_or(arn, |(_, id)| id)
}

/// A registered vase's credentials and where it connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    pub thing_name: String,
    pub certificate: Certificate,
    pub endpoint: String,
}

/// Registration failed. `leftovers` names what the undo could not remove (logged too), so an
/// operator can; it is empty when everything was undone.
#[derive(Debug, thiserror::Error)]
#[error("the IoT registration failed{}", if .leftovers.is_empty() { String::new() } else { format!(" (not undone: {})", .leftovers.join(", ")) })]
pub struct RegistrationError {
    #[source]
    pub cause: IotError,
    pub leftovers: Vec<String>,
}

/// What has been made so far, to undo in reverse.
#[derive(Default)]
struct Made<'a> {
    /// The thing the certificate is (to be) attached to.
    thing: Option<&'a str>,
    /// Whether the thing itself was made here (registration), or existed (rotation).
    thing_created: bool,
    certificate: Option<Certificate>,
    policy: Option<&'a str>,
    principal_attached: bool,
}

/// Registers `thing` (the vase id) of `vendor_id` with `policy` attached to its certificate.
pub async fn register(
    registry: &dyn DeviceRegistry,
    thing: &NewThing<'_>,
) -> Result<Registration, RegistrationError> {
    let mut made = Made::default();
    match steps(registry, thing, &mut made).await {
        Ok(registration) => Ok(registration),
        Err(cause) => {
            tracing::warn!(thing = %thing.name, error = %bouquet_aws::describe(&cause), "vase registration failed; undoing what was made");
            let leftovers = undo(registry, made).await;
            Err(RegistrationError { cause, leftovers })
        }
    }
}

async fn steps<'a>(
    registry: &dyn DeviceRegistry,
    new: &'a NewThing<'a>,
    made: &mut Made<'a>,
) -> Result<Registration, IotError> {
    let (thing, policy) = (new.name, new.policy);
    let endpoint = registry.data_endpoint().await?;
    registry.create_thing(new).await?;
    made.thing = Some(thing);
    made.thing_created = true;
    let certificate = attach_new_certificate(registry, thing, policy, made).await?;
    Ok(Registration {
        thing_name: thing.to_owned(),
        certificate,
        endpoint,
    })
}

/// A new certificate with `policy`, attached to `thing`; `made` notes each step as it is
/// taken, so that a failure undoes exactly what was made.
async fn attach_new_certificate<'a>(
    registry: &dyn DeviceRegistry,
    thing: &'a str,
    policy: &'a str,
    made: &mut Made<'a>,
) -> Result<Certificate, IotError> {
    let certificate = registry.create_certificate().await?;
    made.certificate = Some(certificate.clone());
    registry.attach_policy(policy, &certificate.arn).await?;
    made.policy = Some(policy);
    registry
        .attach_thing_principal(thing, &certificate.arn)
        .await?;
    made.principal_attached = true;
    Ok(certificate)
}

/// Removes a registration whose vase could not be stored. Returns what could not be undone.
pub async fn deregister(
    registry: &dyn DeviceRegistry,
    registration: &Registration,
    policy: &str,
) -> Vec<String> {
    undo(
        registry,
        Made {
            thing: Some(&registration.thing_name),
            thing_created: true,
            certificate: Some(registration.certificate.clone()),
            policy: Some(policy),
            principal_attached: true,
        },
    )
    .await
}

/// Undoes in reverse order, trying every step even after one fails.
async fn undo(registry: &dyn DeviceRegistry, made: Made<'_>) -> Vec<String> {
    let mut leftovers = Vec::new();
    let mut note = |what: String, result: Result<(), IotError>| {
        if let Err(error) = result {
            tracing::error!(%what, error = %bouquet_aws::describe(&error), "could not undo a registration step; remove it by hand");
            leftovers.push(what);
        }
    };
    if let Some(certificate) = &made.certificate {
        if let (true, Some(thing)) = (made.principal_attached, made.thing) {
            note(
                format!("attachment of {} to thing {thing}", certificate.arn),
                registry
                    .detach_thing_principal(thing, &certificate.arn)
                    .await,
            );
        }
        if let Some(policy) = made.policy {
            note(
                format!("policy {policy} on {}", certificate.arn),
                registry.detach_policy(policy, &certificate.arn).await,
            );
        }
        note(
            format!("certificate {}", certificate.id),
            registry.delete_certificate(&certificate.id).await,
        );
    }
    if let (true, Some(thing)) = (made.thing_created, made.thing) {
        note(
            format!("thing {thing}"),
            delete_thing(registry, thing).await,
        );
    }
    leftovers
}

/// `DeleteThing`, retried: IoT Core detaches principals asynchronously, so right after
/// `DetachThingPrincipal` it can still refuse to delete a thing with a principal attached.
async fn delete_thing(registry: &dyn DeviceRegistry, thing: &str) -> Result<(), IotError> {
    let mut backoff = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match registry.delete_thing(thing).await {
            Ok(()) => return Ok(()),
            Err(error) if attempt >= DELETE_THING_ATTEMPTS => return Err(error),
            Err(error) => {
                tracing::debug!(%thing, %error, attempt, "DeleteThing refused; trying again");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
                attempt += 1;
            }
        }
    }
}

/// Five tries with 1.5 s of waiting in all (100, 200, 400, 800 ms); what is still attached
/// after that is left for the reconciliation sweep.
const DELETE_THING_ATTEMPTS: u32 = 5;

/// Revokes one certificate: detached from the thing and the policy, deactivated and deleted.
/// Returns what could not be undone.
async fn revoke(
    registry: &dyn DeviceRegistry,
    thing: Option<&str>,
    certificate_arn: &str,
    policy: &str,
) -> Vec<String> {
    let mut leftovers = Vec::new();
    let mut note = |what: String, result: Result<(), IotError>| {
        if let Err(error) = result {
            tracing::error!(%what, error = %bouquet_aws::describe(&error), "could not revoke a certificate");
            leftovers.push(what);
        }
    };
    if let Some(thing) = thing {
        note(
            format!("attachment of {certificate_arn} to thing {thing}"),
            registry
                .detach_thing_principal(thing, certificate_arn)
                .await,
        );
    }
    note(
        format!("policy {policy} on {certificate_arn}"),
        registry.detach_policy(policy, certificate_arn).await,
    );
    let id = certificate_id(certificate_arn);
    note(
        format!("certificate {id}"),
        registry.delete_certificate(id).await,
    );
    leftovers
}

/// Rotation, first half: a new key pair and certificate with `policy`, attached to `thing`
/// beside the one it has (so the vase keeps working until it switches). A failure undoes
/// the new certificate. The caller records the rotation, then calls [`revoke_all_but`];
/// if recording fails, [`withdraw`] removes the new certificate again.
pub async fn issue_certificate(
    registry: &dyn DeviceRegistry,
    thing: &str,
    policy: &str,
) -> Result<Registration, RegistrationError> {
    let endpoint = registry
        .data_endpoint()
        .await
        .map_err(|cause| RegistrationError {
            cause,
            leftovers: Vec::new(),
        })?;
    let mut made = Made {
        thing: Some(thing),
        ..Made::default()
    };
    match attach_new_certificate(registry, thing, policy, &mut made).await {
        Ok(certificate) => Ok(Registration {
            thing_name: thing.to_owned(),
            certificate,
            endpoint,
        }),
        Err(cause) => {
            tracing::warn!(%thing, error = %bouquet_aws::describe(&cause), "certificate rotation failed; undoing the new certificate");
            let leftovers = undo(registry, made).await;
            Err(RegistrationError { cause, leftovers })
        }
    }
}

/// Removes a certificate [`issue_certificate`] attached, when its rotation was not recorded.
/// Returns what could not be undone.
pub async fn withdraw(
    registry: &dyn DeviceRegistry,
    issued: &Registration,
    policy: &str,
) -> Vec<String> {
    revoke(
        registry,
        Some(&issued.thing_name),
        &issued.certificate.arn,
        policy,
    )
    .await
}

/// What [`revoke_all_but`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Revoked {
    /// The certificate ARNs revoked.
    pub revoked: Vec<String>,
    /// What could not be removed (logged).
    pub leftovers: Vec<String>,
}

/// Rotation, second half: revokes every certificate of `thing` but `keep`.
pub async fn revoke_all_but(
    registry: &dyn DeviceRegistry,
    thing: &str,
    keep: &str,
    policy: &str,
) -> Result<Revoked, IotError> {
    let mut done = Revoked::default();
    for arn in registry.thing_principals(thing).await? {
        if arn == keep {
            continue;
        }
        done.leftovers
            .extend(revoke(registry, Some(thing), &arn, policy).await);
        done.revoked.push(arn);
    }
    Ok(done)
}

/// Removes a vase's thing and every certificate attached to it. Returns what could not be
/// removed (logged; the reconciliation sweep retries what is left).
pub async fn retire(
    registry: &dyn DeviceRegistry,
    thing: &str,
    policy: &str,
) -> Result<Vec<String>, IotError> {
    let mut leftovers = Vec::new();
    for arn in registry.thing_principals(thing).await? {
        leftovers.extend(revoke(registry, Some(thing), &arn, policy).await);
    }
    if let Err(error) = delete_thing(registry, thing).await {
        tracing::error!(%thing, error = %bouquet_aws::describe(&error), "could not delete the thing; the reconciliation sweep retries it");
        leftovers.push(format!("thing {thing}"));
    }
    Ok(leftovers)
}

/// Revokes a certificate that is attached to no thing (see [`reconcile`]).
pub async fn revoke_unattached(
    registry: &dyn DeviceRegistry,
    certificate_arn: &str,
    policy: &str,
) -> Vec<String> {
    revoke(registry, None, certificate_arn, policy).await
}
