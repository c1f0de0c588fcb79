//! What the domain refuses, and why. The HTTP pipeline maps each variant to one stable
//! problem code; nothing else decides a status.

use crate::ids::BouquetId;
use crate::money::MoneyError;
use crate::order_status::OrderStatus;
use crate::validation::FieldError;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error("bouquets are not available: {}", list(.0))]
    BouquetUnavailable(Vec<BouquetId>),
    #[error("the bouquet can only be changed or withdrawn while it is available")]
    BouquetNotAvailableForChange,
    #[error("all bouquets of an order must come from one vendor")]
    VendorMismatch,
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error("the reservation has expired")]
    ReservationExpired,
    #[error("a payment for this order is in progress")]
    PaymentInProgress,
    #[error("the payment was declined")]
    PaymentDeclined,
    #[error("the cart holds bouquets of one vendor only")]
    CartVendorMismatch,
    #[error("the cart is full")]
    CartFull,
    #[error("the cart is empty")]
    CartEmpty,
    #[error("the order needs its delivery details before it can be paid")]
    DeliveryRequired,
    /// The details' date is no longer taken (its day or the same-day cut-off passed).
    #[error("the delivery date is no longer available: {0}; give another date")]
    DeliveryDateLapsed(String),
    /// A paid order's new delivery details would cost another fee than the one charged.
    #[error("the order was paid with a delivery fee of {charged}; these details cost {new}: keep the zone, or cancel and order again")]
    DeliveryFeeChanged { charged: String, new: String },
    #[error("the order is {0} and cannot do that")]
    OrderInvalidState(OrderStatus),
}

fn list(ids: &[BouquetId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
