//! Domain events. Each is written as an outbox item in the same transaction as the change it
//! describes, then published to EventBridge with detail-type = [`EventData::name`].

use serde::Serialize;

use crate::care::Condition;
use crate::clock::Timestamp;
use crate::freshness::Reading;
use crate::ids::{BouquetId, CustomerId, EventId, OrderId, VaseId, VendorId};
use crate::markdown::MarkdownStep;
use crate::money::Money;
use crate::photo::Photo;
use crate::rating::Rating;

/// The payload of each event, by name (docs/contract.md, Events).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum EventData {
    VendorOnboarded {
        vendor_id: VendorId,
        name: String,
    },
    /// An administrator suspended the shop: its bouquets left the catalogue.
    VendorSuspended {
        vendor_id: VendorId,
    },
    /// The shop is back: its bouquets on sale again.
    VendorReinstated {
        vendor_id: VendorId,
    },
    /// The PSP changed what the shop's payout account may do: with charges enabled its
    /// bouquets can be reserved.
    VendorPayoutsChanged {
        vendor_id: VendorId,
        charges_enabled: bool,
        payouts_enabled: bool,
    },
    /// An administrator set the shop's commission (`None`: the marketplace's again).
    VendorCommissionChanged {
        vendor_id: VendorId,
        commission_basis_points: Option<u16>,
    },
    /// The vendor changed where, when and how far ahead it delivers (the settings are
    /// public: the checkout shows them).
    DeliverySettingsChanged {
        vendor_id: VendorId,
        version: u64,
    },
    BouquetListed {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        name: String,
        price: Money,
        vase_id: Option<VaseId>,
    },
    BouquetChanged {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        name: String,
        description: String,
        price: Money,
    },
    BouquetWithdrawn {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
    },
    /// The bouquet shows a new photo (its sizes, served from the edge).
    BouquetPhotoChanged {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        photo: Photo,
    },
    OrderReserved {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        bouquet_ids: Vec<BouquetId>,
        total: Money,
        reserved_until: Timestamp,
    },
    OrderPaid {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        bouquet_ids: Vec<BouquetId>,
        total: Money,
        /// The marketplace's commission on `total` (the rest is the shop's).
        fee: Money,
        charge_id: String,
    },
    OrderCancelled {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        bouquet_ids: Vec<BouquetId>,
    },
    ReservationExpired {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        bouquet_ids: Vec<BouquetId>,
    },
    /// The customer gave or changed the delivery details: the date only (the rest is
    /// personal data, read from the order by those allowed).
    OrderDeliveryChanged {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        date: String,
    },
    OrderAccepted {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
    },
    OrderOutForDelivery {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
    },
    OrderFulfilled {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
    },
    /// The vendor turned the paid order down: `refund` goes back to the customer and the
    /// bouquets are released.
    OrderRejected {
        order_id: OrderId,
        customer_id: CustomerId,
        vendor_id: VendorId,
        bouquet_ids: Vec<BouquetId>,
        refund: Money,
        /// The commission given back with the refund.
        fee_refunded: Money,
        reason: String,
        /// The bouquets were withdrawn, not put back on sale.
        bouquets_withdrawn: bool,
    },
    VaseRegistered {
        vase_id: VaseId,
        vendor_id: VendorId,
    },
    VaseCameOnline {
        vase_id: VaseId,
        vendor_id: VendorId,
        last_heartbeat_at: Timestamp,
    },
    VaseWentOffline {
        vase_id: VaseId,
        vendor_id: VendorId,
        last_heartbeat_at: Timestamp,
    },
    /// The vase got a new certificate; the ones it had are revoked.
    VaseCertificateRotated {
        vase_id: VaseId,
        vendor_id: VendorId,
    },
    /// The vase is gone: its item deleted, its thing and certificates removed.
    VaseDecommissioned {
        vase_id: VaseId,
        vendor_id: VendorId,
    },
    /// The customer of a delivered order reviewed it (issue 42).
    ReviewWritten {
        order_id: OrderId,
        vendor_id: VendorId,
        stars: u8,
    },
    /// Its author changed it within the edit window; `visible`: it counts in the rating.
    ReviewEdited {
        order_id: OrderId,
        vendor_id: VendorId,
        previous_stars: u8,
        stars: u8,
        visible: bool,
    },
    /// The shop answered the review; its author is told.
    ReviewAnswered {
        order_id: OrderId,
        vendor_id: VendorId,
        customer_id: CustomerId,
    },
    /// An administrator hid the review; its author is told why.
    ReviewHidden {
        order_id: OrderId,
        vendor_id: VendorId,
        customer_id: CustomerId,
        stars: u8,
        reason: String,
    },
    /// The shop attached a photo of the delivered bouquets (proof of delivery): its readers
    /// see it on the order, through signed URLs.
    OrderDeliveryPhotoAttached {
        order_id: OrderId,
        vendor_id: VendorId,
        customer_id: CustomerId,
    },
    /// A shop's rating moved (its projector applied a review event): the whole rating, at
    /// its version, so a reader needs only the latest.
    ShopRatingChanged {
        vendor_id: VendorId,
        rating: Rating,
    },
    BouquetFreshnessChanged {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        vase_id: VaseId,
        previous: Option<u8>,
        freshness: u8,
        measured_at: Timestamp,
    },
    /// The shop's markdown rule lowered the bouquet's price as its freshness fell.
    BouquetRepriced {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        list_price: Money,
        price: Money,
        step: MarkdownStep,
        freshness: u8,
    },
    /// Its freshness fell below the shop's withdrawal score: off the storefront.
    BouquetPastItsBest {
        bouquet_id: BouquetId,
        vendor_id: VendorId,
        vase_id: VaseId,
        freshness: u8,
    },
    /// A vase's reading (or its silence) met a care condition: one alert per vase and
    /// condition while it lasts. `aggregateId` is the alert.
    VaseAlertOpened {
        alert_id: String,
        vase_id: VaseId,
        vendor_id: VendorId,
        condition: Condition,
        /// What the vase read (none for `offline`).
        reading: Option<Reading>,
        opened_at: Timestamp,
    },
    /// The condition cleared for the shop's clear time (or the vase came back online).
    VaseAlertClosed {
        alert_id: String,
        vase_id: VaseId,
        vendor_id: VendorId,
        condition: Condition,
        opened_at: Timestamp,
        closed_at: Timestamp,
    },
    /// The shop changed its vase rules (markdown and care thresholds).
    VaseRulesChanged {
        vendor_id: VendorId,
        version: u64,
    },
    /// A member of the shop saw the alert.
    VaseAlertAcknowledged {
        alert_id: String,
        vase_id: VaseId,
        vendor_id: VendorId,
        condition: Condition,
        acknowledged_by: String,
        acknowledged_at: Timestamp,
    },
}

impl EventData {
    /// Every event name (the EventBridge detail-types); `infra/events/{name}.json` is its schema.
    pub const NAMES: [&'static str; 37] = [
        "VendorOnboarded",
        "VendorSuspended",
        "VendorReinstated",
        "VendorPayoutsChanged",
        "VendorCommissionChanged",
        "DeliverySettingsChanged",
        "BouquetListed",
        "BouquetChanged",
        "BouquetWithdrawn",
        "BouquetPhotoChanged",
        "OrderReserved",
        "OrderPaid",
        "OrderCancelled",
        "ReservationExpired",
        "OrderDeliveryChanged",
        "OrderAccepted",
        "OrderOutForDelivery",
        "OrderFulfilled",
        "OrderRejected",
        "VaseRegistered",
        "VaseCameOnline",
        "VaseWentOffline",
        "VaseCertificateRotated",
        "VaseDecommissioned",
        "BouquetFreshnessChanged",
        "ReviewWritten",
        "ReviewEdited",
        "ReviewAnswered",
        "ReviewHidden",
        "ShopRatingChanged",
        "OrderDeliveryPhotoAttached",
        "BouquetRepriced",
        "BouquetPastItsBest",
        "VaseAlertOpened",
        "VaseAlertClosed",
        "VaseAlertAcknowledged",
        "VaseRulesChanged",
    ];

    pub fn name(&self) -> &'static str {
        match self {
            EventData::VendorOnboarded { .. } => "VendorOnboarded",
            EventData::VendorSuspended { .. } => "VendorSuspended",
            EventData::VendorReinstated { .. } => "VendorReinstated",
            EventData::VendorPayoutsChanged { .. } => "VendorPayoutsChanged",
            EventData::VendorCommissionChanged { .. } => "VendorCommissionChanged",
            EventData::DeliverySettingsChanged { .. } => "DeliverySettingsChanged",
            EventData::BouquetListed { .. } => "BouquetListed",
            EventData::BouquetChanged { .. } => "BouquetChanged",
            EventData::BouquetWithdrawn { .. } => "BouquetWithdrawn",
            EventData::BouquetPhotoChanged { .. } => "BouquetPhotoChanged",
            EventData::OrderReserved { .. } => "OrderReserved",
            EventData::OrderPaid { .. } => "OrderPaid",
            EventData::OrderCancelled { .. } => "OrderCancelled",
            EventData::ReservationExpired { .. } => "ReservationExpired",
            EventData::OrderDeliveryChanged { .. } => "OrderDeliveryChanged",
            EventData::OrderAccepted { .. } => "OrderAccepted",
            EventData::OrderOutForDelivery { .. } => "OrderOutForDelivery",
            EventData::OrderFulfilled { .. } => "OrderFulfilled",
            EventData::OrderRejected { .. } => "OrderRejected",
            EventData::VaseRegistered { .. } => "VaseRegistered",
            EventData::VaseCameOnline { .. } => "VaseCameOnline",
            EventData::VaseWentOffline { .. } => "VaseWentOffline",
            EventData::VaseCertificateRotated { .. } => "VaseCertificateRotated",
            EventData::VaseDecommissioned { .. } => "VaseDecommissioned",
            EventData::BouquetFreshnessChanged { .. } => "BouquetFreshnessChanged",
            EventData::ReviewWritten { .. } => "ReviewWritten",
            EventData::ReviewEdited { .. } => "ReviewEdited",
            EventData::ReviewAnswered { .. } => "ReviewAnswered",
            EventData::ReviewHidden { .. } => "ReviewHidden",
            EventData::ShopRatingChanged { .. } => "ShopRatingChanged",
            EventData::OrderDeliveryPhotoAttached { .. } => "OrderDeliveryPhotoAttached",
            EventData::BouquetRepriced { .. } => "BouquetRepriced",
            EventData::BouquetPastItsBest { .. } => "BouquetPastItsBest",
            EventData::VaseAlertOpened { .. } => "VaseAlertOpened",
            EventData::VaseAlertClosed { .. } => "VaseAlertClosed",
            EventData::VaseAlertAcknowledged { .. } => "VaseAlertAcknowledged",
            EventData::VaseRulesChanged { .. } => "VaseRulesChanged",
        }
    }
}

/// Who decides the change an event records. A shop's own writes ([`Actor::Shop`]) are what a
/// suspension refuses; the steps of its open orders ([`Actor::ShopOpenOrder`]) go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// The shop of its own accord: listing, edits, photos, vases, settings, answers.
    Shop,
    /// The shop moving an order it already has: accept, dispatch, deliver, reject.
    ShopOpenOrder,
    Customer,
    Administrator,
    /// The marketplace itself, a vase or a payment provider: schedules, readings, webhooks.
    System,
}

impl Actor {
    /// Who decides the event named `name`; `None` for a name that is not an event. Every name
    /// in [`EventData::NAMES`] has one (a test holds it), so a new event is classified when
    /// it is added, and the auditor's list of shop writes is this, not a copy.
    pub fn of(name: &str) -> Option<Actor> {
        Some(match name {
            "BouquetListed"
            | "BouquetChanged"
            | "BouquetWithdrawn"
            | "BouquetPhotoChanged"
            | "DeliverySettingsChanged"
            | "VaseRegistered"
            | "VaseCertificateRotated"
            | "VaseDecommissioned"
            | "VaseAlertAcknowledged"
            | "VaseRulesChanged"
            | "ReviewAnswered" => Actor::Shop,
            "OrderAccepted"
            | "OrderOutForDelivery"
            | "OrderFulfilled"
            | "OrderRejected"
            | "OrderDeliveryPhotoAttached" => Actor::ShopOpenOrder,
            "OrderReserved"
            | "OrderPaid"
            | "OrderCancelled"
            | "OrderDeliveryChanged"
            | "ReviewWritten"
            | "ReviewEdited" => Actor::Customer,
            "VendorOnboarded"
            | "VendorSuspended"
            | "VendorReinstated"
            | "VendorCommissionChanged"
            | "ReviewHidden" => Actor::Administrator,
            "VendorPayoutsChanged"
            | "ReservationExpired"
            | "VaseCameOnline"
            | "VaseWentOffline"
            | "BouquetFreshnessChanged"
            | "BouquetRepriced"
            | "BouquetPastItsBest"
            | "VaseAlertOpened"
            | "VaseAlertClosed"
            | "ShopRatingChanged" => Actor::System,
            _ => return None,
        })
    }
}

/// One event with its envelope: the EventBridge detail.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainEvent {
    pub event_id: EventId,
    pub aggregate_id: String,
    pub aggregate_version: u64,
    pub occurred_at: Timestamp,
    pub correlation_id: String,
    pub data: EventData,
}

impl DomainEvent {
    pub fn new(
        aggregate_id: impl ToString,
        aggregate_version: u64,
        occurred_at: Timestamp,
        correlation_id: &str,
        data: EventData,
    ) -> Self {
        Self {
            event_id: EventId::generate(),
            aggregate_id: aggregate_id.to_string(),
            aggregate_version,
            occurred_at,
            correlation_id: correlation_id.to_owned(),
            data,
        }
    }

    pub fn name(&self) -> &'static str {
        self.data.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_says_who_decides_it() {
        for name in EventData::NAMES {
            assert!(Actor::of(name).is_some(), "{name} has no actor");
        }
        assert_eq!(Actor::of("NoSuchEvent"), None);
        assert_eq!(Actor::of("ReviewAnswered"), Some(Actor::Shop));
        assert_eq!(
            Actor::of("OrderDeliveryPhotoAttached"),
            Some(Actor::ShopOpenOrder)
        );
    }
}
