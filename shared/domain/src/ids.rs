//! Strongly typed ids. Server-generated ids are ULIDs (sortable by creation time, 26
//! Crockford base32 characters); a customer id is the identity provider's `sub`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

/// Why a string is not an id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be a 26-character id of letters and digits")]
pub struct InvalidId;

macro_rules! ulid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(Ulid);

        impl $name {
            /// A fresh id; ULIDs sort by creation time, which the indexes rely on.
            pub fn generate() -> Self {
                Self(Ulid::new())
            }

            pub fn parse(text: &str) -> Result<Self, InvalidId> {
                // Ulid::from_str accepts lowercase too; ids are canonical uppercase so that
                // one bouquet has one key.
                if text.len() != 26 || !text.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()) {
                    return Err(InvalidId);
                }
                Ulid::from_str(text).map(Self).map_err(|_| InvalidId)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(text: String) -> Result<Self, InvalidId> {
                Self::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.to_string()
            }
        }
    };
}

ulid_id!(
    /// A vendor (a shop) on the marketplace.
    VendorId
);
ulid_id!(
    /// A listed bouquet.
    BouquetId
);
ulid_id!(
    /// A customer's order.
    OrderId
);
ulid_id!(
    /// A review: its own id, so that nothing public names the order it is of.
    ReviewId
);
ulid_id!(
    /// A smart vase (also its IoT thing name and MQTT client id).
    VaseId
);
ulid_id!(
    /// A domain event; stable across redeliveries so consumers can dedupe.
    EventId
);
ulid_id!(
    /// One photo upload a vendor was allowed (its object key in the upload bucket); later
    /// uploads sort after earlier ones, which decides which photo a bouquet keeps.
    UploadId
);

/// The authenticated caller's subject (`sub` claim). Opaque, chosen by the identity provider.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CustomerId(String);

impl CustomerId {
    pub fn parse(text: &str) -> Result<Self, InvalidId> {
        let ok = (1..=128).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CustomerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for CustomerId {
    type Error = InvalidId;
    fn try_from(text: String) -> Result<Self, InvalidId> {
        Self::parse(&text)
    }
}

impl From<CustomerId> for String {
    fn from(id: CustomerId) -> String {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_round_trip_through_text() {
        let id = BouquetId::generate();
        assert_eq!(BouquetId::parse(&id.to_string()), Ok(id));
    }

    #[test]
    fn rejects_odd_characters_and_lengths() {
        for bad in [
            "",
            "01",
            "01HZY0000000000000000000000",
            "01hzy00000000000000000000a",
            "01HZY00000000000000000000!",
            "01HZY0000000000000000000 0",
        ] {
            assert_eq!(BouquetId::parse(bad), Err(InvalidId), "{bad:?}");
        }
    }

    #[test]
    fn customer_ids_are_visible_ascii() {
        assert!(CustomerId::parse("auth0|5f7c8ec7c33c6c004bbafe82").is_ok());
        assert!(CustomerId::parse("has space").is_err());
        assert!(CustomerId::parse(&"x".repeat(129)).is_err());
    }
}
