//! `POST /v1/vendors/{vendorId}/payouts/onboarding` `{returnUrl, refreshUrl}`: the shop's vendor
//! opens its payout account (once: a repeat returns the same account) and gets the payment
//! provider's one-time onboarding link, which comes back to `returnUrl` when done and to
//! `refreshUrl` when it has expired. Until the provider reports the account can take charges,
//! the shop's bouquets cannot be reserved (`vendor.payouts_not_ready`).

use bouquet_app::domain::vendor::{return_url, ConsoleOrigins};
use bouquet_app::domain::{Validation, VendorId};
use bouquet_app::payments::OnboardingLinks;
use bouquet_app::payouts;
use bouquet_http::{ApiError, Ctx, Reply};
use serde::Deserialize;
use serde_json::json;

bouquet_http::route!(POST "/v1/vendors/{vendorId}/payouts/onboarding" => handle);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OnboardingRequest {
    return_url: String,
    refresh_url: String,
}

/// Where the console is served from (`CONSOLE_ORIGINS`, from the template), read once per
/// container; unset, this machine only.
static CONSOLE: std::sync::LazyLock<ConsoleOrigins> = std::sync::LazyLock::new(|| {
    ConsoleOrigins::parse(&std::env::var("CONSOLE_ORIGINS").unwrap_or_default())
});

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let body: OnboardingRequest = ctx.json()?;
    let mut validation = Validation::new();
    let return_to = validation.check("returnUrl", return_url(&body.return_url, &CONSOLE));
    let refresh = validation.check("refreshUrl", return_url(&body.refresh_url, &CONSOLE));
    let links = validation
        .finish(|| OnboardingLinks {
            return_url: return_to.unwrap_or_default(),
            refresh_url: refresh.unwrap_or_default(),
        })
        .map_err(ApiError::Invalid)?;
    let onboarding = payouts::start_onboarding(
        &ctx.app,
        caller,
        vendor_id,
        &links,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&json!({
        "accountId": onboarding.account_id,
        "url": onboarding.url,
        "chargesEnabled": onboarding.charges_enabled,
        "payoutsEnabled": onboarding.payouts_enabled,
    }))
}
