//! Vase registration on AWS IoT Core, as a saga: each step that creates something is undone,
//! in reverse order, when a later step fails, so a failed registration leaves no thing and
//! no active certificate behind.
//!
//! Steps: the data endpoint (`DescribeEndpoint`, read first: it creates nothing), the thing
//! (name = vase id, attribute `vendorId`), a key pair with an active certificate, the vase
//! policy attached to the certificate, the certificate attached to the thing. The caller
//! stores the vase afterwards and calls [`deregister`] if that fails.
//!
//! [`DeviceRegistry`] is the narrow seam to IoT Core: [`AwsDeviceRegistry`] calls the SDK,
//! tests wrap it to fail at a chosen step.

use futures::future::BoxFuture;

mod aws;

pub use aws::AwsDeviceRegistry;

/// An IoT Core call failed; the message carries the SDK's error chain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IoT Core {operation}: {message}")]
pub struct IotError {
    pub operation: &'static str,
    pub message: String,
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
pub trait DeviceRegistry: Send + Sync {
    /// The `iot:Data-ATS` endpoint devices connect to.
    fn data_endpoint(&self) -> BoxFuture<'_, Result<String, IotError>>;
    fn create_thing<'a>(
        &'a self,
        thing: &'a str,
        vendor_id: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;
    /// A new key pair and an active certificate.
    fn create_certificate(&self) -> BoxFuture<'_, Result<Certificate, IotError>>;
    fn attach_policy<'a>(
        &'a self,
        policy: &'a str,
        certificate_arn: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;
    fn attach_thing_principal<'a>(
        &'a self,
        thing: &'a str,
        certificate_arn: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;

    fn detach_thing_principal<'a>(
        &'a self,
        thing: &'a str,
        certificate_arn: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;
    fn detach_policy<'a>(
        &'a self,
        policy: &'a str,
        certificate_arn: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;
    /// Marks the certificate inactive and deletes it (IoT Core deletes inactive ones only).
    fn delete_certificate<'a>(
        &'a self,
        certificate_id: &'a str,
    ) -> BoxFuture<'a, Result<(), IotError>>;
    fn delete_thing<'a>(&'a self, thing: &'a str) -> BoxFuture<'a, Result<(), IotError>>;
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
#[error("{cause}{}", if .leftovers.is_empty() { String::new() } else { format!("; not undone: {}", .leftovers.join(", ")) })]
pub struct RegistrationError {
    pub cause: IotError,
    pub leftovers: Vec<String>,
}

/// What has been made so far, to undo in reverse.
#[derive(Default)]
struct Made<'a> {
    thing: Option<&'a str>,
    certificate: Option<Certificate>,
    policy: Option<&'a str>,
    principal_attached: bool,
}

/// Registers `thing` (the vase id) of `vendor_id` with `policy` attached to its certificate.
pub async fn register(
    registry: &dyn DeviceRegistry,
    thing: &str,
    vendor_id: &str,
    policy: &str,
) -> Result<Registration, RegistrationError> {
    let mut made = Made::default();
    match steps(registry, thing, vendor_id, policy, &mut made).await {
        Ok(registration) => Ok(registration),
        Err(cause) => {
            tracing::warn!(%thing, error = %cause, "vase registration failed; undoing what was made");
            let leftovers = undo(registry, made).await;
            Err(RegistrationError { cause, leftovers })
        }
    }
}

async fn steps<'a>(
    registry: &dyn DeviceRegistry,
    thing: &'a str,
    vendor_id: &str,
    policy: &'a str,
    made: &mut Made<'a>,
) -> Result<Registration, IotError> {
    let endpoint = registry.data_endpoint().await?;
    registry.create_thing(thing, vendor_id).await?;
    made.thing = Some(thing);
    let certificate = registry.create_certificate().await?;
    made.certificate = Some(certificate.clone());
    registry.attach_policy(policy, &certificate.arn).await?;
    made.policy = Some(policy);
    registry
        .attach_thing_principal(thing, &certificate.arn)
        .await?;
    made.principal_attached = true;
    Ok(Registration {
        thing_name: thing.to_owned(),
        certificate,
        endpoint,
    })
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
            tracing::error!(%what, %error, "could not undo a registration step; remove it by hand");
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
    if let Some(thing) = made.thing {
        note(format!("thing {thing}"), registry.delete_thing(thing).await);
    }
    leftovers
}
