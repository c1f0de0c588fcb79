//! The expiry sweeper, scheduled every minute. It reads due orders from the sparse
//! `OrderDueIndex` (`dueAt < now`, every shard; no Scan; [`bouquet_domain::Order::due_at`])
//! and, for each:
//! expires a lapsed reservation, releasing the bouquets the order still holds, with
//! `ReservationExpired`; or resolves a `payment_pending` order whose attempt outlived its
//! lease by asking the gateway (see [`crate::checkout`]): within a minute of the lease, so a
//! customer charged while the gateway timed out is not left waiting for the hold's end;
//! refunds a rejected order; redacts the delivery details of an order that ended its
//! retention ago (`PERSONAL_DATA_DAYS`), or at once after its customer asked for erasure.
//!
//! Correctness does not depend on it: a lapsed hold is already available to the next
//! reserver and reads as expired. Two sweepers at once, or a sweep racing a payment, are
//! decided by the conditional writes: the loser skips.

use futures::StreamExt;
use serde::Serialize;

use bouquet_store::{DueCursor, StoreError};

use crate::checkout::{self, Swept};
use crate::App;

/// Due orders read per shard and round; a run pages through the index up to `MAX_ROUNDS`
/// rounds or its deadline, so orders that keep failing do not hide the ones behind them.
const PAGE: usize = 100;
const MAX_ROUNDS: usize = 10;
/// Orders handled at once.
const CONCURRENCY: usize = 8;

#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    pub due: usize,
    pub expired: usize,
    pub payments_completed: usize,
    pub payments_released: usize,
    /// Rejected orders whose refund the sweeper completed.
    pub refunded: usize,
    /// Ended orders whose delivery details were redacted (retention passed, or erasure).
    pub redacted: usize,
    pub skipped: usize,
    pub failed: usize,
}

/// One run: due orders page by page until a round changes nothing. An order that fails is
/// counted and left for the next run; only failing to read the index fails the run.
pub async fn sweep(
    app: &App,
    correlation_id: &str,
    deadline: tokio::time::Instant,
) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport::default();
    let now = app.clock.now();
    let mut cursor = DueCursor::default();
    for _ in 0..MAX_ROUNDS {
        if cursor.finished() || tokio::time::Instant::now() >= deadline {
            break;
        }
        let due = app.store.due_orders(now, PAGE, &mut cursor).await?;
        report.due += due.len();
        let results: Vec<_> = futures::stream::iter(due.iter().copied())
            .map(|order_id| async move {
                (
                    order_id,
                    checkout::sweep_one(app, order_id, correlation_id, now).await,
                )
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (order_id, result) in results {
            match result {
                Ok(Swept::Expired) => report.expired += 1,
                Ok(Swept::PaymentCompleted) => report.payments_completed += 1,
                Ok(Swept::PaymentReleased) => report.payments_released += 1,
                Ok(Swept::Refunded) => report.refunded += 1,
                Ok(Swept::Redacted) => report.redacted += 1,
                Ok(Swept::Skipped) => report.skipped += 1,
                Err(error) => {
                    report.failed += 1;
                    tracing::error!(%order_id, error = %bouquet_aws::describe(&error), "sweep failed for an order; the next run retries it");
                }
            }
        }
    }
    Ok(report)
}
