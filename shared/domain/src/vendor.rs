//! Vendors: the shops that list bouquets.

use serde::Serialize;

use crate::clock::Timestamp;
use crate::commission::CommissionRate;
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
    /// The shop's connected payment account, once its onboarding started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payout_account: Option<PayoutAccount>,
    /// The shop's own commission, set by an administrator (`None`: the marketplace's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commission: Option<CommissionRate>,
    /// Every change of it, oldest first (the last [`COMMISSION_HISTORY`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commission_history: Vec<CommissionChange>,
}

/// How many changes of a shop's commission it keeps.
pub const COMMISSION_HISTORY: usize = 100;

/// An administrator's change of a shop's commission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommissionChange {
    /// The shop's commission from then on; `None`: the marketplace's again.
    pub basis_points: Option<CommissionRate>,
    pub at: Timestamp,
    /// The administrator (`sub`).
    pub by: String,
}

/// A shop's connected account at the PSP (Stripe Connect, Express) and what the PSP last said
/// of it (`account.updated`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PayoutAccount {
    pub account_id: String,
    /// The PSP takes charges for it: the shop can be reserved from.
    pub charges_enabled: bool,
    /// The PSP pays its balance out to the shop's bank.
    pub payouts_enabled: bool,
    /// When the PSP produced the state recorded (its event's `created`): an older report
    /// changes nothing.
    #[serde(skip)]
    pub reported_at: Option<Timestamp>,
}

/// What the PSP reports of an account (`account.updated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountReport {
    pub account_id: String,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub reported_at: Timestamp,
}

/// The origins the console is served from: where the PSP's onboarding may send a shop's
/// member back to. Deployed, the distribution's own (and the template's `ConsoleOrigins`);
/// without any, this machine only (`http://localhost` and `http://127.0.0.1`, any port: the
/// dev stack's console).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleOrigins(Vec<url::Url>);

impl ConsoleOrigins {
    /// A comma-separated list of origins (`https://shop.example`, `https://shop.example:8443`);
    /// an origin without a port allows any port of its host. Entries that are not an origin
    /// are left out; none at all means this machine only.
    pub fn parse(list: &str) -> ConsoleOrigins {
        let origins: Vec<url::Url> = list
            .split(',')
            .filter_map(|entry| url::Url::parse(entry.trim()).ok())
            .filter(|url| {
                matches!(url.scheme(), "https" | "http")
                    && url.host().is_some()
                    && url.username().is_empty()
                    && url.password().is_none()
            })
            .collect();
        if origins.is_empty() {
            return Self::this_machine();
        }
        ConsoleOrigins(origins)
    }

    /// `http://localhost` and `http://127.0.0.1`, any port.
    pub fn this_machine() -> ConsoleOrigins {
        ConsoleOrigins(
            ["http://localhost", "http://127.0.0.1"]
                .into_iter()
                .filter_map(|origin| url::Url::parse(origin).ok())
                .collect(),
        )
    }

    fn allow(&self, url: &url::Url) -> bool {
        self.0.iter().any(|origin| {
            origin.scheme() == url.scheme()
                && origin.host() == url.host()
                && (origin.port().is_none() || origin.port() == url.port())
        })
    }
}

/// A page the PSP's onboarding sends the shop's member back to, parsed as a browser parses it:
/// an absolute URL on one of the console's `origins`, with no user or password part (which
/// would make `http://localhost:@evil.example/` a visit to `evil.example`), at most 2,000
/// characters. Returned as parsed (normalised), so what is kept is what was checked.
pub fn return_url(value: &str, origins: &ConsoleOrigins) -> Result<String, &'static str> {
    const MESSAGE: &str = "must be a page of this marketplace's console";
    if value.len() > 2_000 || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(MESSAGE);
    }
    let url = url::Url::parse(value).map_err(|_| MESSAGE)?;
    if !url.username().is_empty() || url.password().is_some() || !origins.allow(&url) {
        return Err(MESSAGE);
    }
    Ok(url.into())
}

/// Why a shop's bouquets cannot be reserved for payment yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the shop cannot take payments yet: its payout account is not set up")]
pub struct PayoutsNotReady;

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
            payout_account: None,
            commission: None,
            commission_history: Vec::new(),
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

    /// The commission on the shop's orders: its own, else the marketplace's `default`.
    pub fn commission_or(&self, default: CommissionRate) -> CommissionRate {
        self.commission.unwrap_or(default)
    }

    /// An administrator (`by`) sets the shop's commission (`None`: the marketplace's); `false`,
    /// and no change, when it is that already. The change joins the history.
    pub fn set_commission(
        &mut self,
        rate: Option<CommissionRate>,
        by: &str,
        now: Timestamp,
    ) -> bool {
        if self.commission == rate {
            return false;
        }
        self.commission = rate;
        self.commission_history.push(CommissionChange {
            basis_points: rate,
            at: now,
            by: by.to_owned(),
        });
        let over = self
            .commission_history
            .len()
            .saturating_sub(COMMISSION_HISTORY);
        self.commission_history.drain(..over);
        self.version += 1;
        true
    }

    /// The account charges go to, if the PSP takes charges for it.
    pub fn payee(&self) -> Result<&str, PayoutsNotReady> {
        self.payout_account
            .as_ref()
            .filter(|account| account.charges_enabled)
            .map(|account| account.account_id.as_str())
            .ok_or(PayoutsNotReady)
    }

    /// Records the account onboarding created; `false`, and no change, when the shop has one
    /// (the one it has stands: an account is created once per shop).
    pub fn open_payout_account(&mut self, account_id: String) -> bool {
        if self.payout_account.is_some() {
            return false;
        }
        self.payout_account = Some(PayoutAccount {
            account_id,
            charges_enabled: false,
            payouts_enabled: false,
            reported_at: None,
        });
        self.version += 1;
        true
    }

    /// Records the PSP's report of the shop's account; `false`, and no change, for another
    /// account or a report older than the one recorded. Reports of the same second (the
    /// PSP's events carry seconds) are taken in the order they arrive.
    pub fn record_account_report(&mut self, report: &AccountReport) -> bool {
        let Some(account) = self.payout_account.as_mut() else {
            return false;
        };
        if account.account_id != report.account_id
            || account
                .reported_at
                .is_some_and(|at| report.reported_at < at)
        {
            return false;
        }
        account.reported_at = Some(report.reported_at);
        account.charges_enabled = report.charges_enabled;
        account.payouts_enabled = report.payouts_enabled;
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

    fn report(account: &str, charges: bool, at: i64) -> AccountReport {
        AccountReport {
            account_id: account.into(),
            charges_enabled: charges,
            payouts_enabled: charges,
            reported_at: Timestamp::from_millis(at),
        }
    }

    #[test]
    fn a_shop_takes_payments_once_its_account_can_take_charges() {
        let mut shop = Vendor::onboard("Fleur", Timestamp::from_millis(1)).unwrap();
        assert_eq!(shop.payee(), Err(PayoutsNotReady), "no account");
        assert!(
            !shop.record_account_report(&report("acct_1", true, 10)),
            "no account to report on"
        );
        assert!(shop.open_payout_account("acct_1".into()));
        assert!(
            !shop.open_payout_account("acct_2".into()),
            "one account per shop"
        );
        assert_eq!(
            shop.payee(),
            Err(PayoutsNotReady),
            "onboarding not finished"
        );
        assert!(shop.record_account_report(&report("acct_1", true, 10)));
        assert_eq!(shop.payee(), Ok("acct_1"));
        assert!(
            !shop.record_account_report(&report("acct_2", false, 20)),
            "another account"
        );
        assert_eq!(shop.payee(), Ok("acct_1"));
    }

    #[test]
    fn onboarding_returns_only_to_the_consoles_own_origins() {
        let deployed = ConsoleOrigins::parse("https://shop.example, not a url,");
        let local = ConsoleOrigins::parse("");
        assert_eq!(local, ConsoleOrigins::this_machine());
        for (good, origins) in [
            ("https://shop.example/#/shop/payouts", &deployed),
            ("https://shop.example:8443/x", &deployed),
            ("http://127.0.0.1:4000/#/shop", &local),
            ("http://localhost:8080/", &local),
        ] {
            assert_eq!(return_url(good, origins).as_deref(), Ok(good));
        }
        for bad in [
            // Issue 51: each was taken by the prefix check and redirected off the marketplace.
            "http://localhost:@evil.example/",
            "http://127.0.0.1:80@evil.example/x",
            "https://evil.example/phish",
            "https://shop.example@evil.example/",
            "https://user:pw@shop.example/",
            "http://shop.example/",
            "https://shop.example.evil.example/",
            "http://localhost.evil.example/",
            "https:///path",
            "javascript:alert(1)",
            "/#/shop",
            "https://shop.example/ x",
            "",
        ] {
            for origins in [&deployed, &local] {
                assert!(return_url(bad, origins).is_err(), "{bad:?}");
            }
        }
        assert!(
            return_url("http://localhost:3000/", &deployed).is_err(),
            "a deployed console is not this machine"
        );
    }

    #[test]
    fn a_shops_commission_overrides_the_marketplaces_with_its_history() {
        let rate = |bps| CommissionRate::from_basis_points(bps).unwrap();
        let mut shop = Vendor::onboard("Fleur", Timestamp::from_millis(1)).unwrap();
        assert_eq!(shop.commission_or(rate(1500)), rate(1500));
        assert!(shop.set_commission(Some(rate(1000)), "ops", Timestamp::from_millis(2)));
        assert!(
            !shop.set_commission(Some(rate(1000)), "ops", Timestamp::from_millis(3)),
            "unchanged"
        );
        assert_eq!(shop.commission_or(rate(1500)), rate(1000));
        assert!(shop.set_commission(None, "ops-2", Timestamp::from_millis(4)));
        assert_eq!(shop.commission_or(rate(1500)), rate(1500));
        assert_eq!(
            shop.commission_history
                .iter()
                .map(|c| (c.basis_points, c.by.as_str()))
                .collect::<Vec<_>>(),
            [(Some(rate(1000)), "ops"), (None, "ops-2")]
        );
        for i in 0..200 {
            shop.set_commission(Some(rate(i)), "ops", Timestamp::from_millis(10 + i));
        }
        assert_eq!(
            shop.commission_history.len(),
            COMMISSION_HISTORY,
            "the last hundred"
        );
        assert_eq!(
            shop.commission_history.last().unwrap().basis_points,
            Some(rate(199))
        );
    }

    #[test]
    fn an_older_report_arriving_late_changes_nothing() {
        let mut shop = Vendor::onboard("Fleur", Timestamp::from_millis(1)).unwrap();
        shop.open_payout_account("acct_1".into());
        assert!(shop.record_account_report(&report("acct_1", false, 30)));
        let version = shop.version;
        // The report of t=20 (enabled) arrives after the one of t=30 (disabled).
        assert!(!shop.record_account_report(&report("acct_1", true, 20)));
        assert_eq!(
            (shop.payee(), shop.version),
            (Err(PayoutsNotReady), version)
        );
        assert!(shop.record_account_report(&report("acct_1", true, 40)));
        assert_eq!(shop.payee(), Ok("acct_1"));
    }
}
