//! The template's `Schedule` events, locally: each scheduled function is invoked on its
//! rate (divided by a speed-up factor, for demos and tests) with an EventBridge
//! "Scheduled Event" as its payload, asynchronously: a run that keeps failing ends in the
//! function's failure destination ([`crate::async_invoke`]).

use std::time::Duration;

use serde_json::json;

use bouquet_template::Template;

use crate::async_invoke::FailureDestination;
use crate::error::DevError;
use crate::lambda::{Invoke, Resolver};
use crate::provision::Names;

/// `rate(1 minute)`, `rate(5 minutes)`, `rate(2 hours)`, `rate(30 seconds)`.
pub fn parse_rate(expression: &str) -> Option<Duration> {
    let inner = expression.trim().strip_prefix("rate(")?.strip_suffix(')')?;
    let (value, unit) = inner.trim().split_once(' ')?;
    let value: u64 = value.parse().ok()?;
    let seconds = match unit.trim_end_matches('s') {
        "second" => 1,
        "minute" => 60,
        "hour" => 3600,
        "day" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(value * seconds))
}

/// One schedule: what it invokes, how often, and where a run that keeps failing goes.
pub struct Schedule {
    pub function: String,
    pub every: Duration,
    pub on_failure: FailureDestination,
    invoke: Invoke,
    sqs: aws_sdk_sqs::Client,
}

/// What one run came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Run {
    Succeeded {
        attempts: i64,
    },
    /// Every attempt failed; `sent_to_on_failure` when the destination got the record.
    Failed {
        attempts: i64,
        sent_to_on_failure: bool,
    },
}

impl Schedule {
    /// The template's schedules, at `speedup` times their rate.
    pub fn from_template(
        template: &Template,
        names: &Names,
        functions: &dyn Resolver,
        speedup: u32,
        sdk: &aws_config::SdkConfig,
    ) -> Result<Vec<Self>, DevError> {
        let mut schedules = Vec::new();
        for (function, expression) in template.schedules().map_err(DevError::from)? {
            let every = parse_rate(&expression).ok_or_else(|| {
                DevError::Unsupported(format!(
                    "{}: schedule {expression:?} (rate(...) only)",
                    function.binary
                ))
            })? / speedup.max(1);
            schedules.push(Self {
                invoke: functions.require(&function.binary)?,
                on_failure: FailureDestination::of(template, &function.logical_id, names),
                function: function.binary,
                every,
                sqs: aws_sdk_sqs::Client::new(sdk),
            });
        }
        Ok(schedules)
    }

    /// One scheduled run, invoked asynchronously as EventBridge Scheduler does: retried
    /// (after `every`, where Lambda waits a minute or two) until the attempts run out, then
    /// the invocation record goes to the failure destination.
    pub async fn run(&self) -> Result<Run, DevError> {
        let event = json!({
            "version": "0", "id": ulid::Ulid::new().to_string(), "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "123456789012", "time": time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default(), "region": "local",
            "resources": [format!("arn:aws:events:local:123456789012:rule/{}", self.function)], "detail": {},
        });
        let mut attempt = 1;
        loop {
            match crate::lambda::invoke_attempt(&self.invoke, event.clone()).await {
                Ok(report) => {
                    tracing::info!(function = %self.function, %report, "scheduled run");
                    return Ok(Run::Succeeded { attempts: attempt });
                }
                Err(error) if attempt >= self.on_failure.max_attempts => {
                    tracing::error!(function = %self.function, %error, attempt, "scheduled run failed for the last time");
                    let sent_to_on_failure = self
                        .on_failure
                        .send(&self.sqs, &self.function, &event, &error, attempt)
                        .await?;
                    return Ok(Run::Failed {
                        attempts: attempt,
                        sent_to_on_failure,
                    });
                }
                Err(error) => {
                    tracing::warn!(function = %self.function, %error, attempt, "scheduled run failed; Lambda retries it");
                    tokio::time::sleep(self.every).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// Starts one task per schedule; returns what it scheduled.
pub fn start(
    template: &Template,
    names: &Names,
    functions: &dyn Resolver,
    speedup: u32,
    sdk: &aws_config::SdkConfig,
) -> Result<Vec<(String, Duration)>, DevError> {
    let mut started = Vec::new();
    for schedule in Schedule::from_template(template, names, functions, speedup, sdk)? {
        started.push((schedule.function.clone(), schedule.every));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(schedule.every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if let Err(error) = schedule.run().await {
                    tracing::error!(function = %schedule.function, %error, "scheduled run could not reach its failure destination");
                }
            }
        });
    }
    Ok(started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rates() {
        assert_eq!(parse_rate("rate(1 minute)"), Some(Duration::from_secs(60)));
        assert_eq!(
            parse_rate("rate(5 minutes)"),
            Some(Duration::from_secs(300))
        );
        assert_eq!(parse_rate("rate(2 hours)"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_rate("cron(0 12 * * ? *)"), None);
    }
}
