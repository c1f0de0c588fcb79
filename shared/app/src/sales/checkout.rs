//! Order lifecycle use cases that more than one function runs: committing a charge (the
//! payment route and the sweeper), expiring a reservation (the sweeper) and resolving a
//! payment attempt that was interrupted between the charge and its commit.
//!
//! Payment is claim-before-charge: the order moves `reserved` → `payment_pending` (and the
//! bouquets' hold is extended over the attempt's lease) before the gateway is called with
//! the attempt's key (`{orderId}-{attempt}`, [`Order::gateway_key`]) as its idempotency
//! key. If the process dies after the charge, the order stays `payment_pending` and records
//! when the attempt started. Then either
//! - the customer retries (same route): after the lease (at once, when the gateway answered
//!   with an error rather than not at all) the attempt is taken over and the charge repeated
//!   with the same gateway key, which returns the first charge: paid once; or
//! - the expiry sweeper finds it past its hold: it asks the gateway what happened under that
//!   key and commits the charge (paid), or, when nothing was charged, releases the order
//!   (`reserved` again, or `expired` when the hold has passed).

use crate::problem::ApiError;
use bouquet_domain::checkout::{self as decide, Transition};
use bouquet_domain::commission::CommissionRate;
use bouquet_domain::events::DomainEvent;
use bouquet_domain::{BouquetId, BouquetStatus, DomainError, Order, OrderStatus, Timestamp};
use bouquet_metrics as metrics;
use bouquet_payments::{ChargeOutcome, ChargeRequest, GatewayError, PaymentGateway, Transfer};
use bouquet_store::{
    BouquetEffect, Conflict, IdempotencyPut, OrderWrite, Store, StoreError, Target,
};

#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the order changed while this request ran")]
    Changed,
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    #[error("no order {0}")]
    UnknownOrder(bouquet_domain::OrderId),
    /// The order's delivery photos could not be removed before its redaction (retried).
    #[error("the order's delivery photos could not be removed")]
    Photos(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Removes `order`'s delivery photos (every size of every upload): before its redaction is
/// written, so that a failure leaves the order unredacted and the redaction is tried again;
/// a URL signed before it then reads nothing. An order that never went out for delivery
/// had none (uploads are signed only from then on), and costs no call.
pub async fn remove_delivery_photos(
    app: &crate::App,
    order: &Order,
) -> Result<usize, CheckoutError> {
    if !order.went_out_for_delivery() {
        return Ok(0);
    }
    let photos = app
        .ports
        .private_photos()
        .await
        .map_err(|e| CheckoutError::Photos(e.into()))?;
    photos
        .delete_under(&bouquet_domain::photo::delivery_prefix(order.order_id))
        .await
        .map_err(|e| CheckoutError::Photos(e.into()))
}

/// Writes the transition of `before` to `order` with `effects` on its bouquets and the event
/// the new status announces. A lost race on the order is `Changed`.
pub async fn write(
    store: &Store,
    before: &Order,
    order: &Order,
    effects: &[(BouquetId, BouquetEffect)],
    correlation_id: &str,
    idempotency: Option<&IdempotencyPut>,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    let event = order.lifecycle_event();
    write_with_event(
        store,
        before,
        order,
        effects,
        event,
        correlation_id,
        idempotency,
        now,
    )
    .await
}

/// A change of the order alone that no one is told of (its personal data redacted or marked
/// for erasure): no bouquet effect, no event, no idempotency record.
pub async fn write_unannounced(
    store: &Store,
    before: &Order,
    order: &Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    write_with_event(store, before, order, &[], None, correlation_id, None, now).await
}

/// [`write`] with the event given: a change that is not a move of state (the delivery
/// details) announces its own, a redaction none.
#[allow(clippy::too_many_arguments)]
pub async fn write_with_event(
    store: &Store,
    before: &Order,
    order: &Order,
    effects: &[(BouquetId, BouquetEffect)],
    event: Option<bouquet_domain::events::EventData>,
    correlation_id: &str,
    idempotency: Option<&IdempotencyPut>,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    let event = event
        .map(|data| DomainEvent::new(order.order_id, order.version, now, correlation_id, data));
    match store
        .transition_order(
            &OrderWrite {
                order,
                read_version: before.version,
                effects,
                event: event.as_ref(),
                idempotency,
                releases_hold: before.status.holds_bouquets() && !order.status.holds_bouquets(),
                takes_invoice: order
                    .invoice_number
                    .filter(|_| before.invoice_number.is_none()),
            },
            now,
        )
        .await
    {
        Ok(()) => Ok(()),
        Err(StoreError::ConditionFailed(conflicts))
            if conflicts
                .iter()
                .any(|c: &Conflict| matches!(c.target, Target::Order(_))) =>
        {
            Err(CheckoutError::Changed)
        }
        Err(other) => Err(other.into()),
    }
}

/// The charge request for `order`: the attempt's gateway key is the gateway's idempotency key.
pub fn charge_request(order: &Order, payment_token: &str) -> ChargeRequest {
    ChargeRequest {
        idempotency_key: order.gateway_key(),
        order_id: order.order_id.to_string(),
        amount_minor: order.total.minor(),
        transfer: order.payout_account.clone().zip(order.settlement).map(
            |(destination, settlement)| Transfer {
                destination,
                application_fee_minor: settlement.fee().minor(),
            },
        ),
        currency: order.total.currency().code().to_owned(),
        payment_token: payment_token.to_owned(),
    }
}

/// Writes `transition` of `before`.
async fn commit(
    store: &Store,
    before: &Order,
    transition: &Transition,
    correlation_id: &str,
    idempotency: Option<&IdempotencyPut>,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    write(
        store,
        before,
        &transition.order,
        &transition.effects,
        correlation_id,
        idempotency,
        now,
    )
    .await
}

/// Claims `order` for a payment attempt: `payment_pending`, bouquets held over the lease, the
/// split fixed at `commission` (unless an earlier attempt fixed it).
/// `Ok(false)` when it is already paid.
pub async fn claim(
    store: &Store,
    order: &mut Order,
    commission: CommissionRate,
    payee: Option<&str>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<bool, CheckoutError> {
    let before = order.clone();
    let Some(claim) = decide::claim(order, commission, payee, now)? else {
        return Ok(false);
    };
    *order = claim.order.clone();
    match commit(store, &before, &claim, correlation_id, None, now).await {
        // A bouquet no longer held by this order: its hold was lost after an earlier
        // attempt's lease; the order cannot be completed.
        Err(CheckoutError::Store(StoreError::ConditionFailed(_))) => {
            Err(DomainError::ReservationExpired.into())
        }
        other => other.map(|()| true),
    }
}

/// Refunds `charge_id`, made for `order` under `attempt_key`: a charge to the shop's account
/// takes its transfer and the marketplace's fee back with it.
async fn refund(
    payments: &dyn PaymentGateway,
    order: &Order,
    attempt_key: &str,
    charge_id: &str,
) -> Result<(), GatewayError> {
    payments
        .refund(attempt_key, charge_id, order.payout_account.is_some())
        .await
}

/// Commits an approved charge: the order `paid` and every bouquet `sold`, one transaction.
/// If the bouquets are no longer the order's (possible only after an interrupted attempt
/// outlived its lease), the charge is refunded and the order ends `expired`.
pub async fn commit_charge(
    store: &Store,
    payments: &dyn PaymentGateway,
    order: &Order,
    charge_id: String,
    correlation_id: &str,
    idempotency: Option<&IdempotencyPut>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let mut charged = decide::charged(order, charge_id.clone(), now)?;
    // The paid order takes the next number of its shop's invoice sequence in this same
    // transaction: a payment that commits has its number, one that does not took none. Other
    // payments of the shop race for the same number, so the loser reads the sequence again.
    let mut contention = bouquet_store::retry::Retry::attempts(INVOICE_ATTEMPTS);
    let written = loop {
        let last = store.last_invoice_number(order.vendor_id).await?;
        charged.order.invoice_number = Some(last + 1);
        match commit(store, order, &charged, correlation_id, idempotency, now).await {
            Err(CheckoutError::Store(StoreError::ConditionFailed(conflicts)))
                if conflicts
                    .iter()
                    .all(|c| matches!(c.target, Target::InvoiceSequence)) =>
            {
                if !contention.wait().await {
                    break Err(CheckoutError::Store(StoreError::Contention(vec![
                        Target::InvoiceSequence,
                    ])));
                }
            }
            other => break other,
        }
    };
    match written {
        Ok(()) => {
            metrics::count(metrics::PAYMENTS, "paid", 1);
            Ok(charged.order)
        }
        Err(CheckoutError::Store(StoreError::ConditionFailed(_))) => {
            tracing::warn!(order_id = %order.order_id, "bouquets lost after an interrupted payment: refunding");
            refund(payments, order, &order.gateway_key(), &charge_id).await?;
            let held = held_bouquets(store, order).await?;
            let refunded = decide::refunded(order, &held, now)?;
            commit(store, order, &refunded, correlation_id, None, now).await?;
            metrics::count(metrics::PAYMENTS, "refunded", 1);
            Err(DomainError::ReservationExpired.into())
        }
        Err(other) => Err(other),
    }
}

/// How many times a payment's commit reads its shop's invoice sequence again after losing
/// the number to another payment: enough for a shop's busiest minute (20 payments at once
/// commit in the use-case test), bounded by the request's deadline.
const INVOICE_ATTEMPTS: u32 = 40;

/// The gateway gave no definite answer: keep `payment_pending`, give up the lease.
pub async fn interrupt(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    let interrupted = decide::interrupted(order, now)?;
    commit(store, order, &interrupted, correlation_id, None, now).await?;
    metrics::count(metrics::PAYMENTS, "interrupted", 1);
    Ok(())
}

/// The gateway asks the customer to authenticate (3-D Secure): keep `payment_pending`, hold
/// the bouquets over the authentication window; the PSP's webhook settles it.
pub async fn await_authentication(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let awaiting = decide::awaiting_authentication(order, now)?;
    commit(store, order, &awaiting, correlation_id, None, now).await?;
    metrics::count(metrics::PAYMENTS, "authentication_required", 1);
    Ok(awaiting.order)
}

/// The gateway declined: back to `reserved` with the original hold.
pub async fn decline(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    idempotency: Option<&IdempotencyPut>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let held = held_bouquets(store, order).await?;
    let declined = decide::declined(order, &held, now)?;
    commit(store, order, &declined, correlation_id, idempotency, now).await?;
    metrics::count(metrics::PAYMENTS, "declined", 1);
    Ok(declined.order)
}

/// Bouquets of `order` that it still holds (a hold that expired may have been taken).
async fn held_bouquets(store: &Store, order: &Order) -> Result<Vec<BouquetId>, CheckoutError> {
    let ids: Vec<BouquetId> = order.bouquet_ids().collect();
    let bouquets: Vec<_> = store.bouquets(&ids).await?.into_iter().flatten().collect();
    Ok(decide::held_by(order, &bouquets))
}

/// The idempotency record to write with a transition, made from the order it leads to.
pub type RecordFor<'a> = &'a (dyn Fn(&Order) -> Option<IdempotencyPut> + Sync);

/// Commits `transition` of `order` with the idempotency record `record_for` makes of the
/// order it leads to.
async fn commit_recorded(
    store: &Store,
    order: &Order,
    transition: &Transition,
    correlation_id: &str,
    record_for: RecordFor<'_>,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    let record = record_for(&transition.order);
    commit(
        store,
        order,
        transition,
        correlation_id,
        record.as_ref(),
        now,
    )
    .await
}

/// Cancels a live reservation: `cancelled`, bouquets back to `available`.
pub async fn cancel(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    record_for: RecordFor<'_>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let cancelled = decide::cancelled(order, now)?;
    commit_recorded(store, order, &cancelled, correlation_id, record_for, now).await?;
    Ok(cancelled.order)
}

/// Its vendor fulfils a paid order.
pub async fn fulfil(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    record_for: RecordFor<'_>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let fulfilled = decide::fulfilled(order, now)?;
    commit_recorded(store, order, &fulfilled, correlation_id, record_for, now).await?;
    Ok(fulfilled.order)
}

/// Its vendor moves a paid order a step on (accept, dispatch).
pub async fn advance(
    store: &Store,
    order: &Order,
    step: bouquet_domain::order::FulfilmentStep,
    correlation_id: &str,
    record_for: RecordFor<'_>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let next = decide::stepped(order, step, now)?;
    commit_recorded(store, order, &next, correlation_id, record_for, now).await?;
    Ok(next.order)
}

/// Why a vendor rejects an order, and whether its bouquets are withdrawn instead of going back
/// on sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection<'a> {
    pub reason: &'a str,
    pub withdraw: bool,
}

/// Its vendor rejects a paid order: `rejected` (bouquets back on sale or withdrawn,
/// `OrderRejected`) in
/// one transaction, then the refund ([`refund_rejected`]). A crash or a gateway failure in
/// between leaves the order due for the sweeper, which refunds it. Withdrawn bouquets are then
/// taken out of their vases ([`vacate_vases`]).
pub async fn reject(
    store: &Store,
    payments: &dyn PaymentGateway,
    order: &Order,
    rejection: Rejection<'_>,
    correlation_id: &str,
    record_for: RecordFor<'_>,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    let rejected = decide::rejected(order, rejection.reason, rejection.withdraw, now)?;
    commit_recorded(store, order, &rejected, correlation_id, record_for, now).await?;
    let refunded = match refund_rejected(store, payments, &rejected.order, correlation_id, now)
        .await
    {
        Ok(refunded) => refunded,
        Err(error) => {
            tracing::warn!(order_id = %order.order_id, error = %bouquet_aws::describe(&error), "rejected; the refund is left to the sweeper");
            rejected.order
        }
    };
    if rejection.withdraw {
        vacate_vases(store, &refunded).await;
    }
    Ok(refunded)
}

/// Takes the withdrawn bouquets of a rejected order out of the vases that still hold them.
/// After the rejection's transaction, not in it: the order's write already conditions up to
/// 20 bouquets, and a vase relinked meanwhile would fail the rejection. Best effort: a vase
/// left naming a withdrawn bouquet (a crash, a failed call; logged) can still be
/// decommissioned ([`bouquet_domain::vase::Vase::decommission`] reads the bouquet's status),
/// and the next bouquet listed in it replaces the link.
async fn vacate_vases(store: &Store, order: &Order) {
    let ids: Vec<BouquetId> = order.bouquet_ids().collect();
    let bouquets = match store.bouquets(&ids).await {
        Ok(bouquets) => bouquets,
        Err(error) => {
            tracing::warn!(order_id = %order.order_id, error = %bouquet_aws::describe(&error), "withdrawn bouquets not read; their vases still name them");
            return;
        }
    };
    let vacated = bouquets
        .into_iter()
        .flatten()
        .filter(|b| b.status == BouquetStatus::Withdrawn)
        .filter_map(|b| Some((b.vase_id?, b.bouquet_id)))
        .map(|(vase_id, bouquet_id)| async move {
            (vase_id, store.vacate_vase(vase_id, bouquet_id).await)
        });
    for (vase_id, result) in futures::future::join_all(vacated).await {
        if let Err(error) = result {
            tracing::warn!(order_id = %order.order_id, %vase_id, error = %bouquet_aws::describe(&error), "a withdrawn bouquet left in its vase");
        }
    }
}

/// Refunds a rejected order's charge through the gateway (under the paid attempt's key, so a
/// repeat refunds nothing more) and records the gateway's confirmation. A no-op on one
/// already refunded.
pub async fn refund_rejected(
    store: &Store,
    payments: &dyn PaymentGateway,
    order: &Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Order, CheckoutError> {
    if order.refunded_at.is_some() {
        return Ok(order.clone());
    }
    let charge_id = order.charge_id.clone().unwrap_or_default();
    refund(payments, order, &order.gateway_key(), &charge_id).await?;
    let mut refunded = order.clone();
    refunded.refund_confirmed(now)?;
    write(store, order, &refunded, &[], correlation_id, None, now).await?;
    metrics::count(metrics::PAYMENTS, "refunded", 1);
    Ok(refunded)
}

/// Expires a lapsed reservation, releasing only the bouquets it still holds (a lapsed hold
/// may already be someone else's), with `ReservationExpired`.
async fn expire(
    store: &Store,
    order: &Order,
    correlation_id: &str,
    now: Timestamp,
) -> Result<(), CheckoutError> {
    let held = held_bouquets(store, order).await?;
    let expired = decide::expired(order, &held, now)?;
    commit(store, order, &expired, correlation_id, None, now).await
}

/// What the sweeper did with one due order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swept {
    Expired,
    PaymentCompleted,
    PaymentReleased,
    /// A rejected order's refund, confirmed by the gateway.
    Refunded,
    /// An ended order's delivery details, their personal fields redacted.
    Redacted,
    /// Not due (any more), still within a payment lease, or another writer won the race.
    Skipped,
}

/// Handles one order found in the expiry index: expires a lapsed reservation (releasing the
/// bouquets it still holds) or resolves a `payment_pending` order whose attempt outlived its
/// lease, by asking the gateway. Conditions decide races: losing one is `Skipped`.
pub async fn sweep_one(
    app: &crate::App,
    order_id: bouquet_domain::OrderId,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Swept, CheckoutError> {
    let (store, payments) = (&app.store, app.payments.as_ref());
    let Some(order) = store.order(order_id).await? else {
        return Ok(Swept::Skipped);
    };
    let result = match order.status {
        OrderStatus::Reserved if order.hold_expired(now) => {
            expire(store, &order, correlation_id, now)
                .await
                .map(|()| Swept::Expired)
        }
        // While its customer may still be authenticating, the attempt is left alone.
        OrderStatus::PaymentPending
            if order.clone().begin_payment(now).is_ok() && !order.authenticating(now) =>
        {
            match payments.lookup(&order.gateway_key()).await? {
                Some(ChargeOutcome::Approved { charge_id }) => match commit_charge(
                    store,
                    payments,
                    &order,
                    charge_id,
                    correlation_id,
                    None,
                    now,
                )
                .await
                {
                    Ok(_) => Ok(Swept::PaymentCompleted),
                    Err(CheckoutError::Domain(DomainError::ReservationExpired)) => {
                        Ok(Swept::PaymentReleased)
                    }
                    Err(other) => Err(other),
                },
                _ => {
                    let reserved = decline(store, &order, correlation_id, None, now).await?;
                    if reserved.hold_expired(now) {
                        expire(store, &reserved, correlation_id, now).await?;
                    }
                    Ok(Swept::PaymentReleased)
                }
            }
        }
        OrderStatus::Rejected if order.refunded_at.is_none() => {
            refund_rejected(store, payments, &order, correlation_id, now)
                .await
                .map(|_| Swept::Refunded)
        }
        // Its personal data's retention has passed (or its customer asked for erasure).
        status
            if status.is_final()
                && order.holds_personal_data()
                && order.due_at().is_some_and(|due| due <= now) =>
        {
            let mut redacted = order.clone();
            redacted.redact(now)?;
            remove_delivery_photos(app, &order).await?;
            write_unannounced(store, &order, &redacted, correlation_id, now)
                .await
                .map(|()| Swept::Redacted)
        }
        _ => Ok(Swept::Skipped),
    };
    match result {
        Err(CheckoutError::Changed) => Ok(Swept::Skipped),
        // A bouquet changed between the read and the write: the next run sees the new state.
        Err(CheckoutError::Store(StoreError::ConditionFailed(_))) => Ok(Swept::Skipped),
        other => other,
    }
}

/// What the PSP's webhook says about one payment attempt (`attempt_key` is the attempt's
/// gateway key, which the PSP keeps as metadata).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settlement {
    Succeeded {
        charge_id: String,
        attempt_key: String,
    },
    Failed {
        attempt_key: String,
    },
}

/// What a webhook delivery did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// `payment_pending` → `paid`, bouquets `sold`.
    Paid,
    /// `payment_pending` → `reserved` (or `expired` when the hold has passed).
    Released,
    /// Money arrived for an attempt that no longer stands (the hold lapsed, the order was
    /// cancelled, or another attempt paid): refunded.
    Refunded,
    /// Nothing left to do: this event (or the synchronous answer) settled it already.
    AlreadySettled,
}

/// Commits how the PSP says an attempt ended. Webhooks arrive late, twice and out of order:
/// every transition is conditional on the order's version and on the attempt being the
/// order's current one, and `record` (keyed by the PSP's event id) is written with the
/// transition, so one event moves an order at most once.
pub async fn settle(
    app: &crate::App,
    order_id: bouquet_domain::OrderId,
    settlement: &Settlement,
    record: &IdempotencyPut,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Settled, CheckoutError> {
    let (store, payments) = (&app.store, app.payments.as_ref());
    let mut retry = bouquet_store::retry::Retry::optimistic();
    while retry.next().await {
        let Some(order) = store.order(order_id).await? else {
            return Err(CheckoutError::UnknownOrder(order_id));
        };
        let current = order.status == OrderStatus::PaymentPending;
        let attempt_key = match settlement {
            Settlement::Succeeded { attempt_key, .. } | Settlement::Failed { attempt_key } => {
                attempt_key
            }
        };
        let this_attempt = current && order.gateway_key() == *attempt_key;
        let result = match settlement {
            Settlement::Succeeded { charge_id, .. } if this_attempt => commit_charge(
                store,
                payments,
                &order,
                charge_id.clone(),
                correlation_id,
                Some(record),
                now,
            )
            .await
            .map(|_| Settled::Paid)
            .or_else(|error| match error {
                // The bouquets were lost meanwhile: `commit_charge` refunded and expired it.
                CheckoutError::Domain(DomainError::ReservationExpired) => Ok(Settled::Refunded),
                other => Err(other),
            }),
            Settlement::Succeeded { charge_id, .. } => {
                if order.charge_id.as_deref() == Some(charge_id.as_str()) {
                    Ok(Settled::AlreadySettled)
                } else {
                    tracing::warn!(%order_id, %attempt_key, status = order.status.name(), "money for an attempt that no longer stands: refunding");
                    refund(payments, &order, attempt_key, charge_id).await?;
                    Ok(Settled::Refunded)
                }
            }
            Settlement::Failed { .. } if this_attempt => {
                let reserved = decline(store, &order, correlation_id, Some(record), now).await?;
                if reserved.hold_expired(now) {
                    expire(store, &reserved, correlation_id, now).await?;
                }
                Ok(Settled::Released)
            }
            Settlement::Failed { .. } => Ok(Settled::AlreadySettled),
        };
        match result {
            Err(CheckoutError::Changed) => continue,
            Err(CheckoutError::Store(StoreError::IdempotencyReplay(_))) => {
                return Ok(Settled::AlreadySettled)
            }
            other => return other,
        }
    }
    Err(CheckoutError::Changed)
}

impl From<CheckoutError> for ApiError {
    fn from(error: CheckoutError) -> Self {
        match error {
            CheckoutError::Domain(error) => error.into(),
            CheckoutError::Store(error) => error.into(),
            CheckoutError::Changed => ApiError::busy(),
            CheckoutError::Gateway(_) => ApiError::payment_unavailable(),
            CheckoutError::UnknownOrder(_) => ApiError::NotFound("order"),
            CheckoutError::Photos(error) => ApiError::Internal(error),
        }
    }
}
