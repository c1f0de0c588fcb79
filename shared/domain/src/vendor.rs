//! Vendors: the shops that list bouquets.

use serde::Serialize;

use crate::clock::Timestamp;
use crate::ids::VendorId;
use crate::text;
use crate::validation::{FieldError, Validation};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Vendor {
    pub vendor_id: VendorId,
    pub name: String,
    pub version: u64,
    pub created_at: Timestamp,
}

impl Vendor {
    /// Onboards a vendor: validates the name and assigns a fresh id.
    pub fn onboard(name: &str, now: Timestamp) -> Result<Vendor, Vec<FieldError>> {
        let mut validation = Validation::new();
        let name = validation.check("name", text::name(name));
        validation.finish(|| Vendor {
            vendor_id: VendorId::generate(),
            name: name.unwrap_or_default(),
            version: 1,
            created_at: now,
        })
    }
}
