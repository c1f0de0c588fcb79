//! Order emails (issue 30). The app renders a template into an [`Email`] and hands it to a
//! [`Mailer`]: Amazon SES in a deployed stack and in the dev stack (the emulator's SES), a
//! [`MemoryMailer`] in tests that need one to refuse.

use std::sync::Mutex;

pub mod documents;
#[cfg(feature = "ses")]
pub mod ses;
mod templates;

pub use templates::{render, RenderError, Template, Vars};

/// One message to one recipient, in both forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The provider refused this message (its address, its sender): trying again fails alike.
    #[error("the message was refused: {0}")]
    Rejected(String),
    /// No answer, throttled, or the provider failed: a later try may succeed.
    #[error("the mail provider failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

#[async_trait::async_trait]
pub trait Mailer: Send + Sync {
    async fn send(&self, email: &Email) -> Result<(), MailError>;
}

/// Keeps what it was given; refuses the addresses it is told to (a bounce, in tests).
#[derive(Default)]
pub struct MemoryMailer {
    sent: Mutex<Vec<Email>>,
    refused: Vec<String>,
}

impl MemoryMailer {
    pub fn refusing(addresses: &[&str]) -> Self {
        Self {
            sent: Mutex::default(),
            refused: addresses.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    pub fn sent(&self) -> Vec<Email> {
        self.sent.lock().expect("not poisoned").clone()
    }
}

#[async_trait::async_trait]
impl Mailer for MemoryMailer {
    async fn send(&self, email: &Email) -> Result<(), MailError> {
        if self.refused.contains(&email.to) {
            return Err(MailError::Rejected(format!("{} bounced", email.to)));
        }
        self.sent.lock().expect("not poisoned").push(email.clone());
        Ok(())
    }
}
