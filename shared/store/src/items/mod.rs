//! The stored form of each entity and its conversion to and from the domain, one module per
//! item kind. Attribute names are camelCase; times are epoch milliseconds (numbers, so
//! conditions can compare).

mod bouquet;
mod order;
mod reading;
mod vendor;

pub use bouquet::BouquetItem;
pub use order::OrderItem;
pub(crate) use reading::ReadingFields;
pub use vendor::VendorItem;

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::{Currency, Money};

use bouquet_domain::commission::CommissionRate;

/// A stored commission, in basis points.
fn rate(bps: u16) -> Result<CommissionRate, StoreError> {
    CommissionRate::from_basis_points(bps.into()).map_err(StoreError::corrupt)
}

use crate::error::StoreError;

pub type Item = HashMap<String, AttributeValue>;

/// An item kind as stored, read back into its domain value (pages read through it:
/// [`crate::query::QueryPage::into_page`]).
pub(crate) trait Stored {
    type Domain;
    fn read(item: Item) -> Result<Self::Domain, StoreError>;
}

/// `Stored` for item kinds whose `into_domain` reads them.
macro_rules! stored {
    ($($item:ty => $domain:ty),* $(,)?) => {
        $(impl $crate::items::Stored for $item {
            type Domain = $domain;
            fn read(item: $crate::items::Item) -> Result<$domain, $crate::error::StoreError> {
                $crate::items::from_item::<$item>(item)?.into_domain()
            }
        })*
    };
}
pub(crate) use stored;

stored!(
    BouquetItem => bouquet_domain::Bouquet,
    OrderItem => bouquet_domain::Order,
    VendorItem => bouquet_domain::Vendor,
);

pub fn to_item<T: Serialize>(record: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(record).map_err(StoreError::corrupt)
}

pub fn from_item<T: for<'de> Deserialize<'de>>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(StoreError::corrupt)
}

fn money(minor: i64, currency: &str) -> Result<Money, StoreError> {
    Ok(Money::from_minor(
        minor,
        Currency::parse(currency).map_err(StoreError::corrupt)?,
    ))
}
