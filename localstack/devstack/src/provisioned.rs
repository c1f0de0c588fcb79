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
