//! The dev stack's errors, typed until they are printed.

use bouquet_template::TemplateError;

use crate::provision::ProvisionError;
use crate::runtime_api::InvokeError;

#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Provision(#[from] ProvisionError),
    #[error(transparent)]
    Invoke(#[from] InvokeError),
    #[error("token: {0}")]
    Token(#[from] jsonwebtoken::errors::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] bouquet_app::store::StoreError),
    #[error(transparent)]
    Config(#[from] bouquet_app::ConfigError),
    #[error("MQTT client: {0}")]
    Mqtt(#[from] rumqttc::ClientError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A call to the emulator failed; the source is the SDK's error.
    #[error("{}", bouquet_app::store::describe(.0.as_ref()))]
    Aws(Box<dyn std::error::Error + Send + Sync>),
    /// The template asks for something the dev stack cannot provide.
    #[error("not supported locally: {0}")]
    Unsupported(String),
    /// The running system answered other than expected (seeding, benchmarks).
    #[error("{0}")]
    Unexpected(String),
}

/// For `map_err` on AWS SDK calls.
pub fn aws(error: impl std::error::Error + Send + Sync + 'static) -> DevError {
    DevError::Aws(Box::new(error))
}

impl From<&str> for DevError {
    fn from(message: &str) -> Self {
        DevError::Unexpected(message.to_owned())
    }
}
