//! Where the simulated gateway keeps its charges: one outcome per idempotency key, the first
//! one recorded, and which approved charges were refunded.

use std::collections::HashMap;
use std::sync::Mutex;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::{ChargeOutcome, ChargeRequest, GatewayError, Payout};

#[async_trait::async_trait]
pub trait Ledger: Send + Sync {
    /// Records `proposed` for the request's key unless an outcome is recorded already;
    /// returns the recorded outcome (the first one, whatever was proposed since).
    async fn record(
        &self,
        request: &ChargeRequest,
        proposed: ChargeOutcome,
    ) -> Result<ChargeOutcome, GatewayError>;
    async fn outcome(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError>;
    /// Marks the key's approved charge refunded (a no-op when there is none, or again), and
    /// for a destination charge (`transferred`) its transfer reversed and its fee refunded.
    async fn refund(&self, key: &str, transferred: bool) -> Result<(), GatewayError>;
    /// The payouts of `account` arriving from `from` to `to` (`YYYY-MM-DD`), oldest first.
    async fn payouts(
        &self,
        account: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError>;
}

/// This process's memory (unit and system tests that count charges).
#[derive(Default)]
pub struct MemoryLedger {
    outcomes: Mutex<HashMap<String, ChargeOutcome>>,
    refunded: Mutex<Vec<String>>,
    payouts: Mutex<Vec<(String, Payout)>>,
}

impl MemoryLedger {
    pub fn approved(&self) -> usize {
        self.outcomes
            .lock()
            .map(|o| {
                o.values()
                    .filter(|c| matches!(c, ChargeOutcome::Approved { .. }))
                    .count()
            })
            .unwrap_or(0)
    }

    pub fn refunded(&self) -> Vec<String> {
        self.refunded.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The PSP pays `payout` out of `account` (what a test sets up).
    pub fn pay_out(&self, account: &str, payout: Payout) {
        if let Ok(mut payouts) = self.payouts.lock() {
            payouts.push((account.to_owned(), payout));
        }
    }
}

#[async_trait::async_trait]
impl Ledger for MemoryLedger {
    async fn record(
        &self,
        request: &ChargeRequest,
        proposed: ChargeOutcome,
    ) -> Result<ChargeOutcome, GatewayError> {
        let mut outcomes = self.outcomes.lock().map_err(poisoned)?;
        Ok(outcomes
            .entry(request.idempotency_key.clone())
            .or_insert(proposed)
            .clone())
    }

    async fn outcome(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        Ok(self.outcomes.lock().ok().and_then(|o| o.get(key).cloned()))
    }

    async fn refund(&self, key: &str, _transferred: bool) -> Result<(), GatewayError> {
        let approved = matches!(
            self.outcomes.lock().ok().and_then(|o| o.get(key).cloned()),
            Some(ChargeOutcome::Approved { .. })
        );
        if let Ok(mut refunded) = self.refunded.lock() {
            if approved && !refunded.iter().any(|k| k == key) {
                refunded.push(key.to_owned());
            }
        }
        Ok(())
    }

    async fn payouts(
        &self,
        account: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        let mut found: Vec<Payout> = self
            .payouts
            .lock()
            .map_err(poisoned)?
            .iter()
            .filter(|(a, p)| a == account && (from..=to).contains(&p.arrival_date.as_str()))
            .map(|(_, p)| p.clone())
            .collect();
        found.sort_by(|a, b| a.arrival_date.cmp(&b.arrival_date));
        Ok(found)
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> GatewayError {
    GatewayError::Unavailable("ledger poisoned".into())
}

/// The marketplace table: one item per key (`pk = SIMPAY#{key}`), put on the condition that
/// none exists, so concurrent charges with one key in different containers agree on one
/// outcome. Reads are consistent.
#[derive(Clone, Debug)]
pub struct TableLedger {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

const SORT: &str = "CHARGE";

impl TableLedger {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    fn key(idempotency_key: &str) -> [(String, AttributeValue); 2] {
        [
            (
                "pk".into(),
                AttributeValue::S(format!("SIMPAY#{idempotency_key}")),
            ),
            ("sk".into(), AttributeValue::S(SORT.into())),
        ]
    }

    async fn read(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(key).into_iter().collect()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(output.item.as_ref().and_then(outcome_of))
    }
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> GatewayError {
    GatewayError::Unavailable(Box::new(error))
}

/// A conditional write's output, or `None` when DynamoDB refused it because its condition
/// did not hold (`condition_failed` tells that refusal among the operation's errors).
fn unless_condition_failed<T, E, R>(
    result: Result<T, SdkError<E, R>>,
    condition_failed: fn(&E) -> bool,
) -> Result<Option<T>, GatewayError>
where
    SdkError<E, R>: std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(output) => Ok(Some(output)),
        Err(error) if error.as_service_error().is_some_and(condition_failed) => Ok(None),
        Err(error) => Err(unavailable(error)),
    }
}

fn text(item: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name)?.as_s().ok().cloned()
}

fn outcome_of(item: &HashMap<String, AttributeValue>) -> Option<ChargeOutcome> {
    match text(item, "outcome")?.as_str() {
        "approved" => Some(ChargeOutcome::Approved {
            charge_id: text(item, "chargeId")?,
        }),
        "declined" => Some(ChargeOutcome::Declined {
            reason: text(item, "reason")?,
        }),
        "requires_action" => Some(ChargeOutcome::RequiresAction {
            intent_id: text(item, "chargeId")?,
            client_secret: text(item, "clientSecret")?,
        }),
        _ => None,
    }
}

/// A payout's item: `pk = SIMPAYOUT#{account}`, `sk = {arrival date}#{id}`, so an account's
/// payouts of a period are one `Query`.
fn payout_pk(account: &str) -> AttributeValue {
    AttributeValue::S(format!("SIMPAYOUT#{account}"))
}

impl TableLedger {
    /// The simulated PSP pays `amount_minor` of `currency` out of `account` to its bank,
    /// arriving on `arrival_date` (the dev stack's account page does this locally).
    pub async fn pay_out(
        &self,
        account: &str,
        amount_minor: i64,
        currency: &str,
        arrival_date: &str,
    ) -> Result<Payout, GatewayError> {
        let payout = Payout {
            id: format!("po_sim_{}", ulid::Ulid::new()),
            amount_minor,
            currency: currency.to_ascii_uppercase(),
            arrival_date: arrival_date.to_owned(),
            status: "paid".into(),
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", payout_pk(account))
            .item(
                "sk",
                AttributeValue::S(format!("{arrival_date}#{}", payout.id)),
            )
            .item("entity", AttributeValue::S("simulated_payout".into()))
            .item("payoutId", AttributeValue::S(payout.id.clone()))
            .item("amountMinor", AttributeValue::N(amount_minor.to_string()))
            .item("currency", AttributeValue::S(payout.currency.clone()))
            .item("arrivalDate", AttributeValue::S(arrival_date.to_owned()))
            .item("status", AttributeValue::S(payout.status.clone()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(payout)
    }

    async fn read_payouts(
        &self,
        account: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        let mut payouts = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", payout_pk(account))
                .expression_attribute_values(":from", AttributeValue::S(format!("{from}#")))
                .expression_attribute_values(":to", AttributeValue::S(format!("{to}#~")))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in output.items.unwrap_or_default() {
                let number = item
                    .get("amountMinor")
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse().ok());
                if let (Some(id), Some(amount_minor), Some(currency), Some(arrival_date)) = (
                    text(&item, "payoutId"),
                    number,
                    text(&item, "currency"),
                    text(&item, "arrivalDate"),
                ) {
                    payouts.push(Payout {
                        id,
                        amount_minor,
                        currency,
                        arrival_date,
                        status: text(&item, "status").unwrap_or_default(),
                    });
                }
            }
            start = output.last_evaluated_key;
            if start.is_none() {
                return Ok(payouts);
            }
        }
    }

    /// The bank's answer to an authentication the simulated gateway asked for: the attempt
    /// under `key` becomes approved (or declined). Returns the intent's id, or `None` when no
    /// authentication is pending under `key`.
    pub async fn authenticate(
        &self,
        key: &str,
        approved: bool,
    ) -> Result<Option<String>, GatewayError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(key).into_iter().collect()))
            .update_expression("SET outcome = :outcome, reason = :reason")
            .condition_expression("outcome = :pending")
            .expression_attribute_values(
                ":outcome",
                AttributeValue::S(if approved { "approved" } else { "declined" }.into()),
            )
            .expression_attribute_values(
                ":reason",
                AttributeValue::S("authentication_failed".into()),
            )
            .expression_attribute_values(":pending", AttributeValue::S("requires_action".into()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        let updated = unless_condition_failed(
            result,
            UpdateItemError::is_conditional_check_failed_exception,
        )?;
        Ok(updated.and_then(|output| output.attributes.as_ref().and_then(|a| text(a, "chargeId"))))
    }
}

#[async_trait::async_trait]
impl Ledger for TableLedger {
    async fn payouts(
        &self,
        account: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        Box::pin(self.read_payouts(account, from, to)).await
    }

    async fn record(
        &self,
        request: &ChargeRequest,
        proposed: ChargeOutcome,
    ) -> Result<ChargeOutcome, GatewayError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .condition_expression("attribute_not_exists(pk)")
            .item(
                "amountMinor",
                AttributeValue::N(request.amount_minor.to_string()),
            )
            .item("currency", AttributeValue::S(request.currency.clone()));
        // A destination charge: the shop's account gets the amount less the fee.
        if let Some(transfer) = &request.transfer {
            put = put
                .item(
                    "destination",
                    AttributeValue::S(transfer.destination.clone()),
                )
                .item(
                    "applicationFeeMinor",
                    AttributeValue::N(transfer.application_fee_minor.to_string()),
                );
        }
        for (name, value) in Self::key(&request.idempotency_key) {
            put = put.item(name, value);
        }
        put = match &proposed {
            ChargeOutcome::Approved { charge_id } => put
                .item("outcome", AttributeValue::S("approved".into()))
                .item("chargeId", AttributeValue::S(charge_id.clone())),
            ChargeOutcome::Declined { reason } => put
                .item("outcome", AttributeValue::S("declined".into()))
                .item("reason", AttributeValue::S(reason.clone())),
            ChargeOutcome::RequiresAction {
                intent_id,
                client_secret,
            } => put
                .item("outcome", AttributeValue::S("requires_action".into()))
                .item("chargeId", AttributeValue::S(intent_id.clone()))
                .item("clientSecret", AttributeValue::S(client_secret.clone())),
        };
        let put = unless_condition_failed(
            put.send().await,
            PutItemError::is_conditional_check_failed_exception,
        )?;
        match put {
            Some(_) => Ok(proposed),
            // Another charge with this key was recorded first: its outcome stands.
            None => self.read(&request.idempotency_key).await?.ok_or_else(|| {
                GatewayError::Unavailable("simulated ledger: charge vanished".into())
            }),
        }
    }

    async fn outcome(&self, key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        Box::pin(self.read(key)).await
    }

    async fn refund(&self, key: &str, transferred: bool) -> Result<(), GatewayError> {
        // A destination charge's refund takes the shop's transfer back and returns the
        // marketplace's fee, as Stripe's `reverse_transfer` and `refund_application_fee`.
        let update = if transferred {
            "SET refunded = :yes, transferReversed = :yes, feeRefunded = :yes"
        } else {
            "SET refunded = :yes"
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(key).into_iter().collect()))
            .update_expression(update)
            .condition_expression("outcome = :approved")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":approved", AttributeValue::S("approved".into()))
            .send()
            .await;
        // `None`: nothing approved under this key, nothing to refund.
        unless_condition_failed(
            result,
            UpdateItemError::is_conditional_check_failed_exception,
        )?;
        Ok(())
    }
}
