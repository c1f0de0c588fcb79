//! A `TransactWriteItems` builder that remembers which entity each item is, so a
//! cancellation can be turned into "these bouquets were taken" or "this key was used".

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use crate::error::{BackendKind, Cancelled, Conflict, StoreError, Target};
use crate::items::Item;
use crate::store::Store;
use bouquet_retry::Retry;

/// A condition or update expression with its placeholders.
#[derive(Clone, Debug, Default)]
pub struct Expr {
    pub text: String,
    pub names: HashMap<String, String>,
    pub values: HashMap<String, AttributeValue>,
}

impl Expr {
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The item is still at the version that was read (optimistic concurrency: a write
    /// refused on it is re-read and decided again).
    /// The same expression with `more` added to its text (its placeholders are added by the
    /// caller).
    pub fn append(self, more: &str) -> Self {
        Expr {
            text: format!("{}{more}", self.text),
            ..self
        }
    }

    /// At the version read, or (version 0: nothing was read) not there yet.
    pub fn at_version_or_new(read_version: u64) -> Self {
        if read_version == 0 {
            Self::new("attribute_not_exists(pk)")
        } else {
            Self::at_version(read_version)
        }
    }

    pub fn at_version(read_version: u64) -> Self {
        Self::new("version = :readVersion").n(":readVersion", read_version)
    }

    pub fn name(mut self, placeholder: &str, attribute: &str) -> Self {
        self.names
            .insert(placeholder.to_owned(), attribute.to_owned());
        self
    }

    pub fn value(mut self, placeholder: &str, value: AttributeValue) -> Self {
        self.values.insert(placeholder.to_owned(), value);
        self
    }

    pub fn s(self, placeholder: &str, value: impl Into<String>) -> Self {
        self.value(placeholder, AttributeValue::S(value.into()))
    }

    pub fn n(self, placeholder: &str, value: impl ToString) -> Self {
        self.value(placeholder, AttributeValue::N(value.to_string()))
    }

    /// A string set.
    pub fn ss(self, placeholder: &str, values: &[String]) -> Self {
        self.value(placeholder, AttributeValue::Ss(values.to_vec()))
    }
}

fn opt<T>(map: HashMap<String, T>) -> Option<HashMap<String, T>> {
    (!map.is_empty()).then_some(map)
}

/// `None` for an empty condition: the item is written unconditionally.
fn condition_text(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// Finishes a conditional item builder: the condition, its placeholders and the item as the
/// failed condition found it (what `decode` reads a conflict from). `Put`, `Update`, `Delete`
/// and `ConditionCheck` have these setters each, with no trait in common, hence a macro.
macro_rules! build_conditional {
    ($builder:expr, $condition_text:expr, $names:expr, $values:expr) => {
        $builder
            .set_condition_expression($condition_text)
            .set_expression_attribute_names(opt($names))
            .set_expression_attribute_values(opt($values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(StoreError::request)?
    };
}

/// How often a transaction that lost only to concurrent transactions (no condition failed)
/// is tried again before the caller hears `Contention`.
const CONTENTION_ATTEMPTS: u32 = 4;

#[derive(Default)]
pub struct Tx {
    items: Vec<TransactWriteItem>,
    targets: Vec<Target>,
}

impl Tx {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn put(
        &mut self,
        target: Target,
        table: &str,
        item: Item,
        condition: Option<Expr>,
    ) -> Result<(), StoreError> {
        let Expr {
            text,
            names,
            values,
        } = condition.unwrap_or_default();
        let put = build_conditional!(
            Put::builder().table_name(table).set_item(Some(item)),
            condition_text(text),
            names,
            values
        );
        self.push(target, TransactWriteItem::builder().put(put).build());
        Ok(())
    }

    /// Puts an item where none is yet (`ConditionFailed` on `target` when one is).
    pub(crate) fn put_new(
        &mut self,
        target: Target,
        table: &str,
        item: Item,
    ) -> Result<(), StoreError> {
        self.put(
            target,
            table,
            item,
            Some(Expr::new("attribute_not_exists(pk)")),
        )
    }

    /// An update; `update` and `condition` share one placeholder namespace.
    pub fn update(
        &mut self,
        target: Target,
        table: &str,
        key: Item,
        update: Expr,
        condition: Expr,
    ) -> Result<(), StoreError> {
        let mut names = update.names;
        names.extend(condition.names);
        let mut values = update.values;
        values.extend(condition.values);
        let update = build_conditional!(
            Update::builder()
                .table_name(table)
                .set_key(Some(key))
                .update_expression(update.text),
            condition_text(condition.text),
            names,
            values
        );
        self.push(target, TransactWriteItem::builder().update(update).build());
        Ok(())
    }

    /// An update without a condition (counters: `ADD` creates what is missing).
    pub fn upsert(
        &mut self,
        target: Target,
        table: &str,
        key: Item,
        update: Expr,
    ) -> Result<(), StoreError> {
        let update = Update::builder()
            .table_name(table)
            .set_key(Some(key))
            .update_expression(update.text)
            .set_expression_attribute_names(opt(update.names))
            .set_expression_attribute_values(opt(update.values))
            .build()
            .map_err(StoreError::request)?;
        self.push(target, TransactWriteItem::builder().update(update).build());
        Ok(())
    }

    /// An empty condition deletes unconditionally.
    pub fn delete(
        &mut self,
        target: Target,
        table: &str,
        key: Item,
        condition: Expr,
    ) -> Result<(), StoreError> {
        let delete = build_conditional!(
            Delete::builder().table_name(table).set_key(Some(key)),
            condition_text(condition.text),
            condition.names,
            condition.values
        );
        self.push(target, TransactWriteItem::builder().delete(delete).build());
        Ok(())
    }

    pub fn check(
        &mut self,
        target: Target,
        table: &str,
        key: Item,
        condition: Expr,
    ) -> Result<(), StoreError> {
        let check = build_conditional!(
            ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(key)),
            Some(condition.text),
            condition.names,
            condition.values
        );
        self.push(
            target,
            TransactWriteItem::builder().condition_check(check).build(),
        );
        Ok(())
    }

    fn push(&mut self, target: Target, item: TransactWriteItem) {
        self.targets.push(target);
        self.items.push(item);
    }

    /// Commits all items or none. One `TransactWriteItems` call, plus retries only when the
    /// transaction collided with another one and no condition failed.
    pub async fn commit(self, store: &Store) -> Result<(), StoreError> {
        let mut retry = Retry::attempts(CONTENTION_ATTEMPTS);
        loop {
            let result = store
                .client
                .transact_write_items()
                .set_transact_items(Some(self.items.clone()))
                .send()
                .await;
            let error = match result {
                Ok(_) => return Ok(()),
                Err(error) => error.into_service_error(),
            };
            match self.decode(error) {
                StoreError::Contention(targets) => {
                    tracing::debug!(attempt = retry.attempt(), ?targets, "transaction conflict");
                    if !retry.wait().await {
                        return Err(StoreError::Contention(targets));
                    }
                }
                other => return Err(other),
            }
        }
    }

    fn decode(&self, error: TransactWriteItemsError) -> StoreError {
        let cancelled = match error {
            TransactWriteItemsError::TransactionCanceledException(cancelled) => cancelled,
            TransactWriteItemsError::TransactionInProgressException(_) => {
                return StoreError::IdempotencyInProgress
            }
            other => return StoreError::service(other),
        };
        let reasons = cancelled.cancellation_reasons();
        let mut conflicts = Vec::new();
        let mut contended = Vec::new();
        for (target, reason) in self.targets.iter().zip(reasons) {
            match (target, reason.code()) {
                (Target::Idempotency, Some("ConditionalCheckFailed")) => {
                    return match reason
                        .item()
                        .cloned()
                        .map(crate::record::IdempotencyRecord::from_item)
                    {
                        Some(Ok(record)) => StoreError::IdempotencyReplay(Box::new(record)),
                        Some(Err(error)) => StoreError::corrupt(error),
                        None => {
                            StoreError::corrupt("idempotency condition failed without the item")
                        }
                    };
                }
                (Target::Idempotency, Some("TransactionConflict")) => {
                    return StoreError::IdempotencyInProgress
                }
                (_, Some("ConditionalCheckFailed")) => {
                    conflicts.push(Conflict::new(target.clone(), reason.item().cloned()))
                }
                (_, Some("TransactionConflict")) => contended.push(target.clone()),
                (_, Some("None") | None) => {}
                (_, Some(code)) => {
                    return StoreError::with_kind(
                        BackendKind::from_code(Some(code)),
                        Cancelled {
                            target: format!("{target:?}"),
                            code: code.to_owned(),
                            message: reason.message().unwrap_or_default().to_owned(),
                        },
                    )
                }
            }
        }
        if !conflicts.is_empty() {
            StoreError::ConditionFailed(conflicts)
        } else if !contended.is_empty() {
            StoreError::Contention(contended)
        } else {
            StoreError::with_kind(
                BackendKind::Other,
                Cancelled {
                    target: "no item".into(),
                    code: "None".into(),
                    message: cancelled.message().unwrap_or_default().to_owned(),
                },
            )
        }
    }
}
