//! A shop as stored: its item and its commission changes.

use serde::{Deserialize, Serialize};

use bouquet_domain::{Timestamp, Vendor, VendorId};

use bouquet_domain::commission::CommissionRate;
use bouquet_domain::vendor::{CommissionChange, PayoutAccount};

use super::rate;
use crate::error::StoreError;
use crate::keys;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VendorItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    pub vendor_id: String,
    pub name: String,
    pub version: u64,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_at: Option<i64>,
    /// `VendorIndex`'s list of every shop: `VENDORS`, by id (absent on shops created before
    /// it, until their next change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_sort: Option<String>,
    /// The shop's connected payment account (absent until its onboarding starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout_account_id: Option<String>,
    /// The reservation's `ConditionCheck` reads it: the shop can take charges.
    #[serde(default)]
    pub charges_enabled: bool,
    #[serde(default)]
    pub payouts_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_reported_at: Option<i64>,
    /// The shop's own commission (absent: the marketplace's) and its changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission_bps: Option<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commission_history: Vec<CommissionChangeItem>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommissionChangeItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bps: Option<u16>,
    pub at: i64,
    pub by: String,
}

impl VendorItem {
    pub fn from_domain(v: &Vendor) -> Self {
        let id = v.vendor_id.to_string();
        Self {
            pk: keys::vendor_pk(&id),
            sk: keys::VENDOR_SK.into(),
            entity: "vendor".into(),
            vendor_key: Some(keys::ALL_VENDORS_KEY.into()),
            vendor_sort: Some(id.clone()),
            vendor_id: id,
            name: v.name.clone(),
            version: v.version,
            created_at: v.created_at.as_millis(),
            suspended_at: v.suspended_at.map(Timestamp::as_millis),
            payout_account_id: v.payout_account.as_ref().map(|a| a.account_id.clone()),
            charges_enabled: v.payout_account.as_ref().is_some_and(|a| a.charges_enabled),
            payouts_enabled: v.payout_account.as_ref().is_some_and(|a| a.payouts_enabled),
            account_reported_at: v
                .payout_account
                .as_ref()
                .and_then(|a| a.reported_at)
                .map(Timestamp::as_millis),
            commission_bps: v.commission.map(CommissionRate::basis_points),
            commission_history: v
                .commission_history
                .iter()
                .map(|c| CommissionChangeItem {
                    bps: c.basis_points.map(CommissionRate::basis_points),
                    at: c.at.as_millis(),
                    by: c.by.clone(),
                })
                .collect(),
        }
    }

    pub fn into_domain(self) -> Result<Vendor, StoreError> {
        Ok(Vendor {
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            name: self.name,
            version: self.version,
            created_at: Timestamp::from_millis(self.created_at),
            suspended_at: self.suspended_at.map(Timestamp::from_millis),
            payout_account: self.payout_account_id.map(|account_id| PayoutAccount {
                account_id,
                charges_enabled: self.charges_enabled,
                payouts_enabled: self.payouts_enabled,
                reported_at: self.account_reported_at.map(Timestamp::from_millis),
            }),
            commission: self.commission_bps.map(rate).transpose()?,
            commission_history: self
                .commission_history
                .into_iter()
                .map(|c| {
                    Ok(CommissionChange {
                        basis_points: c.bps.map(rate).transpose()?,
                        at: Timestamp::from_millis(c.at),
                        by: c.by,
                    })
                })
                .collect::<Result<_, StoreError>>()?,
        })
    }
}
