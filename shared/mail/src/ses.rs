//! Amazon SES (API v2) as the [`Mailer`]: one `SendEmail` per message, from the stack's
//! sender identity, in its configuration set (bounces and complaints are SES's to track).

use aws_sdk_sesv2::types::{Body, Content, Destination, EmailContent, Message};
use aws_sdk_sesv2::Client;

use crate::{Email, MailError, Mailer};

pub struct SesMailer {
    client: Client,
    from: String,
    configuration_set: Option<String>,
}

impl SesMailer {
    pub fn new(
        sdk: &bouquet_aws::SdkConfig,
        from: String,
        configuration_set: Option<String>,
    ) -> Self {
        Self::with_client(Client::new(sdk), from, configuration_set)
    }

    /// Over a client configured elsewhere (a test's, with its interceptors).
    pub fn with_client(client: Client, from: String, configuration_set: Option<String>) -> Self {
        Self {
            client,
            from,
            configuration_set: configuration_set.filter(|c| !c.is_empty()),
        }
    }
}

fn content(text: &str) -> Result<Content, MailError> {
    Content::builder()
        .data(text)
        .charset("UTF-8")
        .build()
        .map_err(|e| MailError::Rejected(e.to_string()))
}

#[async_trait::async_trait]
impl Mailer for SesMailer {
    async fn send(&self, email: &Email) -> Result<(), MailError> {
        let message = Message::builder()
            .subject(content(&email.subject)?)
            .body(
                Body::builder()
                    .text(content(&email.text)?)
                    .html(content(&email.html)?)
                    .build(),
            )
            .build();
        let result = self
            .client
            .send_email()
            .from_email_address(&self.from)
            .destination(Destination::builder().to_addresses(&email.to).build())
            .content(EmailContent::builder().simple(message).build())
            .set_configuration_set_name(self.configuration_set.clone())
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) => {
                let refused = error.as_service_error().is_some_and(|e| {
                    e.is_message_rejected()
                        || e.is_bad_request_exception()
                        || e.is_account_suspended_exception()
                        || e.is_sending_paused_exception()
                        || e.is_mail_from_domain_not_verified_exception()
                });
                if refused {
                    Err(MailError::Rejected(bouquet_aws::describe(&error)))
                } else {
                    Err(MailError::Unavailable(Box::new(error)))
                }
            }
        }
    }
}
