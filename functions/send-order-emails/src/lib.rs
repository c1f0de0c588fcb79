//! The order emails, an EventBridge target of `OrderPaid`, `OrderAccepted`,
//! `OrderOutForDelivery`, `OrderFulfilled` and `OrderRejected` (the rule is in the template):
//! a thin function over [`bouquet_app::notifications::notify`] with SES as the mailer. A
//! refused message fails the invocation: Lambda retries it, then sends the event whole to the
//! failure destination.

use std::sync::Arc;

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use tracing::Instrument;

use bouquet_app::notifications;
use bouquet_app::App;
use bouquet_mail::ses::SesMailer;
use bouquet_mail::Mailer;

pub struct SendOrderEmails {
    pub app: App,
    pub mailer: Arc<dyn Mailer>,
    /// The marketplace's name in every message (`MARKETPLACE_NAME`).
    pub marketplace: String,
}

impl SendOrderEmails {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_app::aws_sdk_config()?;
        let app = App::from_sdk(&sdk).await?;
        let sender = std::env::var("EMAIL_SENDER").map_err(|_| "EMAIL_SENDER is not set")?;
        let configuration_set = std::env::var("EMAIL_CONFIGURATION_SET").ok();
        Ok(Self {
            app,
            mailer: Arc::new(SesMailer::new(&sdk, sender, configuration_set)),
            marketplace: std::env::var("MARKETPLACE_NAME").unwrap_or_else(|_| "Bouquet".into()),
        })
    }

    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, Error> {
        let span = bouquet_app::event_span(&event.payload);
        async {
            let notified = notifications::notify(
                &self.app,
                self.mailer.as_ref(),
                &self.marketplace,
                &event.payload,
            )
            .await?;
            tracing::info!(
                sent = notified.sent,
                duplicates = notified.duplicates,
                no_address = notified.no_address,
                "order emails"
            );
            Ok(json!(notified))
        }
        .instrument(span)
        .await
    }
}
