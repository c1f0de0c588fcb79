//! What the shops earn and the marketplace keeps: the analytics projector (its counters and the
//! commission per day) and the earnings reports.

pub mod analytics;
pub mod earnings;
