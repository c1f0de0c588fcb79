//! Maintenance passes an operator runs after an upgrade (`backfill-index-keys`): not a
//! request's path, so the one place a Scan is allowed.

use bouquet_store::StoreError;
use serde::Serialize;

use crate::App;

/// Items one Scan page reads: small enough that a page's writes finish well inside the
/// invocation's time left.
const PAGE: i32 = 100;

/// What a run of the pass did, and where the next run starts.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillReport {
    pub pages: usize,
    pub lacking: usize,
    pub rewritten: usize,
    /// Changed between the read and the write: their own write gave them their keys.
    pub moved: usize,
    /// Pass this to the next run; `None` once the whole table has been read.
    pub next_cursor: Option<String>,
}

/// Gives every bouquet, shop and order written before their indexes the keys those indexes
/// take (`freshnessSort`, `priceSort`, `vendorKey`, `vendorStatusKey`), page by page from
/// `cursor` until the table ends or `deadline` passes. Idempotent: a second pass finds nothing
/// lacking, and an item changed meanwhile is left to the write that changed it.
pub async fn backfill_index_keys(
    app: &App,
    cursor: Option<String>,
    deadline: tokio::time::Instant,
) -> Result<BackfillReport, StoreError> {
    let mut report = BackfillReport {
        next_cursor: cursor,
        ..BackfillReport::default()
    };
    loop {
        let page = app
            .store
            .backfill_index_keys(report.next_cursor.as_deref(), PAGE)
            .await?;
        report.pages += 1;
        report.lacking += page.lacking;
        report.rewritten += page.rewritten;
        report.moved += page.moved;
        report.next_cursor = page.next_cursor;
        if report.next_cursor.is_none() || tokio::time::Instant::now() >= deadline {
            return Ok(report);
        }
    }
}
