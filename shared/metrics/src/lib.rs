//! Business metrics as CloudWatch Embedded Metric Format (EMF).
//!
//! The use cases count with the `metrics` facade through the helpers below (one name and one
//! `Outcome` dimension per business fact, so the dashboard and the code agree); a function
//! running under a Lambda Runtime API installs `metrics_cloudwatch_embedded`'s collector once
//! per container and flushes it after every invocation: one JSON line on stdout per outcome,
//! which CloudWatch turns into metrics. Elsewhere (unit and system tests) the facade is a no-op.

use std::sync::OnceLock;

use metrics_cloudwatch_embedded::{Builder, Collector};

/// The CloudWatch namespace of every business metric (the template's dashboard reads it).
pub const NAMESPACE: &str = "BouquetMarketplace";

/// The dimension that keeps one stage's metrics apart from another's in one account (the
/// template's `STAGE`).
pub const STAGE: &str = "Stage";
/// The dimension every business metric is split by.
pub const OUTCOME: &str = "Outcome";

/// A reservation attempt: `won` (the bouquets are held) or `lost` (someone else holds one).
pub const RESERVATIONS: &str = "Reservations";
/// A payment attempt's result: `paid`, `declined`, `authentication_required`, `interrupted`
/// (no definite answer from the gateway), `refunded` (paid after its hold was lost).
pub const PAYMENTS: &str = "Payments";
/// An outbox event: `published` to EventBridge, `parked` on the dead-letter queue, `failed`
/// (left for the stream to retry), `redriven` (republished from the dead-letter queue).
pub const EVENTS: &str = "Events";
/// A vase message: `applied`, `rejected` (dead-lettered), `retried`.
pub const VASE_MESSAGES: &str = "VaseMessages";
/// A WebSocket push: `sent`, `gone` (the connection was closed and is removed), `failed`
/// (parked), `coalesced` (dropped for a newer frame of its key).
pub const PUSHES: &str = "Pushes";
/// A WebSocket connect: `admitted`, `refused` (its IP or user at the cap).
pub const LIVE_CONNECTIONS: &str = "LiveConnections";

/// A payment provider's webhook event: `acted` on, `ignored` (not one the marketplace acts on),
/// `wrong_endpoint` (a connected account's event signed by the platform's endpoint or the
/// reverse), `other_mode` (a test-mode event at a live deployment, or the reverse).
pub const WEBHOOK_EVENTS: &str = "WebhookEvents";

/// Counts `n` of `metric` with `outcome`.
pub fn count(metric: &'static str, outcome: &'static str, n: u64) {
    if n > 0 {
        metrics::counter!(metric, OUTCOME => outcome).increment(n);
    }
}

static COLLECTOR: OnceLock<Option<&'static Collector>> = OnceLock::new();

/// The collector, installed at the first call when the process runs under a Lambda Runtime API
/// (`AWS_LAMBDA_RUNTIME_API`, on AWS and in the local cloud).
fn collector() -> Option<&'static Collector> {
    *COLLECTOR.get_or_init(|| {
        std::env::var_os("AWS_LAMBDA_RUNTIME_API")?;
        let builder = Builder::new();
        install(match std::env::var("STAGE") {
            Ok(stage) if !stage.is_empty() => builder.with_dimension(STAGE, stage),
            _ => builder,
        })
    })
}

fn install(builder: Builder) -> Option<&'static Collector> {
    match builder.cloudwatch_namespace(NAMESPACE).init() {
        Ok(collector) => Some(collector),
        Err(error) => {
            tracing::error!(%error, "the metrics collector could not be installed");
            None
        }
    }
}

/// Called before an invocation's work, so that what it counts is recorded.
pub fn start() {
    collector();
}

/// Writes what the invocation counted to stdout as EMF, with its correlation id as a property
/// (so a metric's log line leads to the request's other lines), and resets the counts.
pub fn flush(correlation_id: &str) {
    if let Some(collector) = collector() {
        flush_into(collector, correlation_id, std::io::stdout().lock());
    }
}

/// Runs one invocation of an event-driven function and flushes what it counted, under the
/// invocation's request id.
pub async fn flushed<T>(request_id: String, invocation: impl std::future::Future<Output = T>) -> T {
    start();
    let output = invocation.await;
    flush(&request_id);
    output
}

fn flush_into(collector: &Collector, correlation_id: &str, writer: impl std::io::Write) {
    collector.set_property("correlationId", correlation_id.to_owned());
    if let Err(error) = collector.flush(writer) {
        tracing::warn!(%error, "metrics could not be written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    // One test: the recorder is global to the process, and this test binary installs it once.
    #[test]
    fn counts_are_written_as_embedded_metric_format_and_reset_by_each_flush() {
        let collector = install(Builder::new().with_timestamp(1_700_000_000_000))
            .expect("the first install succeeds");
        count(RESERVATIONS, "won", 2);
        count(RESERVATIONS, "lost", 1);
        count(RESERVATIONS, "won", 1);
        count(EVENTS, "parked", 0);
        let mut out = Vec::new();
        flush_into(collector, "corr-1", &mut out);
        let lines: Vec<Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "one document per outcome: {lines:?}");
        let by_outcome = |outcome: &str| {
            lines
                .iter()
                .find(|l| l[OUTCOME] == outcome)
                .unwrap_or_else(|| panic!("no {outcome} line in {lines:?}"))
                .clone()
        };
        let won = by_outcome("won");
        assert_eq!(won[RESERVATIONS], 3);
        assert_eq!(won["correlationId"], "corr-1");
        let aws = &won["_aws"];
        assert_eq!(aws["Timestamp"], 1_700_000_000_000u64);
        assert_eq!(aws["CloudWatchMetrics"][0]["Namespace"], NAMESPACE);
        assert_eq!(aws["CloudWatchMetrics"][0]["Dimensions"][0][0], OUTCOME);
        assert_eq!(
            aws["CloudWatchMetrics"][0]["Metrics"][0]["Name"],
            RESERVATIONS
        );
        assert_eq!(by_outcome("lost")[RESERVATIONS], 1);

        // Counted once: the next flush has nothing to say until something new is counted.
        let mut again = Vec::new();
        flush_into(collector, "corr-2", &mut again);
        assert!(again.is_empty(), "{}", String::from_utf8_lossy(&again));
        count(PUSHES, "gone", 4);
        let mut third = Vec::new();
        flush_into(collector, "corr-3", &mut third);
        let line: Value = serde_json::from_slice(&third).unwrap();
        assert_eq!(
            (line[PUSHES].clone(), line[OUTCOME].clone()),
            (4.into(), "gone".into())
        );

        assert!(
            install(Builder::new()).is_none(),
            "a second recorder is refused, not silently swapped"
        );
    }
}
