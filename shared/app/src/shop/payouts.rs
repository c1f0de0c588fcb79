//! A shop's payouts: its connected account at the PSP (Stripe Connect, Express), opened once,
//! and what the PSP reports of it.
//!
//! Onboarding opens the account the first time (the PSP's idempotency key is the shop, and the
//! shop's record takes it under a version condition, so two members starting at once get the
//! same account) and hands back the PSP's one-time onboarding address. The PSP's
//! `account.updated` reports then say whether the account takes charges: only then can the
//! shop's bouquets be reserved (`vendor.payouts_not_ready` before).

use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::vendor::AccountReport;
use bouquet_domain::{Timestamp, Vendor, VendorId};
use bouquet_payments::{GatewayError, OnboardingLinks};
use bouquet_store::retry::Retry;
use bouquet_store::StoreError;

use crate::problem::ApiError;
use crate::shops::NotTrading;
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum PayoutsError {
    #[error("no such vendor")]
    NotFound,
    #[error(transparent)]
    Forbidden(#[from] NotAllowed),
    #[error(transparent)]
    NotTrading(#[from] NotTrading),
    /// The shop's record kept changing under every attempt.
    #[error("the shop kept changing; retry shortly")]
    Busy,
    /// The PSP did not answer: nothing is recorded, a retry is safe.
    #[error("the payment provider gave no answer")]
    Gateway(#[source] GatewayError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<PayoutsError> for ApiError {
    fn from(error: PayoutsError) -> Self {
        match error {
            PayoutsError::NotFound => ApiError::NotFound("vendor"),
            PayoutsError::Forbidden(_) => ApiError::forbidden(),
            PayoutsError::NotTrading(error) => error.into(),
            PayoutsError::Busy => ApiError::busy(),
            PayoutsError::Gateway(_) => ApiError::payment_unavailable(),
            PayoutsError::Store(error) => error.into(),
        }
    }
}

/// Where the shop's member goes next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Onboarding {
    pub account_id: String,
    /// The PSP's one-time onboarding page.
    pub url: String,
    /// As the PSP last reported the account.
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
}

/// Its vendor starts (or resumes) the shop's onboarding to payouts.
pub async fn start_onboarding(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    links: &OnboardingLinks,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Onboarding, PayoutsError> {
    caller.require_vendor(vendor_id)?;
    let mut retry = Retry::optimistic();
    while retry.next().await {
        // The shop's standing was the pipeline's (`ShopStanding`).
        let shop = app
            .store
            .vendor(vendor_id, true)
            .await?
            .ok_or(NotTrading::Unknown)?;
        let (charges_enabled, payouts_enabled) = shop
            .payout_account
            .as_ref()
            .map_or((false, false), |a| (a.charges_enabled, a.payouts_enabled));
        let account_id = match &shop.payout_account {
            Some(account) => account.account_id.clone(),
            None => {
                let account_id = app
                    .payments
                    .create_account(&vendor_id.to_string())
                    .await
                    .map_err(PayoutsError::Gateway)?;
                let mut opened = shop.clone();
                opened.open_payout_account(account_id.clone());
                match save(app, &shop, &opened, true, correlation_id, now).await {
                    Ok(()) => account_id,
                    Err(StoreError::ConditionFailed(_)) => continue,
                    Err(other) => return Err(other.into()),
                }
            }
        };
        let url = app
            .payments
            .onboarding_link(&account_id, links)
            .await
            .map_err(PayoutsError::Gateway)?;
        return Ok(Onboarding {
            account_id,
            url,
            charges_enabled,
            payouts_enabled,
        });
    }
    Err(PayoutsError::Busy)
}

/// How the PSP's report of an account ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    /// The shop's account now takes charges (or not) as reported: `VendorPayoutsChanged`.
    Changed,
    /// Recorded; nothing a reader sees changed.
    Confirmed,
    /// Not the shop's account, an unknown shop, or older than what is recorded.
    Ignored,
}

/// Records the PSP's `report` of `vendor_id`'s account.
pub async fn record_report(
    app: &App,
    vendor_id: VendorId,
    report: &AccountReport,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Reported, PayoutsError> {
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let Some(shop) = app.store.vendor(vendor_id, true).await? else {
            return Ok(Reported::Ignored);
        };
        let mut reported = shop.clone();
        if !reported.record_account_report(report) {
            return Ok(Reported::Ignored);
        }
        let flags = |v: &Vendor| {
            v.payout_account
                .as_ref()
                .map(|a| (a.charges_enabled, a.payouts_enabled))
        };
        let changed = flags(&shop) != flags(&reported);
        match save(app, &shop, &reported, changed, correlation_id, now).await {
            Ok(()) if changed => return Ok(Reported::Changed),
            Ok(()) => return Ok(Reported::Confirmed),
            Err(StoreError::ConditionFailed(_)) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(PayoutsError::Busy)
}

/// Writes `changed` over `read` (at its version), with `VendorPayoutsChanged` when `announce`.
async fn save(
    app: &App,
    read: &Vendor,
    changed: &Vendor,
    announce: bool,
    correlation_id: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    let account = changed.payout_account.as_ref();
    let event = announce.then(|| {
        DomainEvent::new(
            changed.vendor_id,
            changed.version,
            now,
            correlation_id,
            EventData::VendorPayoutsChanged {
                vendor_id: changed.vendor_id,
                charges_enabled: account.is_some_and(|a| a.charges_enabled),
                payouts_enabled: account.is_some_and(|a| a.payouts_enabled),
            },
        )
    });
    app.store
        .save_vendor(changed, read.version, event.as_ref())
        .await
}
