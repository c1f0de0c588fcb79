//! What provisioning leaves behind for the rest of the dev stack: the names it gave the
//! template's resources, and its error. A module of its own so that the provisioning steps
//! (tables and queues in `provision`, the user pool in `cognito`) share it without depending
//! on each other.

/// Local names and attributes of provisioned resources, as `!Ref` / `!GetAtt` resolve them:
/// `Logical` (Ref), `Logical.Attr` (GetAtt).
pub type Names = std::collections::HashMap<String, String>;

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("template.yaml has no {0}")]
    Missing(String),
    #[error("template.yaml: {0}")]
    Shape(String),
    #[error("{}", bouquet_app::store::describe(.0.as_ref()))]
    Aws(Box<dyn std::error::Error + Send + Sync>),
}

pub(crate) fn aws(error: impl std::error::Error + Send + Sync + 'static) -> ProvisionError {
    ProvisionError::Aws(Box::new(error))
}

/// The outcome of a create call, where a resource that `exists` says is already there counts
/// as made: provisioning runs again on every start.
pub(crate) fn made_or_exists<T, E, R>(
    sent: Result<T, aws_smithy_runtime_api::client::result::SdkError<E, R>>,
    exists: impl FnOnce(&E) -> bool,
) -> Result<(), ProvisionError>
where
    aws_smithy_runtime_api::client::result::SdkError<E, R>:
        std::error::Error + Send + Sync + 'static,
{
    match sent {
        Ok(_) => Ok(()),
        Err(error) if error.as_service_error().is_some_and(exists) => Ok(()),
        Err(error) => Err(aws(error)),
    }
}
