//! The marketplace's pure domain.
//!
//! Everything here is deterministic: time comes in through a [`Clock`], ids are values, and
//! every rule is a function that returns a decision. Adapters (DynamoDB, HTTP) turn those
//! decisions into conditional writes and responses; nothing in this crate does I/O.

pub mod bouquet;
pub mod care;
pub mod cart;
pub mod channels;
pub mod checkout;
pub mod clock;
pub mod commission;
pub mod delivery;
pub mod error;
pub mod events;
pub mod freshness;
pub mod history;
pub mod identity;
pub mod ids;
pub mod limits;
pub mod markdown;
pub mod money;
pub mod order;
mod order_status;
pub mod photo;
pub mod pricing;
pub mod rating;
pub mod review;
pub mod search;
pub mod text;
pub mod validation;
pub mod vase;
pub mod vendor;

pub use bouquet::{Bouquet, BouquetStatus};
pub use cart::Cart;
pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use error::DomainError;
pub use ids::{BouquetId, CustomerId, EventId, OrderId, ReviewId, UploadId, VaseId, VendorId};
pub use money::{Currency, Money};
pub use order::{Order, OrderLine, OrderStatus};
pub use validation::{FieldError, Validation};
pub use vase::{Connection, Reading, Vase, VaseMessage};
pub use vendor::Vendor;
