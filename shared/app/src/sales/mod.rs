//! Orders and checkout: the cart, the reservation, the payment, the florist's steps, the
//! delivery details, the sweeper of held orders, the invoice, the mails and the proof of
//! delivery; and the reads of an order.

pub mod cart;
pub mod checkout;
pub mod delivery;
pub mod expiry;
pub mod invoice;
pub mod notifications;
pub mod orders;
pub mod payment;
pub mod proof_of_delivery;
pub mod queries;
pub mod reservation;
