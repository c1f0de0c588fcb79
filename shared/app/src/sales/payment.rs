//! Paying a reserved order: claim before charge.
//!
//! 1. Read the order, the idempotency record and the declines counted against the order and
//!    the customer (one `BatchGetItem`), and the shop's delivery settings (one `GetItem`): the
//!    details' date must still be taken; an order or customer that had its declines is
//!    refused here, before anything is claimed or charged.
//! 2. Claim: `reserved` → `payment_pending` with the bouquets' hold extended over the attempt
//!    (one `TransactWriteItems`, conditioned on the version read; an expired hold is
//!    `ReservationExpired` and nothing is charged).
//! 3. Charge through the gateway with the attempt's key (`{orderId}-{attempt}`).
//! 4. Commit `paid` and every bouquet `sold` with `OrderPaid` and the idempotency record
//!    (one `TransactWriteItems`); declined: back to `reserved`, and the decline counted
//!    against the order and the customer (one `TransactWriteItems`).
//!
//! When the card needs 3-D Secure the order stays `payment_pending` and the outcome carries
//! the PSP's client secret; the PSP's webhook ([`crate::checkout::settle`]) commits how it
//! ended. Paying a paid order returns it. [`crate::checkout`] says what happens when the
//! process dies between 3 and 4.

use crate::problem::{ApiError, Refusal};
use bouquet_domain::limits::LimitReached;
use bouquet_domain::{CustomerId, DomainError, FieldError, Order, OrderId, OrderStatus, Timestamp};
use bouquet_payments::{valid_token, ChargeOutcome, GatewayError};
use bouquet_store::retry::Retry;
use bouquet_store::{Counter, StoreError};

use crate::checkout::{self, CheckoutError};
use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

/// How a payment request ended, short of an error.
#[derive(Clone, Debug, PartialEq)]
pub enum Paid {
    /// This request's charge paid the order (or it was paid already: the order as it is).
    Paid(Order),
    /// The customer must authenticate with the PSP (3-D Secure) using `client_secret`; the
    /// order stays `payment_pending`, its bouquets held over the authentication window.
    Authenticate { order: Order, client_secret: String },
}

#[derive(Debug, thiserror::Error)]
pub enum PayError {
    /// No such order, or not the caller's.
    #[error("no such order")]
    NotFound,
    /// The gateway declined: the order is `reserved` again.
    #[error("the payment was declined: {reason}")]
    Declined { reason: String },
    /// The gateway gave no definite answer: the order stays `payment_pending` and a retry with
    /// the same key charges at most once.
    #[error("the payment gateway gave no answer")]
    GatewayUnavailable(#[source] GatewayError),
    /// The same request (same key) is still running elsewhere.
    #[error("a request with this idempotency key is in progress")]
    InProgress,
    /// The order, or the customer, had its declines for now (card testing): nothing is
    /// charged until the window ends.
    #[error("too many declined payments; try again in {} s", .0.retry_after_secs)]
    AttemptsExceeded(LimitReached),
    /// The order kept changing under every attempt.
    #[error("the order kept changing; retry shortly")]
    Busy,
    /// The shop's payout account stopped taking charges since the reservation: nothing is
    /// charged, the hold stays.
    #[error("the shop cannot take payments now")]
    PayoutsNotReady,
    #[error(transparent)]
    Checkout(#[from] CheckoutError),
}

impl From<StoreError> for PayError {
    fn from(error: StoreError) -> Self {
        PayError::Checkout(CheckoutError::Store(error))
    }
}

impl From<DomainError> for PayError {
    fn from(error: DomainError) -> Self {
        PayError::Checkout(CheckoutError::Domain(error))
    }
}

/// Pays `order_id` of `customer` with `payment_token`.
pub async fn pay(
    app: &App,
    customer: &CustomerId,
    order_id: OrderId,
    payment_token: Option<&str>,
    key: Option<Idempotency<'_, Order>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Paid>, PayError> {
    let store = &app.store;
    let key_hash = key.as_ref().map(|k| k.key_hash);
    let order_subject = order_id.to_string();
    let [per_order, per_customer] = app.config.decline_limits();
    let declines = [
        Counter {
            limit: per_order,
            subject: &order_subject,
        },
        Counter {
            limit: per_customer,
            subject: customer.as_str(),
        },
    ];
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let (order, record, declined) = store
            .read_order_for_payment(order_id, key_hash, &declines, now)
            .await?;
        if let Some(record) = record {
            return Ok(Replayable::Replayed(record));
        }
        let order = order
            .filter(|o| o.customer_id == *customer)
            .ok_or(PayError::NotFound)?;
        // Only once the order is the caller's: another's is 404 whatever the body held.
        let payment_token = payment_token.filter(|t| valid_token(t)).ok_or_else(|| {
            DomainError::Invalid(vec![FieldError::new(
                "paymentToken",
                "must be a payment token such as tok_visa",
            )])
        })?;
        if order.status.is_sold() {
            return Ok(Replayable::Done(Paid::Paid(order)));
        }
        // Refused before the claim: a refused attempt changes nothing and charges nothing.
        for (counter, count) in declines.iter().zip(&declined) {
            counter
                .limit
                .check(*count, now)
                .map_err(PayError::AttemptsExceeded)?;
        }
        // The date the details name may have lapsed since they were given (the day, or the
        // same-day cut-off, passed), or the shop's account stopped taking charges since the
        // reservation: refused before anything is charged, the hold kept.
        let (settings, shop) = tokio::try_join!(
            crate::delivery::shop_settings(app, order.vendor_id),
            store.vendor(order.vendor_id, false),
        )?;
        if let (OrderStatus::Reserved, Some(delivery)) = (order.status, &order.delivery) {
            settings
                .still_takes(&delivery.date, now)
                .map_err(DomainError::DeliveryDateLapsed)?;
        }
        let payee = shop.as_ref().and_then(|shop| shop.payee().ok());
        let commission = shop.as_ref().map_or(app.config.commission, |shop| {
            shop.commission_or(app.config.commission)
        });
        if payee.is_none() && app.config.payouts_required {
            return Err(PayError::PayoutsNotReady);
        }
        let mut claimed = order.clone();
        match checkout::claim(store, &mut claimed, commission, payee, correlation_id, now).await {
            Ok(true) => {}
            Ok(false) => return Ok(Replayable::Done(Paid::Paid(order))),
            Err(CheckoutError::Changed) => continue,
            Err(CheckoutError::Domain(DomainError::PaymentInProgress)) if key.is_some() => {
                return Err(PayError::InProgress)
            }
            Err(other) => return Err(other.into()),
        }
        let outcome = app
            .payments
            .charge(checkout::charge_request(&claimed, payment_token))
            .await;
        return match outcome {
            Ok(ChargeOutcome::Approved { charge_id }) => {
                let mut paid = claimed.clone();
                paid.payment_succeeded(charge_id.clone(), now)?;
                let record = idempotency::record(key.as_ref(), &paid);
                let committed = checkout::commit_charge(
                    store,
                    app.payments.as_ref(),
                    &claimed,
                    charge_id,
                    correlation_id,
                    record.as_ref(),
                    now,
                )
                .await;
                match committed {
                    Ok(order) => Ok(Replayable::Done(Paid::Paid(order))),
                    Err(CheckoutError::Store(StoreError::IdempotencyReplay(record))) => {
                        Ok(Replayable::Replayed(*record))
                    }
                    // The PSP's webhook committed this charge first: the order is paid.
                    Err(CheckoutError::Changed) => match store.order(order_id).await? {
                        Some(order) if order.status.is_sold() => {
                            Ok(Replayable::Done(Paid::Paid(order)))
                        }
                        _ => Err(PayError::Busy),
                    },
                    Err(other) => Err(other.into()),
                }
            }
            Ok(ChargeOutcome::RequiresAction {
                intent_id,
                client_secret,
            }) => {
                // Until the webhook says how it ended, paying again repeats this attempt (the
                // PSP returns the same intent).
                tracing::info!(%order_id, %intent_id, "payment needs authentication");
                let order =
                    checkout::await_authentication(store, &claimed, correlation_id, now).await?;
                Ok(Replayable::Done(Paid::Authenticate {
                    order,
                    client_secret,
                }))
            }
            Ok(ChargeOutcome::Declined { reason }) => {
                tracing::info!(%order_id, %reason, "payment declined");
                checkout::decline(store, &claimed, correlation_id, None, now).await?;
                // The decline stands whether or not it is counted: a failed count lets one
                // more attempt through, it does not undo the answer.
                if let Err(error) = store.count(&declines, now).await {
                    tracing::error!(%order_id, error = %bouquet_store::describe(&error), "a declined payment was not counted");
                }
                Err(PayError::Declined { reason })
            }
            Err(error) => {
                tracing::warn!(%order_id, error = %bouquet_aws::describe(&error), "payment gateway gave no answer");
                checkout::interrupt(store, &claimed, correlation_id, now).await?;
                Err(PayError::GatewayUnavailable(error))
            }
        };
    }
    Err(PayError::Busy)
}

impl From<PayError> for ApiError {
    fn from(error: PayError) -> Self {
        match error {
            PayError::NotFound => ApiError::NotFound("order"),
            PayError::Declined { .. } => DomainError::PaymentDeclined.into(),
            PayError::GatewayUnavailable(_) => ApiError::payment_unavailable(),
            PayError::InProgress => ApiError::idempotency_in_progress(),
            PayError::AttemptsExceeded(reached) => {
                let seconds = reached.retry_after_secs;
                ApiError::RateLimited(
                    Refusal::new(
                        "payment.attempts_exceeded",
                        "Too many payment attempts",
                        format!("too many declined payments; no card is tried for this order or customer for {seconds} s"),
                    )
                    .retry_after(seconds),
                )
            }
            PayError::Busy => ApiError::busy(),
            PayError::PayoutsNotReady => ApiError::payouts_not_ready(),
            PayError::Checkout(error) => error.into(),
        }
    }
}
