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
    /// Set while an administrator has suspended the shop: its bouquets are off the catalogue
    /// and cannot be reserved or listed; its open orders go on.
    pub suspended_at: Option<Timestamp>,
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
            suspended_at: None,
        })
    }

    pub fn is_suspended(&self) -> bool {
        self.suspended_at.is_some()
    }

    /// Suspends the shop; `false`, and no change, when it already is.
    pub fn suspend(&mut self, now: Timestamp) -> bool {
        if self.is_suspended() {
            return false;
        }
        self.suspended_at = Some(now);
        self.version += 1;
        true
    }

    /// Reinstates the shop; `false`, and no change, when it is not suspended.
    pub fn reinstate(&mut self) -> bool {
        if !self.is_suspended() {
            return false;
        }
        self.suspended_at = None;
        self.version += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspending_and_reinstating_happen_once_each() {
        let now = Timestamp::from_millis(1_000);
        let mut shop = Vendor::onboard("Fleur", now).unwrap();
        assert!(!shop.is_suspended());
        assert!(!shop.reinstate(), "nothing to reinstate");
        assert!(shop.suspend(now));
        assert!(!shop.suspend(now), "already suspended");
        assert_eq!((shop.suspended_at, shop.version), (Some(now), 2));
        assert!(shop.reinstate());
        assert_eq!((shop.suspended_at, shop.version), (None, 3));
    }
}
