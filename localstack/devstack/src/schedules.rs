//! The template's `Schedule` events, locally: each scheduled function is invoked on its
//! rate (divided by a speed-up factor, for demos and tests) with an EventBridge
//! "Scheduled Event" as its payload.

use std::time::Duration;

use serde_json::json;

use bouquet_template::Template;

use crate::lambda::Resolver;

use crate::error::DevError;

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

/// Starts one task per schedule; returns what it scheduled.
pub fn start(
    template: &Template,
    functions: &dyn Resolver,
    speedup: u32,
) -> Result<Vec<(String, Duration)>, DevError> {
    let mut started = Vec::new();
    for (binary, expression) in template.schedules().map_err(DevError::from)? {
        let every = parse_rate(&expression).ok_or_else(|| {
            DevError::Unsupported(format!(
                "{binary}: schedule {expression:?} (rate(...) only)"
            ))
        })? / speedup.max(1);
        let invoke = functions.require(&binary)?;
        let name = binary.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let event = json!({
                    "version": "0", "id": ulid::Ulid::new().to_string(), "detail-type": "Scheduled Event", "source": "aws.events",
                    "account": "123456789012", "time": time::OffsetDateTime::now_utc().unix_timestamp(), "region": "local",
                    "resources": [format!("arn:aws:events:local:123456789012:rule/{name}")], "detail": {},
                });
                match invoke(event).await {
                    Ok(report) => tracing::info!(function = %name, %report, "scheduled run"),
                    Err(error) => tracing::error!(function = %name, %error, "scheduled run failed"),
                }
            }
        });
        started.push((binary, every));
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
