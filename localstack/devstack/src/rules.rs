//! EventBridge rule → function, for the template's `EventBridgeRule` events. The emulator's
//! EventBridge matches rules and delivers to SQS but cannot invoke a function, so each such
//! event gets a rule on the local bus with the template's pattern, targeting a hidden queue
//! of its own that the dev stack polls, invoking the function with each event as EventBridge
//! would. A failed invocation leaves the event on the queue: it comes back after the queue's
//! visibility timeout, and after `RetryPolicy.MaximumRetryAttempts` more tries the queue's
//! redrive moves it to a dead-letter queue (as the template's `DeadLetterConfig` does).

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::Value;

use bouquet_template::Template;

use crate::error::{aws, DevError};
use crate::lambda::{Invoke, Resolver};
use crate::provision::{local_name, resolve, Names};

/// How soon a failed delivery is retried locally (EventBridge backs off; locally a few
/// seconds keep the loop short).
const RETRY_AFTER_SECONDS: &str = "5";

pub struct RuleTarget {
    pub function: String,
    pub queue_url: String,
    pub dead_letter_queue_url: String,
    invoke: Invoke,
    sqs: aws_sdk_sqs::Client,
}

/// Counts of one poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RulePoll {
    pub delivered: usize,
    pub failed: usize,
}

impl RuleTarget {
    /// Creates the rule, its hidden queue (with a dead-letter queue) and the target.
    #[allow(clippy::too_many_arguments)]
    pub async fn create(
        template: &Template,
        names: &Names,
        stack: &str,
        logical_id: &str,
        binary: &str,
        event: &Value,
        invoke: Invoke,
        sdk: &aws_config::SdkConfig,
    ) -> Result<Self, DevError> {
        let p = &event["Properties"];
        let bus = resolve(template, &p["EventBusName"], names);
        let sqs = aws_sdk_sqs::Client::new(sdk);
        let events = aws_sdk_eventbridge::Client::new(sdk);
        let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into());
        let name = local_name(stack, &format!("{logical_id}-rule"));
        let dead_letter_queue_url = sqs
            .create_queue()
            .queue_name(format!("{name}-dlq"))
            .send()
            .await
            .map_err(aws)?
            .queue_url
            .unwrap_or_default();
        let retries = p["RetryPolicy"]["MaximumRetryAttempts"]
            .as_i64()
            .unwrap_or(185);
        let redrive = serde_json::json!({
            "deadLetterTargetArn": format!("arn:aws:sqs:{region}:123456789012:{name}-dlq"),
            "maxReceiveCount": (retries + 1).clamp(1, 1000).to_string(),
        });
        let queue_url = sqs
            .create_queue()
            .queue_name(&name)
            .attributes(QueueAttributeName::VisibilityTimeout, RETRY_AFTER_SECONDS)
            .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
            .send()
            .await
            .map_err(aws)?
            .queue_url
            .unwrap_or_default();
        events
            .put_rule()
            .name(&name)
            .event_bus_name(&bus)
            .event_pattern(p["Pattern"].to_string())
            .send()
            .await
            .map_err(aws)?;
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id(binary)
            .arn(format!("arn:aws:sqs:{region}:123456789012:{name}"))
            .build()
            .map_err(aws)?;
        events
            .put_targets()
            .rule(&name)
            .event_bus_name(&bus)
            .targets(target)
            .send()
            .await
            .map_err(aws)?;
        Ok(Self {
            function: binary.to_owned(),
            queue_url,
            dead_letter_queue_url,
            invoke,
            sqs,
        })
    }

    /// Delivers what the rule has queued (waiting up to `wait_seconds` for the first event).
    pub async fn poll(&self, wait_seconds: i32) -> Result<RulePoll, DevError> {
        let messages = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_seconds)
            .send()
            .await
            .map_err(aws)?
            .messages
            .unwrap_or_default();
        let mut report = RulePoll::default();
        for message in messages {
            let event: Value = match serde_json::from_str(message.body().unwrap_or_default()) {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(function = %self.function, %error, "not an EventBridge event; left for the dead-letter queue");
                    report.failed += 1;
                    continue;
                }
            };
            match (self.invoke)(event).await {
                Ok(_) => {
                    report.delivered += 1;
                    if let Some(handle) = message.receipt_handle() {
                        self.sqs
                            .delete_message()
                            .queue_url(&self.queue_url)
                            .receipt_handle(handle)
                            .send()
                            .await
                            .map_err(aws)?;
                    }
                }
                Err(error) => {
                    report.failed += 1;
                    tracing::warn!(function = %self.function, %error, "EventBridge target failed; it will be retried");
                }
            }
        }
        Ok(report)
    }
}

/// Creates every `EventBridgeRule` event's rule and target and starts delivering.
pub async fn start_all(
    template: &Template,
    names: &Names,
    stack: &str,
    functions: &dyn Resolver,
    sdk: &aws_config::SdkConfig,
) -> Result<Vec<String>, DevError> {
    let mut started = Vec::new();
    for (function, event) in template
        .events_of_type("EventBridgeRule")
        .map_err(DevError::from)?
    {
        let target = RuleTarget::create(
            template,
            names,
            stack,
            &function.logical_id,
            &function.binary,
            &event,
            functions.require(&function.binary)?,
            sdk,
        )
        .await?;
        started.push(format!(
            "{} <- rule on {}",
            function.binary,
            resolve(template, &event["Properties"]["EventBusName"], names)
        ));
        tokio::spawn(async move {
            loop {
                match target.poll(1).await {
                    Ok(report) if report.delivered + report.failed > 0 => {
                        tracing::info!(function = %target.function, ?report, "EventBridge deliveries")
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(function = %target.function, %error, "rule target poll failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
    }
    Ok(started)
}
