//! The use cases' side of `Idempotency-Key`: the adapter scopes and hashes the key and knows
//! what it answers; a use case writes the record with its change (one transaction) and reports
//! a replay instead of doing the work twice.

pub use bouquet_store::{IdempotencyPut, IdempotencyRecord};

/// A request that carried a key: where its record lives, and how the adapter remembers an
/// outcome `T` under it.
#[derive(Clone, Copy)]
pub struct Idempotency<'a, T> {
    /// Hash of (caller, method and path, key).
    pub key_hash: &'a str,
    /// The record to write with the change that produced `T`.
    pub record: &'a (dyn Fn(&T) -> IdempotencyPut + Sync),
}

impl<T> Idempotency<'_, T> {
    pub fn record_for(&self, outcome: &T) -> IdempotencyPut {
        (self.record)(outcome)
    }
}

/// The outcome of a use case that may have run before under the same key.
#[derive(Clone, Debug, PartialEq)]
pub enum Replayable<T> {
    /// This request did the work.
    Done(T),
    /// The key was used before: what was answered then (the adapter checks that the request
    /// is the same and replays it).
    Replayed(IdempotencyRecord),
}

/// The record an optional key asks for with `outcome`.
pub(crate) fn record<T>(key: Option<&Idempotency<'_, T>>, outcome: &T) -> Option<IdempotencyPut> {
    key.map(|key| key.record_for(outcome))
}
