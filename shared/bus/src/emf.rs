//! What a batch of the outbox did: one structured log line, and the business metric
//! `Events` by outcome (CloudWatch EMF through `bouquet-metrics`).

use bouquet_metrics::{count, EVENTS};

use crate::PublishReport;

/// One structured line per batch, and the counts as metrics.
pub fn outbox_batch(report: &PublishReport, failed: usize) {
    tracing::info!(
        records_in = report.records_in,
        published = report.published,
        failed,
        parked = report.parked,
        calls = report.calls,
        "outbox batch"
    );
    count(EVENTS, "published", report.published as u64);
    count(EVENTS, "parked", report.parked as u64);
    count(EVENTS, "failed", failed as u64);
}

/// One line per redrive, and the parked events it republished as `Events` `redriven`.
pub fn redrive_run(report: &crate::RedriveReport) {
    tracing::info!(?report, "outbox redrive");
    count(EVENTS, "redriven", report.republished as u64);
}
