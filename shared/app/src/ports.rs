//! The adapters a few use cases need beyond the table, the clock and the payments: IoT Core's
//! registrar, the user directory, the upload bucket's signer, Stripe's webhook secret, the
//! live updates' pusher and queue. Each is built from the container's SDK configuration at
//! its first use and kept for the container (a function that never asks for one never builds
//! it), or given outright by a test (`Ports::with_*`). A port whose adapter crate a function
//! does not link (a feature it does not enable) does not exist in it. The app holds them
//! (`app.ports.registrar().await?`); this module depends on no other module of the crate.

use crate::problem::ApiError;
use std::sync::Arc;

use bouquet_realtime::{Pusher, WorkQueue};
use tokio::sync::OnceCell;

/// A port that could not be built (its setting missing, or the container has no SDK
/// configuration: an app made for a test that did not give it).
#[derive(Debug, thiserror::Error)]
#[error("the {port} could not be built: {reason}")]
pub struct PortError {
    pub port: &'static str,
    pub reason: String,
}

impl PortError {
    fn new(port: &'static str, reason: impl std::fmt::Display) -> Self {
        Self {
            port,
            reason: reason.to_string(),
        }
    }
}

/// One port: given, or made at its first use and kept.
struct Port<T>(Arc<OnceCell<T>>);

impl<T> Clone for Port<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Default for Port<T> {
    fn default() -> Self {
        Self(Arc::new(OnceCell::new()))
    }
}

impl<T> Port<T> {
    fn given(value: T) -> Self {
        Self(Arc::new(OnceCell::new_with(Some(value))))
    }

    async fn get_or_build<E: std::fmt::Display>(
        &self,
        name: &'static str,
        sdk: Option<&bouquet_aws::SdkConfig>,
        build: impl FnOnce(&bouquet_aws::SdkConfig) -> Result<T, E>,
    ) -> Result<&T, PortError> {
        self.0
            .get_or_try_init(|| async {
                let sdk = sdk.ok_or_else(|| PortError::new(name, "no SDK configuration"))?;
                build(sdk).map_err(|e| PortError::new(name, e))
            })
            .await
    }
}

/// Every port of an app (see the module's documentation), and the SDK configuration they are
/// built from.
#[derive(Clone, Default)]
pub struct Ports {
    sdk: Option<bouquet_aws::SdkConfig>,
    #[cfg(feature = "iot")]
    registrar: Port<Arc<bouquet_iot::Registrar>>,
    directory: Port<Option<Arc<dyn bouquet_directory::UserDirectory>>>,
    photo_signer: Port<Arc<bouquet_photos::PostPolicySigner>>,
    #[cfg(feature = "stripe")]
    webhook_secret: Port<WebhookSecret>,
    #[cfg(feature = "stripe")]
    connect_webhook_secret: Port<WebhookSecret>,
    #[cfg(feature = "fanout")]
    live: Port<LivePorts>,
    pusher: Port<Arc<dyn Pusher>>,
    private_photos: Port<Arc<dyn bouquet_photos::PrivatePhotos>>,
}

impl Ports {
    /// Ports built from `sdk` at their first use (none given).
    pub fn from_sdk(sdk: &bouquet_aws::SdkConfig) -> Self {
        Self {
            sdk: Some(sdk.clone()),
            ..Self::default()
        }
    }

    /// IoT Core's registrar for vase credentials (`VASE_POLICY_NAME`).
    #[cfg(feature = "iot")]
    pub async fn registrar(&self) -> Result<&bouquet_iot::Registrar, PortError> {
        self.registrar
            .get_or_build("IoT registrar", self.sdk.as_ref(), |sdk| {
                bouquet_iot::Registrar::aws(sdk).map(Arc::new)
            })
            .await
            .map(Arc::as_ref)
    }

    #[cfg(feature = "iot")]
    pub fn with_registrar(mut self, registrar: Arc<bouquet_iot::Registrar>) -> Self {
        self.registrar = Port::given(registrar);
        self
    }

    /// The user pool the shop members are in (`USER_POOL_ID`); `None` when the stack trusts
    /// an external identity provider (no pool of its own), or in a function that does not
    /// link Cognito (feature `cognito`).
    pub async fn directory(
        &self,
    ) -> Result<Option<&dyn bouquet_directory::UserDirectory>, PortError> {
        let directory = self
            .directory
            .get_or_build("user directory", self.sdk.as_ref(), user_pool)
            .await?;
        Ok(directory.as_deref())
    }

    pub fn with_directory(mut self, directory: Arc<dyn bouquet_directory::UserDirectory>) -> Self {
        self.directory = Port::given(Some(directory));
        self
    }

    /// The signer of the upload bucket's POST policies (`PHOTO_UPLOAD_BUCKET`, whose form posts
    /// to `PHOTO_UPLOAD_URL`).
    pub async fn photo_signer(&self) -> Result<&bouquet_photos::PostPolicySigner, PortError> {
        self.photo_signer
            .get_or_build("upload signer", self.sdk.as_ref(), |sdk| {
                let bucket = std::env::var("PHOTO_UPLOAD_BUCKET")
                    .map_err(|_| "PHOTO_UPLOAD_BUCKET is not set".to_owned())?;
                let url = std::env::var("PHOTO_UPLOAD_URL")
                    .map_err(|_| "PHOTO_UPLOAD_URL is not set".to_owned())?;
                bouquet_photos::PostPolicySigner::from_sdk(sdk, bucket, url)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .await
            .map(Arc::as_ref)
    }

    pub fn with_photo_signer(mut self, signer: Arc<bouquet_photos::PostPolicySigner>) -> Self {
        self.photo_signer = Port::given(signer);
        self
    }

    /// Stripe's webhook signing secret (see [`WebhookSecret`]).
    #[cfg(feature = "stripe")]
    pub async fn webhook_secret(&self) -> Result<&str, PortError> {
        let secret = self
            .webhook_secret
            .get_or_build("webhook secret", self.sdk.as_ref(), WebhookSecret::from_env)
            .await?;
        secret.get().await
    }

    #[cfg(feature = "stripe")]
    pub fn with_webhook_secret(mut self, secret: impl Into<String>) -> Self {
        self.webhook_secret = Port::given(WebhookSecret::given(secret.into()));
        self
    }

    /// The Connect endpoint's signing secret, for the connected accounts' events (see
    /// [`WebhookSecret`]: `STRIPE_CONNECT_WEBHOOK_SECRET[_PARAMETER]`).
    #[cfg(feature = "stripe")]
    pub async fn connect_webhook_secret(&self) -> Result<&str, PortError> {
        let secret = self
            .connect_webhook_secret
            .get_or_build("Connect webhook secret", self.sdk.as_ref(), |sdk| {
                WebhookSecret::from_env_named(sdk, "STRIPE_CONNECT_WEBHOOK_SECRET")
            })
            .await?;
        secret.get().await
    }

    #[cfg(feature = "stripe")]
    pub fn with_connect_webhook_secret(mut self, secret: impl Into<String>) -> Self {
        self.connect_webhook_secret = Port::given(WebhookSecret::given(secret.into()));
        self
    }

    /// The broadcaster's pusher and fan-out queue.
    #[cfg(feature = "fanout")]
    pub async fn live(&self) -> Result<&LivePorts, PortError> {
        self.live
            .get_or_build("live ports", self.sdk.as_ref(), LivePorts::from_env)
            .await
    }

    #[cfg(feature = "fanout")]
    pub fn with_live(mut self, ports: LivePorts) -> Self {
        self.live = Port::given(ports);
        self
    }

    /// API Gateway's `@connections` (`WEBSOCKET_MANAGEMENT_URL`), for a subscriber's own
    /// answers.
    pub async fn pusher(&self) -> Result<&dyn Pusher, PortError> {
        let pusher = self
            .pusher
            .get_or_build("pusher", self.sdk.as_ref(), |sdk| {
                bouquet_realtime::ApiGatewayPusher::from_env(sdk)
                    .map(|p| Arc::new(p) as Arc<dyn Pusher>)
            })
            .await?;
        Ok(pusher.as_ref())
    }

    pub fn with_pusher(mut self, pusher: Arc<dyn Pusher>) -> Self {
        self.pusher = Port::given(pusher);
        self
    }

    /// The upload bucket's private photos (`PHOTO_UPLOAD_BUCKET`), which redaction and erasure
    /// remove; in a function that does not link S3 (feature `private-photos`), an error.
    pub async fn private_photos(&self) -> Result<&dyn bouquet_photos::PrivatePhotos, PortError> {
        let photos = self
            .private_photos
            .get_or_build("private photos", self.sdk.as_ref(), private_photos)
            .await?;
        Ok(photos.as_ref())
    }

    pub fn with_private_photos(mut self, photos: Arc<dyn bouquet_photos::PrivatePhotos>) -> Self {
        self.private_photos = Port::given(photos);
        self
    }
}

#[cfg(feature = "private-photos")]
fn private_photos(
    sdk: &bouquet_aws::SdkConfig,
) -> Result<Arc<dyn bouquet_photos::PrivatePhotos>, String> {
    let bucket =
        std::env::var("PHOTO_UPLOAD_BUCKET").map_err(|_| "PHOTO_UPLOAD_BUCKET is not set")?;
    // Only the upload bucket is used: the storefront's sizes are not personal data.
    Ok(Arc::new(bouquet_photos::s3::S3Objects::new(
        sdk,
        bucket,
        String::new(),
    )))
}

#[cfg(not(feature = "private-photos"))]
fn private_photos(
    _: &bouquet_aws::SdkConfig,
) -> Result<Arc<dyn bouquet_photos::PrivatePhotos>, String> {
    Err("this function does not link S3 (the app's feature private-photos)".into())
}

/// What the broadcaster and its workers push through: API Gateway's `@connections` and the
/// fan-out queue.
pub struct LivePorts {
    pub pusher: Arc<dyn Pusher>,
    pub queue: Arc<dyn WorkQueue>,
}

#[cfg(feature = "fanout")]
#[derive(Debug, thiserror::Error)]
pub enum LivePortsError {
    #[error(transparent)]
    Endpoint(#[from] bouquet_realtime::EndpointNotSet),
    #[error(transparent)]
    Queue(#[from] bouquet_realtime::WorkQueueNotSet),
}

#[cfg(feature = "fanout")]
impl LivePorts {
    /// `WEBSOCKET_MANAGEMENT_URL`, `FANOUT_QUEUE_URL` and `FANOUT_DEAD_LETTER_QUEUE_URL` from
    /// the template's environment.
    pub fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, LivePortsError> {
        Ok(Self {
            pusher: Arc::new(bouquet_realtime::ApiGatewayPusher::from_env(sdk)?),
            queue: Arc::new(bouquet_realtime::SqsWorkQueue::from_env(sdk)?),
        })
    }
}

#[cfg(feature = "cognito")]
fn user_pool(
    sdk: &bouquet_aws::SdkConfig,
) -> Result<Option<Arc<dyn bouquet_directory::UserDirectory>>, std::convert::Infallible> {
    Ok(std::env::var("USER_POOL_ID")
        .ok()
        .filter(|id| !id.is_empty())
        .map(|id| {
            Arc::new(bouquet_directory::cognito::CognitoDirectory::lazy(sdk, id))
                as Arc<dyn bouquet_directory::UserDirectory>
        }))
}

#[cfg(not(feature = "cognito"))]
fn user_pool(
    _: &bouquet_aws::SdkConfig,
) -> Result<Option<Arc<dyn bouquet_directory::UserDirectory>>, std::convert::Infallible> {
    Ok(None)
}

/// Stripe's webhook signing secret (`whsec_...`): `STRIPE_WEBHOOK_SECRET` when set (the dev
/// stack's), else the SSM SecureString named by `STRIPE_WEBHOOK_SECRET_PARAMETER`, read at
/// the first webhook and kept for the container (read at init, it would cost every cold start
/// an SSM round trip). A failed read fails that webhook and is tried again by the next.
#[cfg(feature = "stripe")]
pub(crate) struct WebhookSecret {
    secret: OnceCell<String>,
    parameter: Option<(bouquet_aws::SdkConfig, String)>,
}

#[cfg(feature = "stripe")]
impl WebhookSecret {
    fn given(secret: String) -> Self {
        Self {
            secret: OnceCell::new_with(Some(secret)),
            parameter: None,
        }
    }

    fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, String> {
        Self::from_env_named(sdk, "STRIPE_WEBHOOK_SECRET")
    }

    /// `{variable}` when set (the dev stack's), else the SSM parameter `{variable}_PARAMETER`
    /// names.
    fn from_env_named(sdk: &bouquet_aws::SdkConfig, variable: &str) -> Result<Self, String> {
        if let Ok(secret) = std::env::var(variable) {
            return Ok(Self::given(secret));
        }
        let name = std::env::var(format!("{variable}_PARAMETER"))
            .map_err(|_| format!("{variable}_PARAMETER is not set"))?;
        Ok(Self {
            secret: OnceCell::new(),
            parameter: Some((sdk.clone(), name)),
        })
    }

    async fn get(&self) -> Result<&str, PortError> {
        self.secret
            .get_or_try_init(|| async {
                let (sdk, name) = self
                    .parameter
                    .as_ref()
                    .ok_or_else(|| PortError::new("webhook secret", "not configured"))?;
                bouquet_payments::stripe::read_secret_parameter(sdk, name)
                    .await
                    .map_err(|e| PortError::new("webhook secret", e))
            })
            .await
            .map(String::as_str)
    }
}

/// A port that could not be built (a setting missing): the function's own fault, 500.
impl From<PortError> for ApiError {
    fn from(error: PortError) -> Self {
        ApiError::internal(error)
    }
}
