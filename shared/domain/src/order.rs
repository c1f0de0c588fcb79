//! Orders and their lifecycle:
//!
//! ```text
//! reserved ──pay──▶ payment_pending ──charged──▶ paid ──▶ fulfilled
//!    │  ▲                 │
//!    │  └────declined─────┘
//!    ├──cancel──▶ cancelled
//!    └──expire──▶ expired      (only once reservedUntil has passed)
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;

use crate::bouquet::Bouquet;
use crate::clock::Timestamp;
use crate::commission::{CommissionRate, Settlement};
use crate::delivery::Delivery;
use crate::error::DomainError;
use crate::events::EventData;
use crate::ids::{BouquetId, CustomerId, OrderId, VendorId};
use crate::money::Money;
pub use crate::order_status::OrderStatus;
use crate::pricing::{Pricing, Receipt};
use crate::validation::FieldError;

/// How long a reservation holds its bouquets unless configured otherwise.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(15 * 60);

/// At most this many bouquets in one order. The reservation is one DynamoDB transaction of
/// one update per bouquet plus the order, its event and the idempotency record (and, from
/// a cart, the cart item): 20 + 4 stays far inside the 100-item limit.
pub const MAX_BOUQUETS_PER_ORDER: usize = 20;

/// One bouquet of an order, priced as it was when reserved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderLine {
    pub bouquet_id: BouquetId,
    pub name: String,
    /// The price it was reserved at: what the order charges.
    pub price: Money,
    /// Its list price, when its freshness had marked it down at reservation (the invoice shows
    /// the markdown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_price: Option<Money>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub order_id: OrderId,
    pub customer_id: CustomerId,
    pub vendor_id: VendorId,
    pub lines: Vec<OrderLine>,
    pub total: Money,
    pub status: OrderStatus,
    pub reserved_until: Timestamp,
    /// When the current payment attempt claimed the order (`payment_pending`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_started_at: Option<Timestamp>,
    /// Counts declined attempts; part of the gateway idempotency key, so a new card after a
    /// decline is a new charge while a retried attempt is the same one.
    pub payment_attempt: u32,
    /// The gateway's charge, once paid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub charge_id: Option<String>,
    /// How the total splits into the marketplace's fee and the shop's net: fixed when the
    /// first payment attempt claims the order ([`Order::settle`]), so every attempt and the
    /// PSP's webhook charge the same fee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settlement: Option<Settlement>,
    /// The shop's connected payment account the charge goes to, less the fee (a destination
    /// charge); fixed with the settlement. `None`: the money stays with the marketplace.
    #[serde(skip)]
    pub payout_account: Option<String>,
    /// While the customer authenticates the current attempt (3-D Secure): until when the
    /// bouquets stay held and the sweeper leaves the attempt alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authenticating_until: Option<Timestamp>,
    /// Why the vendor rejected the order (`rejected` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    /// The vendor withdrew the bouquets of the rejected order instead of putting them back on
    /// sale.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bouquets_withdrawn: bool,
    /// When the gateway confirmed the refund of a rejected order; until then the order is due
    /// for the sweeper, which refunds it ([`Order::due_at`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refunded_at: Option<Timestamp>,
    /// Where, when and to whom the vendor delivers: personal data, required before payment,
    /// changeable until the vendor accepts ([`Order::set_delivery`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// The delivery fee and the VAT rates, priced by the server with the delivery details
    /// ([`Order::set_delivery`]); the total is the lines plus that fee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Net, VAT and gross per line and for delivery: derived from the lines and the pricing
    /// whenever the pricing is set ([`Order::price`]), never stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// The paid order's number in its shop's invoice sequence (1, 2, ...): taken in the
    /// transaction that commits the payment, so the sequence has no gap and no duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invoice_number: Option<u64>,
    /// When its vendor marked it delivered: its review window counts from here (issue 42).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fulfilled_at: Option<Timestamp>,
    /// The shop's photo of the delivered bouquets (proof of delivery): its sizes' keys in the
    /// private upload bucket, never a public path. Readers get signed, expiring URLs of it
    /// ([`Order::delivery_photo`] is personal data: redacted with the delivery details).
    /// Shown as `deliveryPhotoAttached: true` only: the shop's board knows it has one.
    #[serde(
        rename = "deliveryPhotoAttached",
        serialize_with = "attached",
        skip_serializing_if = "Option::is_none"
    )]
    pub delivery_photo: Option<crate::photo::Photo>,
    /// How many days after the order ends its delivery details are kept ([`Order::due_at`]);
    /// 0 once its customer asked for erasure.
    pub personal_data_days: u16,
    /// When the delivery details' personal fields were redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted_at: Option<Timestamp>,
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a vendor does with a paid order (issue 30). [`Order::fulfil_step`] is the one table of
/// which step is allowed from which state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FulfilmentStep {
    Accept,
    Dispatch,
    /// Delivered (the `fulfil` route).
    Deliver,
    Reject,
}

impl FulfilmentStep {
    pub const ALL: [FulfilmentStep; 4] = [
        FulfilmentStep::Accept,
        FulfilmentStep::Dispatch,
        FulfilmentStep::Deliver,
        FulfilmentStep::Reject,
    ];

    /// The state a step moves an order in `from` to, or `None` when it may not.
    pub fn next(self, from: OrderStatus) -> Option<OrderStatus> {
        use OrderStatus::*;
        match (self, from) {
            (FulfilmentStep::Accept, Paid) => Some(Accepted),
            (FulfilmentStep::Dispatch, Accepted) => Some(OutForDelivery),
            (FulfilmentStep::Deliver, Paid | Accepted | OutForDelivery) => Some(Fulfilled),
            (FulfilmentStep::Reject, Paid | Accepted) => Some(Rejected),
            _ => None,
        }
    }
}

/// How many days the delivery details of an ended order are kept unless configured otherwise.
pub const DEFAULT_PERSONAL_DATA_DAYS: u16 = 30;

/// The longest rejection reason.
pub const REJECTION_REASON_MAX: usize = 200;

/// How long a payment attempt owns a `payment_pending` order. Longer than the gateway's
/// timeout, so a live attempt is never taken over; after it, a retry (same order, same
/// gateway idempotency key) may take over an attempt that crashed. While it runs, the
/// bouquets' hold is extended to at least its end, so no one can take them mid-charge.
pub const PAYMENT_LEASE: Duration = Duration::from_secs(60);

/// How long a customer has to authenticate a payment (3-D Secure) from the moment the
/// gateway asks for it.
pub const AUTHENTICATION_WINDOW: Duration = Duration::from_secs(10 * 60);
/// The most an authentication may hold the bouquets past the reservation's own deadline.
pub const MAX_AUTHENTICATION_EXTENSION: Duration = Duration::from_secs(10 * 60);

/// An order's delivery photo as its JSON says it: that there is one (its keys are not shown).
fn attached<S: serde::Serializer>(
    photo: &Option<crate::photo::Photo>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_bool(photo.is_some())
}

/// Checks the shape of a list of bouquet ids: 1..=MAX, each a valid id, no repeats.
pub fn parse_bouquet_ids(raw: &[String]) -> Result<Vec<BouquetId>, Vec<FieldError>> {
    let mut errors = Vec::new();
    if raw.is_empty() {
        errors.push(FieldError::new(
            "bouquetIds",
            "must name at least one bouquet",
        ));
    }
    if raw.len() > MAX_BOUQUETS_PER_ORDER {
        errors.push(FieldError::new(
            "bouquetIds",
            format!("must name at most {MAX_BOUQUETS_PER_ORDER} bouquets"),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut ids = Vec::with_capacity(raw.len());
    for (index, text) in raw.iter().enumerate() {
        match BouquetId::parse(text) {
            Ok(id) if !seen.insert(id) => errors.push(FieldError::new(
                format!("bouquetIds/{index}"),
                "is a duplicate",
            )),
            Ok(id) => ids.push(id),
            Err(error) => errors.push(FieldError::new(format!("bouquetIds/{index}"), error)),
        }
    }
    if errors.is_empty() {
        Ok(ids)
    } else {
        Err(errors)
    }
}

impl Order {
    /// Whether `caller` may know this order exists: its customer, its shop, administrators.
    pub fn readable_by(&self, caller: &crate::identity::Identity) -> bool {
        caller.may_read(&self.customer_id, self.vendor_id)
    }

    /// Decides a reservation of `bouquets` (as read, in request order) for `customer`.
    /// Refuses bouquets that are not available at `now`, naming all of them, and orders
    /// that mix vendors or currencies.
    pub fn reserve(
        customer_id: CustomerId,
        bouquets: &[Bouquet],
        hold: Duration,
        now: Timestamp,
    ) -> Result<Order, DomainError> {
        let unavailable: Vec<BouquetId> = bouquets
            .iter()
            .filter(|b| !b.is_available(now))
            .map(|b| b.bouquet_id)
            .collect();
        if !unavailable.is_empty() {
            return Err(DomainError::BouquetUnavailable(unavailable));
        }
        let first = bouquets.first().ok_or_else(|| {
            DomainError::Invalid(vec![FieldError::new(
                "bouquetIds",
                "must name at least one bouquet",
            )])
        })?;
        if bouquets.iter().any(|b| b.vendor_id != first.vendor_id) {
            return Err(DomainError::VendorMismatch);
        }
        let mut total = Money::from_minor(0, first.price.currency());
        for bouquet in bouquets {
            total = total.checked_add(bouquet.price)?;
        }
        Ok(Order {
            order_id: OrderId::generate(),
            customer_id,
            vendor_id: first.vendor_id,
            lines: bouquets
                .iter()
                .map(|b| OrderLine {
                    bouquet_id: b.bouquet_id,
                    name: b.name.clone(),
                    price: b.price,
                    list_price: b.markdown.map(|_| b.list_price),
                })
                .collect(),
            total,
            status: OrderStatus::Reserved,
            reserved_until: now.plus(hold),
            payment_started_at: None,
            authenticating_until: None,
            payment_attempt: 0,
            charge_id: None,
            settlement: None,
            payout_account: None,
            rejection_reason: None,
            bouquets_withdrawn: false,
            refunded_at: None,
            delivery: None,
            pricing: None,
            receipt: None,
            invoice_number: None,
            fulfilled_at: None,
            delivery_photo: None,
            personal_data_days: DEFAULT_PERSONAL_DATA_DAYS,
            redacted_at: None,
            version: 1,
            created_at: now,
            updated_at: now,
        })
    }

    pub fn bouquet_ids(&self) -> impl Iterator<Item = BouquetId> + '_ {
        self.lines.iter().map(|l| l.bouquet_id)
    }

    pub fn hold_expired(&self, now: Timestamp) -> bool {
        self.reserved_until < now
    }

    /// When the expiry sweeper must look at this order (its place in the due index), while
    /// it holds bouquets: a reservation at its deadline; a payment attempt when its lease
    /// lapses or the customer's authentication window closes, whichever is later; an attempt
    /// that gave up its lease (the gateway gave no answer) at once, so a charged customer
    /// learns the outcome within one sweep instead of at the hold's end.
    pub fn due_at(&self) -> Option<Timestamp> {
        match self.status {
            OrderStatus::Reserved => Some(self.reserved_until),
            OrderStatus::PaymentPending => {
                let lease_end = self.payment_started_at.map(|t| t.plus(PAYMENT_LEASE));
                Some(
                    lease_end
                        .into_iter()
                        .chain(self.authenticating_until)
                        .max()
                        .unwrap_or(self.updated_at),
                )
            }
            // Rejected, its refund not yet confirmed: at once.
            OrderStatus::Rejected if self.refunded_at.is_none() => Some(self.updated_at),
            // Ended with personal data: when its retention ends, for the redaction.
            status if status.is_final() && self.holds_personal_data() => {
                Some(self.updated_at.plus(Duration::from_secs(
                    86_400 * u64::from(self.personal_data_days),
                )))
            }
            _ => None,
        }
    }

    /// Whether the order carries delivery details not yet redacted.
    pub fn holds_personal_data(&self) -> bool {
        self.delivery.is_some() && self.redacted_at.is_none()
    }

    /// The customer gives or changes the delivery details (already checked against the
    /// vendor's settings, and priced by them): while the order is reserved, or paid and not yet
    /// accepted. Not during a payment attempt, whose commit is conditioned on the version it
    /// claimed. A reserved order takes the new price; a paid one was charged its total, so it
    /// takes only details that cost the same, and keeps the pricing it was charged.
    pub fn set_delivery(
        &mut self,
        delivery: Delivery,
        pricing: Pricing,
        now: Timestamp,
    ) -> Result<(), DomainError> {
        match self.effective_status(now) {
            OrderStatus::Reserved => self.price(pricing)?,
            OrderStatus::Paid => {
                let charged = self.pricing.as_ref().map(|p| p.delivery_fee);
                if charged.is_some_and(|fee| fee != pricing.delivery_fee) {
                    return Err(DomainError::DeliveryFeeChanged {
                        charged: charged.map(|fee| fee.amount()).unwrap_or_default(),
                        new: pricing.delivery_fee.amount(),
                    });
                }
            }
            OrderStatus::PaymentPending => return Err(DomainError::PaymentInProgress),
            status => return Err(DomainError::OrderInvalidState(status)),
        }
        self.delivery = Some(delivery);
        self.transition(self.status, now);
        Ok(())
    }

    /// The bouquets' sum, as reserved.
    pub fn lines_total(&self) -> Result<Money, DomainError> {
        let currency = self.total.currency();
        self.lines
            .iter()
            .try_fold(Money::from_minor(0, currency), |sum, line| {
                sum.checked_add(line.price)
            })
            .map_err(DomainError::from)
    }

    /// Sets the pricing: the total becomes the lines plus the delivery fee, and the receipt
    /// follows.
    pub fn price(&mut self, pricing: Pricing) -> Result<(), DomainError> {
        self.total = self.lines_total()?.checked_add(pricing.delivery_fee)?;
        self.receipt = Some(pricing.receipt(self.lines.iter().map(|l| (l.name.as_str(), l.price))));
        self.pricing = Some(pricing);
        Ok(())
    }

    /// The event a change of the delivery details announces: the date only, never the
    /// personal fields (events reach analytics and browsers).
    pub fn delivery_event(&self) -> Option<EventData> {
        self.delivery
            .as_ref()
            .map(|delivery| EventData::OrderDeliveryChanged {
                order_id: self.order_id,
                customer_id: self.customer_id.clone(),
                vendor_id: self.vendor_id,
                date: delivery.date.clone(),
            })
    }

    /// Replaces the personal fields of the delivery details ([`Delivery::redacted`]) once the
    /// order has ended. `Ok(false)`: nothing to redact.
    pub fn redact(&mut self, now: Timestamp) -> Result<bool, DomainError> {
        if !self.status.is_final() {
            return Err(DomainError::OrderInvalidState(self.status));
        }
        let Some(delivery) = self
            .delivery
            .as_ref()
            .filter(|_| self.redacted_at.is_none())
        else {
            return Ok(false);
        };
        self.delivery = Some(delivery.redacted());
        self.delivery_photo = None;
        self.redacted_at = Some(now);
        self.version += 1;
        Ok(true)
    }

    /// The order with the personal fields of its delivery details replaced: what a copy kept
    /// outside the order (an idempotency record) may hold, so that erasure and redaction,
    /// which change only the order, leave no detail behind.
    pub fn without_personal_data(&self) -> Order {
        Order {
            delivery: self.delivery.as_ref().map(Delivery::redacted),
            delivery_photo: None,
            ..self.clone()
        }
    }

    /// The shop attaches `photo` as the proof of delivery (once out for delivery, or
    /// delivered, and not yet redacted); `Ok(false)` when a later upload is already shown.
    pub fn attach_delivery_photo(
        &mut self,
        photo: crate::photo::Photo,
        now: Timestamp,
    ) -> Result<bool, DomainError> {
        if !self.takes_delivery_photo() {
            return Err(DomainError::OrderInvalidState(self.status));
        }
        if !photo.replaces(self.delivery_photo.as_ref()) {
            return Ok(false);
        }
        self.delivery_photo = Some(photo);
        self.updated_at = now;
        self.version += 1;
        Ok(true)
    }

    /// Whether it ever went out for delivery (out for delivery now, or delivered since): only
    /// then can its shop have uploaded a delivery photo.
    pub fn went_out_for_delivery(&self) -> bool {
        matches!(
            self.status,
            OrderStatus::OutForDelivery | OrderStatus::Fulfilled
        )
    }

    /// Whether its shop may attach a delivery photo now: out for delivery or delivered, with
    /// the delivery details not yet redacted.
    pub fn takes_delivery_photo(&self) -> bool {
        self.went_out_for_delivery() && self.redacted_at.is_none()
    }

    /// The customer asked for erasure: an ended order is redacted now, an open one as soon
    /// as it ends (the vendor still has to deliver it). `Ok(false)`: nothing changed.
    pub fn erase_personal_data(&mut self, now: Timestamp) -> Result<bool, DomainError> {
        if self.status.is_final() {
            let redacted = self.redact(now)?;
            if redacted {
                // The order records that its customer asked (the auditor reads it).
                self.personal_data_days = 0;
            }
            return Ok(redacted);
        }
        if self.personal_data_days == 0 {
            return Ok(false);
        }
        self.personal_data_days = 0;
        self.version += 1;
        Ok(true)
    }

    /// The gateway confirmed the refund of this rejected order (once).
    pub fn refund_confirmed(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::Rejected)?;
        if self.refunded_at.is_some() {
            return Err(DomainError::OrderInvalidState(self.status));
        }
        self.refunded_at = Some(now);
        self.transition(OrderStatus::Rejected, now);
        Ok(())
    }

    /// The status a reader should see: a reservation past its deadline is expired even
    /// before the sweeper has recorded it.
    pub fn effective_status(&self, now: Timestamp) -> OrderStatus {
        match self.status {
            OrderStatus::Reserved if self.hold_expired(now) => OrderStatus::Expired,
            status => status,
        }
    }

    /// The order as a reader sees it at `now`.
    pub fn as_seen_at(&self, now: Timestamp) -> Order {
        Order {
            status: self.effective_status(now),
            ..self.clone()
        }
    }

    /// Claims the order for a payment attempt (before the gateway is called).
    /// `Ok(false)`: it is already paid, and paying twice returns the paid order. A
    /// `payment_pending` order whose attempt outlived [`PAYMENT_LEASE`] is taken over: the
    /// charge is repeated with the same gateway idempotency key, so it is made at most once.
    pub fn begin_payment(&mut self, now: Timestamp) -> Result<bool, DomainError> {
        match self.status {
            OrderStatus::Reserved if self.hold_expired(now) => Err(DomainError::ReservationExpired),
            OrderStatus::Reserved if self.delivery.is_none() => Err(DomainError::DeliveryRequired),
            OrderStatus::Reserved => {
                self.payment_started_at = Some(now);
                self.transition(OrderStatus::PaymentPending, now);
                Ok(true)
            }
            OrderStatus::PaymentPending => match self.payment_started_at {
                Some(started) if now < started.plus(PAYMENT_LEASE) => {
                    Err(DomainError::PaymentInProgress)
                }
                _ => {
                    self.payment_started_at = Some(now);
                    self.transition(OrderStatus::PaymentPending, now);
                    Ok(true)
                }
            },
            status if status.is_sold() => Ok(false),
            OrderStatus::Expired => Err(DomainError::ReservationExpired),
            _ => Err(DomainError::OrderInvalidState(self.status)),
        }
    }

    /// Fixes the order's split at `rate` (the module [`crate::commission`]'s rule) and the
    /// shop's account it goes to (`payee`; `None`: the marketplace's own), unless it has a split
    /// for its total already: a retried or a later attempt charges what the first did.
    pub fn settle(&mut self, rate: CommissionRate, payee: Option<&str>) {
        if self.settlement.is_none_or(|s| s.gross() != self.total) {
            self.settlement = Some(rate.settle(self.total));
            self.payout_account = payee.map(str::to_owned);
        }
    }

    /// The gateway idempotency key of the current attempt.
    pub fn gateway_key(&self) -> String {
        format!("{}-{}", self.order_id, self.payment_attempt)
    }

    /// The gateway gave no definite answer: the attempt stays `payment_pending` (it may have
    /// charged) but gives up its lease, so a retry can repeat it at once with the same key.
    pub fn payment_interrupted(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::PaymentPending)?;
        self.payment_started_at = None;
        self.transition(OrderStatus::PaymentPending, now);
        Ok(())
    }

    /// The gateway asks the customer to authenticate this attempt: it stays `payment_pending`
    /// and gives up its lease (paying again repeats the same attempt), and the bouquets stay
    /// held for the authentication window, bounded to [`MAX_AUTHENTICATION_EXTENSION`] past
    /// the reservation. Returns until when.
    pub fn awaiting_authentication(&mut self, now: Timestamp) -> Result<Timestamp, DomainError> {
        self.require(OrderStatus::PaymentPending)?;
        let until = now
            .plus(AUTHENTICATION_WINDOW)
            .min(self.reserved_until.plus(MAX_AUTHENTICATION_EXTENSION))
            .max(self.reserved_until);
        self.payment_started_at = None;
        self.authenticating_until = Some(until);
        self.transition(OrderStatus::PaymentPending, now);
        Ok(until)
    }

    /// Whether the customer may still be authenticating the current attempt at `now`.
    pub fn authenticating(&self, now: Timestamp) -> bool {
        self.status == OrderStatus::PaymentPending
            && self.authenticating_until.is_some_and(|until| now <= until)
    }

    /// Until when the bouquets are held while this payment attempt runs.
    pub fn payment_hold_until(&self, now: Timestamp) -> Timestamp {
        self.reserved_until.max(now.plus(PAYMENT_LEASE))
    }

    /// The gateway declined: back to `reserved`, the hold as it was.
    pub fn payment_declined(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::PaymentPending)?;
        self.payment_started_at = None;
        self.authenticating_until = None;
        self.payment_attempt += 1;
        self.transition(OrderStatus::Reserved, now);
        Ok(())
    }

    pub fn payment_succeeded(
        &mut self,
        charge_id: String,
        now: Timestamp,
    ) -> Result<(), DomainError> {
        self.require(OrderStatus::PaymentPending)?;
        self.charge_id = Some(charge_id);
        self.authenticating_until = None;
        self.transition(OrderStatus::Paid, now);
        Ok(())
    }

    /// A charged order whose bouquets could not be sold (they were lost after the attempt's
    /// lease) is refunded and ends expired.
    pub fn payment_refunded(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::PaymentPending)?;
        self.authenticating_until = None;
        self.transition(OrderStatus::Expired, now);
        Ok(())
    }

    /// Cancels a live reservation. One past its deadline reads as expired and is left to
    /// the sweeper (its bouquets may already belong to someone else).
    pub fn cancel(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::Reserved)?;
        if self.hold_expired(now) {
            return Err(DomainError::OrderInvalidState(OrderStatus::Expired));
        }
        self.transition(OrderStatus::Cancelled, now);
        Ok(())
    }

    /// Expires a reservation whose hold has passed; a payment in progress is left alone.
    pub fn expire(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.require(OrderStatus::Reserved)?;
        if !self.hold_expired(now) {
            return Err(DomainError::OrderInvalidState(self.status));
        }
        self.transition(OrderStatus::Expired, now);
        Ok(())
    }

    pub fn fulfil(&mut self, now: Timestamp) -> Result<(), DomainError> {
        self.step(FulfilmentStep::Deliver, now)
    }

    /// A vendor's step on a paid order ([`FulfilmentStep::next`]); a rejection carries its
    /// reason ([`Order::reject`]).
    pub fn step(&mut self, step: FulfilmentStep, now: Timestamp) -> Result<(), DomainError> {
        let next = step
            .next(self.status)
            .ok_or(DomainError::OrderInvalidState(self.status))?;
        if next == OrderStatus::Fulfilled {
            self.fulfilled_at = Some(now);
        }
        self.transition(next, now);
        Ok(())
    }

    /// The vendor turns the paid order down, saying why (1 to 200 characters): the customer
    /// is refunded and the bouquets released.
    pub fn reject(
        &mut self,
        reason: &str,
        withdraw: bool,
        now: Timestamp,
    ) -> Result<(), DomainError> {
        let reason = crate::text::clean(reason, 1, REJECTION_REASON_MAX, false).map_err(|e| {
            DomainError::Invalid(vec![crate::validation::FieldError::new("reason", e)])
        })?;
        self.step(FulfilmentStep::Reject, now)?;
        self.rejection_reason = Some(reason);
        self.bouquets_withdrawn = withdraw;
        Ok(())
    }

    /// The event a transition into the current status announces (docs/contract.md, Events); `None`
    /// for the internal steps of a payment (claim, decline), which docs/contract.md names no event for.
    pub fn lifecycle_event(&self) -> Option<EventData> {
        let bouquet_ids = self.bouquet_ids().collect();
        let (order_id, customer_id, vendor_id) =
            (self.order_id, self.customer_id.clone(), self.vendor_id);
        match self.status {
            OrderStatus::Reserved if self.version == 1 => Some(EventData::OrderReserved {
                order_id,
                customer_id,
                vendor_id,
                bouquet_ids,
                total: self.total,
                reserved_until: self.reserved_until,
            }),
            OrderStatus::Paid => Some(EventData::OrderPaid {
                order_id,
                customer_id,
                vendor_id,
                bouquet_ids,
                total: self.total,
                fee: self.fee(),
                charge_id: self.charge_id.clone().unwrap_or_default(),
            }),
            OrderStatus::Cancelled => Some(EventData::OrderCancelled {
                order_id,
                customer_id,
                vendor_id,
                bouquet_ids,
            }),
            OrderStatus::Expired => Some(EventData::ReservationExpired {
                order_id,
                customer_id,
                vendor_id,
                bouquet_ids,
            }),
            OrderStatus::Accepted => Some(EventData::OrderAccepted {
                order_id,
                customer_id,
                vendor_id,
            }),
            OrderStatus::OutForDelivery => Some(EventData::OrderOutForDelivery {
                order_id,
                customer_id,
                vendor_id,
            }),
            OrderStatus::Fulfilled => Some(EventData::OrderFulfilled {
                order_id,
                customer_id,
                vendor_id,
            }),
            // Announced once, when rejected; the refund's confirmation is not an event.
            OrderStatus::Rejected if self.refunded_at.is_none() => Some(EventData::OrderRejected {
                order_id,
                customer_id,
                vendor_id,
                bouquet_ids,
                refund: self.total,
                fee_refunded: self.fee(),
                reason: self.rejection_reason.clone().unwrap_or_default(),
                bouquets_withdrawn: self.bouquets_withdrawn,
            }),
            OrderStatus::Reserved | OrderStatus::PaymentPending | OrderStatus::Rejected => None,
        }
    }

    /// The marketplace's fee of the order's split (zero before it is settled).
    pub fn fee(&self) -> Money {
        self.settlement
            .map_or(Money::from_minor(0, self.total.currency()), |s| s.fee())
    }

    fn require(&self, status: OrderStatus) -> Result<(), DomainError> {
        if self.status == status {
            Ok(())
        } else {
            Err(DomainError::OrderInvalidState(self.status))
        }
    }

    fn transition(&mut self, to: OrderStatus, now: Timestamp) {
        self.status = to;
        self.version += 1;
        self.updated_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bouquet::tests::bouquet;
    use crate::ids::VendorId;

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

    pub(crate) fn delivery() -> Delivery {
        Delivery {
            recipient_name: "Camille Martin".into(),
            recipient_phone: "+33612345678".into(),
            address: crate::delivery::Address {
                street: "12 rue des Fleurs".into(),
                postcode: "75011".into(),
                city: "Paris".into(),
                country: "FR".into(),
            },
            date: "2026-12-03".into(),
            slot: None,
            card_message: Some("Happy birthday".into()),
            contact_email: Some("ana@example.com".into()),
        }
    }

    /// Delivery at no charge and no VAT.
    fn free() -> Pricing {
        Pricing::new(
            &crate::pricing::DeliveryFees::default(),
            &crate::pricing::VatSettings::default(),
            "75011",
            false,
            crate::Currency::parse("EUR").unwrap(),
        )
    }

    /// The order as its customer completes it before paying.
    fn with_delivery(mut order: Order) -> Order {
        order.delivery = Some(delivery());
        order
    }

    #[test]
    fn payment_needs_the_delivery_details_which_change_until_the_vendor_accepts() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order = Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap();
        assert_eq!(
            order.clone().begin_payment(T0),
            Err(DomainError::DeliveryRequired)
        );
        order.set_delivery(delivery(), free(), T0).unwrap();
        assert_eq!(order.version, 2, "a change of its own version");
        assert_eq!(order.status, OrderStatus::Reserved);
        assert!(matches!(
            order.delivery_event(),
            Some(EventData::OrderDeliveryChanged { ref date, .. }) if date == "2026-12-03"
        ));
        order.begin_payment(T0).unwrap();
        assert_eq!(
            order.clone().set_delivery(delivery(), free(), T0),
            Err(DomainError::PaymentInProgress),
            "not under a payment attempt's claim"
        );
        order.payment_succeeded("ch_1".into(), T0).unwrap();
        order.set_delivery(delivery(), free(), T0).unwrap();
        order.step(FulfilmentStep::Accept, T0).unwrap();
        assert_eq!(
            order.set_delivery(delivery(), free(), T0),
            Err(DomainError::OrderInvalidState(OrderStatus::Accepted))
        );
        let late = T0.plus(DEFAULT_HOLD).plus(Duration::from_millis(1));
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut expired = Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap();
        assert_eq!(
            expired.set_delivery(delivery(), free(), late),
            Err(DomainError::OrderInvalidState(OrderStatus::Expired))
        );
    }

    #[test]
    fn a_delivery_photo_is_taken_once_dispatched_shown_as_attached_and_redacted() {
        let photo = |id: &str| crate::photo::Photo {
            upload_id: crate::ids::UploadId::parse(id).unwrap(),
            width: 640,
            height: 480,
            variants: vec![crate::photo::PhotoVariant {
                width: 640,
                height: 480,
                path: "delivered/O/U/640.jpg".into(),
            }],
        };
        let first = photo("01JAAAAAAAAAAAAAAAAAAAAAAA");
        let later = photo("01JBBBBBBBBBBBBBBBBBBBBBBB");
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        order.begin_payment(T0).unwrap();
        order.payment_succeeded("ch_1".into(), T0).unwrap();
        assert_eq!(
            order.attach_delivery_photo(first.clone(), T0),
            Err(DomainError::OrderInvalidState(OrderStatus::Paid))
        );
        let json = serde_json::to_value(&order).unwrap();
        assert!(json.get("deliveryPhotoAttached").is_none(), "{json}");
        order.fulfil(T0).unwrap();
        let version = order.version;
        assert_eq!(order.attach_delivery_photo(later.clone(), T0), Ok(true));
        assert_eq!(
            order.attach_delivery_photo(first, T0),
            Ok(false),
            "an earlier upload never replaces a later one"
        );
        assert_eq!(
            (order.version, order.delivery_photo.as_ref()),
            (version + 1, Some(&later))
        );
        // Lists say that there is one; no key of it is ever in the order's JSON.
        let json = serde_json::to_value(&order).unwrap();
        assert_eq!(json["deliveryPhotoAttached"], true);
        assert!(!json.to_string().contains("delivered/"), "{json}");
        assert_eq!(order.redact(T0), Ok(true));
        assert_eq!(order.delivery_photo, None);
        assert!(!order.takes_delivery_photo());
        assert!(serde_json::to_value(&order)
            .unwrap()
            .get("deliveryPhotoAttached")
            .is_none());
    }

    #[test]
    fn personal_data_is_redacted_its_retention_after_the_order_ends_or_on_erasure() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        order.begin_payment(T0).unwrap();
        order.payment_succeeded("ch_1".into(), T0).unwrap();
        assert_eq!(order.due_at(), None, "open: kept");
        assert_eq!(
            order.clone().redact(T0),
            Err(DomainError::OrderInvalidState(OrderStatus::Paid)),
            "the vendor still delivers it"
        );
        let mut erased = order.clone();
        assert_eq!(erased.erase_personal_data(T0), Ok(true));
        assert!(erased.holds_personal_data(), "kept until delivered");
        assert_eq!(erased.erase_personal_data(T0), Ok(false), "once");
        let delivered_at = T0.plus(Duration::from_secs(3600));
        erased.fulfil(delivered_at).unwrap();
        assert_eq!(
            erased.due_at(),
            Some(delivered_at),
            "erased: due when it ends"
        );
        order.fulfil(delivered_at).unwrap();
        assert_eq!(
            order.due_at(),
            Some(delivered_at.plus(Duration::from_secs(30 * 86_400))),
            "the retention after it ends"
        );
        let version = order.version;
        assert_eq!(order.redact(delivered_at), Ok(true));
        let kept = order.delivery.clone().unwrap();
        assert_eq!(kept.recipient_name, crate::delivery::REDACTED);
        assert_eq!(kept.recipient_phone, crate::delivery::REDACTED);
        assert_eq!(kept.address.street, crate::delivery::REDACTED);
        assert_eq!(
            kept.card_message.as_deref(),
            Some(crate::delivery::REDACTED)
        );
        assert_eq!(
            (kept.date.as_str(), kept.address.city.as_str()),
            ("2026-12-03", "Paris")
        );
        assert_eq!(order.version, version + 1);
        assert_eq!(order.due_at(), None, "redacted: out of the index");
        assert_eq!(order.redact(delivered_at), Ok(false), "once");
        let text = serde_json::to_string(&order).unwrap();
        assert!(
            !text.contains("Camille")
                && !text.contains("+336")
                && !text.contains("Fleurs")
                && !text.contains("ana@")
        );
    }

    fn customer() -> CustomerId {
        CustomerId::parse("customer-1").unwrap()
    }

    #[test]
    fn reserves_for_fifteen_minutes_and_totals_the_lines() {
        let vendor = VendorId::generate();
        let bouquets = [bouquet(vendor, 2450, T0), bouquet(vendor, 1000, T0)];
        let order = Order::reserve(customer(), &bouquets, DEFAULT_HOLD, T0).unwrap();
        assert_eq!(order.status, OrderStatus::Reserved);
        assert_eq!(order.total.amount(), "34.50");
        assert_eq!(order.reserved_until, T0.plus(Duration::from_secs(900)));
        assert_eq!(order.vendor_id, vendor);
    }

    #[test]
    fn refuses_mixed_vendors_and_names_every_unavailable_bouquet() {
        let a = bouquet(VendorId::generate(), 100, T0);
        let b = bouquet(VendorId::generate(), 100, T0);
        assert_eq!(
            Order::reserve(customer(), &[a.clone(), b.clone()], DEFAULT_HOLD, T0),
            Err(DomainError::VendorMismatch)
        );
        let mut held = [a.clone(), a.clone()];
        held[1].bouquet_id = BouquetId::generate();
        for h in &mut held {
            h.reserve(OrderId::generate(), T0.plus(DEFAULT_HOLD), T0)
                .unwrap();
        }
        let ids = held.iter().map(|h| h.bouquet_id).collect();
        assert_eq!(
            Order::reserve(customer(), &held, DEFAULT_HOLD, T0),
            Err(DomainError::BouquetUnavailable(ids))
        );
    }

    #[test]
    fn every_vendor_step_from_every_state_is_allowed_or_refused_by_one_table() {
        use OrderStatus::*;
        let allowed = [
            (FulfilmentStep::Accept, Paid, Accepted),
            (FulfilmentStep::Dispatch, Accepted, OutForDelivery),
            (FulfilmentStep::Deliver, Paid, Fulfilled),
            (FulfilmentStep::Deliver, Accepted, Fulfilled),
            (FulfilmentStep::Deliver, OutForDelivery, Fulfilled),
            (FulfilmentStep::Reject, Paid, Rejected),
            (FulfilmentStep::Reject, Accepted, Rejected),
        ];
        let b = bouquet(VendorId::generate(), 100, T0);
        let reserved = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        for step in FulfilmentStep::ALL {
            for from in OrderStatus::ALL {
                let expected = allowed
                    .iter()
                    .find(|(s, f, _)| *s == step && *f == from)
                    .map(|(_, _, to)| *to);
                let mut order = Order {
                    status: from,
                    ..reserved.clone()
                };
                let result = if step == FulfilmentStep::Reject {
                    order.reject("No peonies left", false, T0)
                } else {
                    order.step(step, T0)
                };
                match expected {
                    Some(to) => {
                        assert_eq!(result, Ok(()), "{step:?} from {from}");
                        assert_eq!(order.status, to);
                        assert_eq!(order.version, reserved.version + 1, "one version per step");
                        assert!(order.lifecycle_event().is_some(), "{to} announces itself");
                    }
                    None => {
                        assert_eq!(
                            result,
                            Err(DomainError::OrderInvalidState(from)),
                            "{step:?} from {from}"
                        );
                        assert_eq!(order.version, reserved.version, "nothing moved");
                    }
                }
            }
        }
        let mut paid = Order {
            status: Paid,
            ..reserved
        };
        assert!(matches!(
            paid.reject(" ", false, T0),
            Err(DomainError::Invalid(_))
        ));
        assert!(matches!(
            paid.reject(&"x".repeat(201), false, T0),
            Err(DomainError::Invalid(_))
        ));
        assert_eq!(
            paid.status, Paid,
            "a rejection without a reason moves nothing"
        );
        paid.reject("The shop is closed", false, T0).unwrap();
        assert_eq!(paid.rejection_reason.as_deref(), Some("The shop is closed"));
    }

    #[test]
    fn is_due_for_the_sweeper_at_its_deadline_or_when_a_payment_attempt_lapses() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let reserved = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        assert_eq!(reserved.due_at(), Some(reserved.reserved_until));
        let at = T0.plus(Duration::from_secs(30));
        let mut paying = reserved.clone();
        paying.begin_payment(at).unwrap();
        assert_eq!(
            paying.due_at(),
            Some(at.plus(PAYMENT_LEASE)),
            "at the lease's end"
        );
        let mut interrupted = paying.clone();
        interrupted.payment_interrupted(at).unwrap();
        assert_eq!(
            interrupted.due_at(),
            Some(at),
            "at once: the lease is given up"
        );
        let mut authenticating = paying.clone();
        let until = authenticating.awaiting_authentication(at).unwrap();
        assert_eq!(
            authenticating.due_at(),
            Some(until),
            "when the window closes"
        );
        let mut paid = paying;
        paid.payment_succeeded("ch_1".into(), at).unwrap();
        assert_eq!(paid.due_at(), None, "holds nothing: out of the index");
        let later = at.plus(Duration::from_secs(3600));
        paid.reject("Out of stock", false, later).unwrap();
        assert_eq!(
            paid.due_at(),
            Some(later),
            "rejected: its refund is due at once"
        );
        paid.refund_confirmed(later).unwrap();
        assert_eq!(
            paid.due_at(),
            Some(later.plus(Duration::from_secs(30 * 86_400))),
            "refunded: due again only for its personal data's redaction"
        );
        assert_eq!(
            paid.lifecycle_event(),
            None,
            "the confirmation announces nothing"
        );
        assert!(paid.refund_confirmed(later).is_err(), "once");
    }

    #[test]
    fn authentication_holds_the_bouquets_for_its_window_bounded_past_the_reservation() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let reserved = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        let deadline = reserved.reserved_until;
        let minutes = |m: u64| Duration::from_secs(m * 60);
        // (when the gateway asks, until when the hold lasts)
        for (asked, until) in [
            (T0, deadline),                               // the window ends before the hold
            (T0.plus(minutes(12)), T0.plus(minutes(22))), // the window, past the hold
            (
                T0.plus(minutes(14)),
                deadline
                    .plus(MAX_AUTHENTICATION_EXTENSION)
                    .min(T0.plus(minutes(24))),
            ),
            (deadline, deadline.plus(MAX_AUTHENTICATION_EXTENSION)), // bounded
        ] {
            let mut order = reserved.clone();
            order.begin_payment(asked).unwrap();
            assert_eq!(
                order.awaiting_authentication(asked),
                Ok(until),
                "asked at {asked:?}"
            );
            assert!(
                order.authenticating(until)
                    && !order.authenticating(until.plus(minutes(0)).plus(Duration::from_millis(1)))
            );
            assert_eq!(
                order.payment_started_at, None,
                "the lease is given up: paying again repeats it"
            );
            assert!(order.clone().begin_payment(asked).is_ok());
            order.payment_declined(asked).unwrap();
            assert_eq!(order.authenticating_until, None);
        }
        assert_eq!(
            reserved.clone().awaiting_authentication(T0),
            Err(DomainError::OrderInvalidState(OrderStatus::Reserved))
        );
    }

    #[test]
    fn payment_needs_a_live_hold_and_is_idempotent_once_paid() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        let late = T0.plus(DEFAULT_HOLD).plus(Duration::from_millis(1));
        assert_eq!(
            order.clone().begin_payment(late),
            Err(DomainError::ReservationExpired)
        );
        assert_eq!(order.begin_payment(T0), Ok(true));
        order.payment_declined(T0).unwrap();
        assert_eq!(order.status, OrderStatus::Reserved);
        order.begin_payment(T0).unwrap();
        order.payment_succeeded("ch_1".into(), T0).unwrap();
        assert_eq!(
            order.begin_payment(late),
            Ok(false),
            "paying a paid order returns it"
        );
        assert_eq!(
            order.cancel(T0),
            Err(DomainError::OrderInvalidState(OrderStatus::Paid))
        );
        order.fulfil(T0).unwrap();
        assert_eq!(order.status, OrderStatus::Fulfilled);
    }

    #[test]
    fn expiry_waits_for_the_deadline() {
        let b = bouquet(VendorId::generate(), 100, T0);
        let mut order = with_delivery(Order::reserve(customer(), &[b], DEFAULT_HOLD, T0).unwrap());
        assert!(order.expire(T0.plus(DEFAULT_HOLD)).is_err());
        order
            .expire(T0.plus(DEFAULT_HOLD).plus(Duration::from_millis(1)))
            .unwrap();
        assert_eq!(order.status, OrderStatus::Expired);
        assert_eq!(
            order.begin_payment(T0),
            Err(DomainError::ReservationExpired)
        );
    }

    #[test]
    fn bouquet_id_lists_are_checked() {
        assert!(parse_bouquet_ids(&[]).is_err());
        let id = BouquetId::generate().to_string();
        let errors = parse_bouquet_ids(&[id.clone(), id.clone(), "x;DROP".into()]).unwrap_err();
        assert_eq!(
            errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(),
            ["bouquetIds/1", "bouquetIds/2"]
        );
        let many: Vec<String> = (0..21).map(|_| BouquetId::generate().to_string()).collect();
        assert!(parse_bouquet_ids(&many).is_err());
        assert_eq!(parse_bouquet_ids(&many[..20]).unwrap().len(), 20);
    }
}
