//! Business metrics as CloudWatch Embedded Metric Format: one JSON line on stdout, which
//! Lambda ships to CloudWatch Logs and CloudWatch turns into metrics.

use crate::PublishReport;

/// One structured line per batch, and the same counts as CloudWatch Embedded Metric Format.
pub fn outbox_batch(report: &PublishReport, failed: usize) {
    tracing::info!(
        records_in = report.records_in,
        published = report.published,
        failed,
        parked = report.parked,
        calls = report.calls,
        "outbox batch"
    );
    let metrics = serde_json::json!({
        "_aws": {
            "Timestamp": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
            "CloudWatchMetrics": [{
                "Namespace": "BouquetMarketplace/Outbox",
                "Dimensions": [[]],
                "Metrics": [
                    { "Name": "RecordsIn", "Unit": "Count" },
                    { "Name": "EventsPublished", "Unit": "Count" },
                    { "Name": "EventsFailed", "Unit": "Count" },
                    { "Name": "EventsParked", "Unit": "Count" },
                    { "Name": "PutEventsCalls", "Unit": "Count" }
                ]
            }]
        },
        "RecordsIn": report.records_in,
        "EventsPublished": report.published,
        "EventsFailed": failed,
        "EventsParked": report.parked,
        "PutEventsCalls": report.calls,
    });
    println!("{metrics}");
}
