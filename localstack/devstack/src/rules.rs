//! EventBridge rule → function, for the template's `EventBridgeRule` events. The emulator's
//! EventBridge matches rules and delivers to SQS but cannot invoke a function, so each such
//! event gets a rule on the local bus with the template's pattern, targeting a hidden queue
//! of its own that the dev stack polls, invoking the function with each event as EventBridge
//! would. EventBridge invokes a function asynchronously, so a function error is Lambda's to
//! retry: the event comes back after `retry_after` (Lambda waits 1 then 2 minutes) until
//! [`FailureDestination`] says the attempts ran out and where the event goes. The hidden queue's own
//! dead-letter queue stands for the rule's `DeadLetterConfig`: deliveries that never reach
//! the function.

use std::time::Duration;

use futures::StreamExt;

use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use serde_json::Value;

use bouquet_template::Template;

use crate::async_invoke::FailureDestination;
use crate::error::{aws, DevError};
use crate::lambda::{Invoke, Resolver};
use crate::provision::{local_name, resolve, Names};

/// How many of a poll's events are invoked at once (a receive gives at most 10).
const AT_ONCE: usize = 10;

/// How soon a failed delivery is retried locally (EventBridge backs off; locally a few
/// seconds keep the loop short).
const RETRY_AFTER_SECONDS: &str = "5";

pub struct RuleTarget {
    pub function: String,
    pub queue_url: String,
    pub dead_letter_queue_url: String,
    /// The function's asynchronous-invoke retries and failure destination.
    pub on_failure: FailureDestination,
    /// How soon a failed invocation is tried again.
    pub retry_after: Duration,
    invoke: Invoke,
    sqs: aws_sdk_sqs::Client,
}

/// Counts of one poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RulePoll {
    pub delivered: usize,
    pub failed: usize,
    /// Events whose attempts ran out, sent to the on-failure destination.
    pub sent_to_on_failure: usize,
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
        let on_failure = FailureDestination::of(template, logical_id, names);
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
            on_failure,
            retry_after: Duration::from_secs(5),
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
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(aws)?
            .messages
            .unwrap_or_default();
        // Lambda's asynchronous invocation runs queued events side by side, as many as the
        // function's concurrency allows (the invoke throttles past it), in no order.
        let outcomes: Vec<Result<RulePoll, DevError>> = futures::stream::iter(messages)
            .map(|message| self.deliver(message))
            .buffer_unordered(AT_ONCE)
            .collect()
            .await;
        let mut report = RulePoll::default();
        for outcome in outcomes {
            let one = outcome?;
            report.delivered += one.delivered;
            report.failed += one.failed;
            report.sent_to_on_failure += one.sent_to_on_failure;
        }
        Ok(report)
    }

    /// Invokes the function with one queued event, then deletes it, returns it for a retry,
    /// or, its attempts spent, sends it to the failure destination.
    async fn deliver(&self, message: aws_sdk_sqs::types::Message) -> Result<RulePoll, DevError> {
        let mut report = RulePoll::default();
        let event: Value = match serde_json::from_str(message.body().unwrap_or_default()) {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(function = %self.function, %error, "not an EventBridge event; left for the dead-letter queue");
                report.failed += 1;
                return Ok(report);
            }
        };
        let attempt: i64 = message
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let Some(handle) = message.receipt_handle() else {
            return Ok(report);
        };
        match crate::lambda::invoke_attempt(&self.invoke, event.clone()).await {
            Ok(_) => {
                report.delivered += 1;
                self.delete(handle).await?;
            }
            Err(error) if attempt >= self.on_failure.max_attempts => {
                report.failed += 1;
                tracing::warn!(function = %self.function, %error, attempt, "asynchronous invocation failed for the last time");
                if self
                    .on_failure
                    .send(&self.sqs, &self.function, &event, &error, attempt)
                    .await?
                {
                    report.sent_to_on_failure += 1;
                }
                self.delete(handle).await?;
            }
            Err(error) => {
                report.failed += 1;
                tracing::warn!(function = %self.function, %error, attempt, "asynchronous invocation failed; Lambda retries it");
                self.sqs
                    .change_message_visibility()
                    .queue_url(&self.queue_url)
                    .receipt_handle(handle)
                    .visibility_timeout(self.retry_after.as_secs() as i32)
                    .send()
                    .await
                    .map_err(aws)?;
            }
        }
        Ok(report)
    }
}

impl RuleTarget {
    async fn delete(&self, handle: &str) -> Result<(), DevError> {
        self.sqs
            .delete_message()
            .queue_url(&self.queue_url)
            .receipt_handle(handle)
            .send()
            .await
            .map_err(aws)?;
        Ok(())
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
