//! The user directory (the Cognito user pool deployed): who has an account, which shop a user
//! belongs to and which groups grant roles. The marketplace never stores passwords or emails of
//! its own; this seam is all the app sees of the pool.

#[cfg(feature = "cognito")]
pub mod cognito;
mod memory;

pub use memory::MemoryDirectory;

/// The custom attribute holding a member's shop (`custom:vendorId` in tokens).
pub const VENDOR_ATTRIBUTE: &str = "custom:vendorId";

/// A user of the directory, as far as memberships care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectoryUser {
    /// What the directory calls the user (the pool's username).
    pub username: String,
    /// The stable id tokens carry as `sub`.
    pub user_id: String,
    pub email: String,
    /// `custom:vendorId`, if set.
    pub vendor_id: Option<String>,
    /// Whether the user proved they read this email (`email_verified`) and finished signing
    /// up: only then may an email name them (an unconfirmed account, or one whose email was
    /// changed without a code, could be someone else's).
    pub verified: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// A user with this email already exists (an invitation raced another one).
    #[error("a user with this email already exists")]
    AlreadyExists,
    #[error("the directory is throttling; retry shortly")]
    Throttled,
    /// The directory said no (the SDK's error, with its code, as the source).
    #[error("the directory refused")]
    Refused(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No answer, or none that can be read.
    #[error("the directory failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

#[async_trait::async_trait]
pub trait UserDirectory: Send + Sync {
    /// The user whose email (and sign-in name) is `email`.
    async fn find(&self, email: &str) -> Result<Option<DirectoryUser>, DirectoryError>;
    /// Creates the user with a verified `email` and `vendor_id`, and sends an invitation
    /// with a temporary password.
    async fn invite(&self, email: &str, vendor_id: &str) -> Result<DirectoryUser, DirectoryError>;
    /// Sets the user's shop.
    async fn set_vendor(&self, username: &str, vendor_id: &str) -> Result<(), DirectoryError>;
    /// Adds the user to `group` (a no-op when already a member).
    async fn add_to_group(&self, username: &str, group: &str) -> Result<(), DirectoryError>;
}
