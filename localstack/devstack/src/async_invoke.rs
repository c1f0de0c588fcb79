//! Lambda's asynchronous invocation, as AWS documents it for EventBridge rules and schedules:
//! a function error is retried (`EventInvokeConfig.MaximumRetryAttempts`, default 2), and
//! when the attempts run out the invocation record, with the whole event as
//! `requestPayload`, goes to the function's `OnFailure` destination. Without a destination
//! Lambda discards the event, and so does this.

use serde_json::Value;

use bouquet_template::Template;

use crate::error::{aws, DevError};
use crate::lambda::InvokeError;
use crate::provision::{resolve, Names};

/// A function's `EventInvokeConfig`, resolved to local names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureDestination {
    /// Attempts before the event goes to `queue_url` (1 + retries).
    pub max_attempts: i64,
    /// The `OnFailure` destination's queue URL, if the function has one.
    pub queue_url: Option<String>,
}

impl FailureDestination {
    /// Reads the `EventInvokeConfig` of the function `logical_id`.
    pub fn of(template: &Template, logical_id: &str, names: &Names) -> Self {
        let config = template
            .resource(logical_id)
            .map(|f| f["Properties"]["EventInvokeConfig"].clone())
            .unwrap_or_default();
        let queue_url = match &config["DestinationConfig"]["OnFailure"]["Destination"] {
            Value::Null => None,
            destination => {
                crate::provision::queue_url_of_arn(names, &resolve(template, destination, names))
            }
        };
        Self {
            max_attempts: 1 + config["MaximumRetryAttempts"].as_i64().unwrap_or(2),
            queue_url,
        }
    }

    /// After the last attempt failed: sends the invocation record to the destination.
    /// Returns whether there was one.
    pub async fn send(
        &self,
        sqs: &aws_sdk_sqs::Client,
        function: &str,
        event: &Value,
        error: &InvokeError,
        attempts: i64,
    ) -> Result<bool, DevError> {
        let Some(queue) = &self.queue_url else {
            tracing::warn!(%function, %error, "asynchronous invocation failed for the last time and the function has no OnFailure destination: the event is discarded, as on AWS");
            return Ok(false);
        };
        let record = invocation_record(function, event, error, attempts);
        sqs.send_message()
            .queue_url(queue)
            .message_body(record.to_string())
            .send()
            .await
            .map_err(aws)?;
        Ok(true)
    }
}

/// The record Lambda sends to an asynchronous invocation's failure destination.
fn invocation_record(function: &str, event: &Value, error: &InvokeError, attempts: i64) -> Value {
    serde_json::json!({
        "version": "1.0",
        "timestamp": time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        "requestContext": {
            "requestId": ulid::Ulid::new().to_string(),
            "functionArn": format!("arn:aws:lambda:local:123456789012:function:{function}:$LATEST"),
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": { "statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled" },
        "responsePayload": { "errorType": "Error", "errorMessage": bouquet_app::store::describe(&error) },
    })
}
