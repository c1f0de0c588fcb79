//! The states of an order, on their own: errors and events name them without depending on
//! the order's rules.

use std::fmt;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderStatus {
    Reserved,
    PaymentPending,
    Paid,
    /// The vendor took the paid order on (issue 30).
    Accepted,
    OutForDelivery,
    /// Delivered (the name is the API's since before the delivery steps).
    Fulfilled,
    /// The vendor turned a paid order down; its customer is refunded.
    Rejected,
    Cancelled,
    Expired,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 9] = [
        OrderStatus::Reserved,
        OrderStatus::PaymentPending,
        OrderStatus::Paid,
        OrderStatus::Accepted,
        OrderStatus::OutForDelivery,
        OrderStatus::Fulfilled,
        OrderStatus::Rejected,
        OrderStatus::Cancelled,
        OrderStatus::Expired,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OrderStatus::Reserved => "reserved",
            OrderStatus::PaymentPending => "payment_pending",
            OrderStatus::Paid => "paid",
            OrderStatus::Accepted => "accepted",
            OrderStatus::OutForDelivery => "out_for_delivery",
            OrderStatus::Fulfilled => "fulfilled",
            OrderStatus::Rejected => "rejected",
            OrderStatus::Cancelled => "cancelled",
            OrderStatus::Expired => "expired",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the order was paid for and not rejected: its bouquets are sold to it.
    pub fn is_sold(self) -> bool {
        matches!(
            self,
            OrderStatus::Paid
                | OrderStatus::Accepted
                | OrderStatus::OutForDelivery
                | OrderStatus::Fulfilled
        )
    }

    /// Whether nothing more happens to the order: the clock of its personal data's retention
    /// starts here.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            OrderStatus::Fulfilled
                | OrderStatus::Rejected
                | OrderStatus::Cancelled
                | OrderStatus::Expired
        )
    }

    /// Whether the order still holds its bouquets.
    pub fn holds_bouquets(self) -> bool {
        matches!(self, OrderStatus::Reserved | OrderStatus::PaymentPending)
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for OrderStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}
