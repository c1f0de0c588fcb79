//! The payment gateway seam. Handlers see only [`PaymentGateway`]; a real PSP adapter
//! implements it. Every charge carries an idempotency key (the order id), so repeating a
//! charge after a crash or a timeout returns the first charge instead of charging again.

use std::time::Duration;

/// What to charge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChargeRequest {
    /// The gateway's idempotency key: one charge per key, ever.
    pub idempotency_key: String,
    /// The order it pays (the PSP keeps it as metadata).
    pub order_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub payment_token: String,
    /// Where the money goes: a shop's connected account, less the marketplace's fee (a
    /// destination charge). `None`: it stays in the marketplace's own account.
    pub transfer: Option<Transfer>,
}

/// A destination charge's split (Stripe Connect): the PSP moves the amount less
/// `application_fee_minor` to `destination`; the fee stays with the marketplace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The shop's connected account (`acct_...`).
    pub destination: String,
    pub application_fee_minor: i64,
}

/// A definite answer from the gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChargeOutcome {
    Approved {
        charge_id: String,
    },
    Declined {
        reason: String,
    },
    /// The card's bank wants the customer to authenticate (3-D Secure): the client completes
    /// it with the PSP's SDK and `client_secret`; the PSP's webhook says how it ended.
    RequiresAction {
        intent_id: String,
        client_secret: String,
    },
}

/// No definite answer: the charge may or may not have happened.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The gateway (or the way to it) failed: what failed is the source.
    #[error("the payment gateway is unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the payment gateway did not answer in time")]
    Timeout,
}

#[async_trait::async_trait]
pub trait PaymentGateway: Send + Sync {
    /// Which provider this is (`simulated`, `stripe`): the API names it, never a secret.
    fn provider(&self) -> &'static str;
    /// Charges, or returns the earlier outcome for the same idempotency key.
    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError>;
    /// The outcome recorded for a key, if the gateway made a charge for it.
    async fn lookup(&self, idempotency_key: &str) -> Result<Option<ChargeOutcome>, GatewayError>;
    /// Refunds `charge_id`, the approved charge made under `idempotency_key` (at Stripe its
    /// PaymentIntent). A destination charge (`transferred`) also takes its transfer back from
    /// the shop and gives the marketplace's fee back. `Ok` only when the gateway says it is
    /// refunded (or was already): a refund is never reported that did not happen.
    async fn refund(
        &self,
        idempotency_key: &str,
        charge_id: &str,
        transferred: bool,
    ) -> Result<(), GatewayError>;
    /// Creates `vendor_id`'s connected account (Connect, Express) and returns its id. The shop
    /// id is the PSP's idempotency key, so a retry returns the same account. A gateway without
    /// connected accounts (a test's stand-in) says so.
    async fn create_account(&self, vendor_id: &str) -> Result<String, GatewayError> {
        let _ = vendor_id;
        Err(no_connected_accounts(self.provider()))
    }
    /// A one-time address where the shop finishes onboarding `account_id` at the PSP: it
    /// comes back to `return_url` when done, to `refresh_url` when the link has expired.
    async fn onboarding_link(
        &self,
        account_id: &str,
        links: &OnboardingLinks,
    ) -> Result<String, GatewayError> {
        let _ = (account_id, links);
        Err(no_connected_accounts(self.provider()))
    }
    /// The payouts of `account_id` arriving from `from` to `to` (`YYYY-MM-DD`, inclusive),
    /// oldest first.
    async fn payouts(
        &self,
        account_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        let _ = (account_id, from, to);
        Err(no_connected_accounts(self.provider()))
    }
}

/// Money the PSP paid out from a shop's connected account to its bank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payout {
    pub id: String,
    pub amount_minor: i64,
    /// ISO 4217, upper case.
    pub currency: String,
    /// `YYYY-MM-DD` (UTC): when it reaches (or reached) the bank.
    pub arrival_date: String,
    /// `paid`, `pending`, `in_transit`, `failed` or `canceled`.
    pub status: String,
}

fn no_connected_accounts(provider: &str) -> GatewayError {
    GatewayError::Unavailable(format!("the {provider} gateway opens no connected accounts").into())
}

/// Where onboarding sends the shop back (the console's pages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnboardingLinks {
    pub return_url: String,
    pub refresh_url: String,
}

/// Whether a payment token has the shape of the simulated gateway's test tokens (`tok_...`)
/// or of a Stripe PaymentMethod id from Stripe.js (`pm_...`).
pub fn valid_token(token: &str) -> bool {
    (5..=64).contains(&token.len())
        && (token.starts_with("tok_") || token.starts_with("pm_"))
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The gateway of a function built without the configured provider's adapter (it takes no
/// payments): every call fails with `Unavailable`, and says why.
pub struct NotLinked(pub &'static str);

#[async_trait::async_trait]
impl PaymentGateway for NotLinked {
    fn provider(&self) -> &'static str {
        self.0
    }

    async fn charge(&self, _: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        Err(self.unlinked())
    }

    async fn lookup(&self, _: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        Err(self.unlinked())
    }

    async fn refund(&self, _: &str, _: &str, _: bool) -> Result<(), GatewayError> {
        Err(self.unlinked())
    }

    async fn create_account(&self, _: &str) -> Result<String, GatewayError> {
        Err(self.unlinked())
    }

    async fn onboarding_link(&self, _: &str, _: &OnboardingLinks) -> Result<String, GatewayError> {
        Err(self.unlinked())
    }
}

impl NotLinked {
    fn unlinked(&self) -> GatewayError {
        GatewayError::Unavailable(
            format!(
                "this function was built without the {} adapter (enable bouquet-app's feature)",
                self.0
            )
            .into(),
        )
    }
}

pub mod ledger;
#[cfg(feature = "stripe")]
pub mod stripe;
#[cfg(feature = "stripe")]
pub mod stripe_webhook;
pub use ledger::{Ledger, MemoryLedger, TableLedger};

/// The simulated gateway, driven by the token value:
///
/// | token | outcome |
/// |---|---|
/// | `tok_decline` | declined (`card_declined`) |
/// | `tok_unavailable` | `Unavailable` error, nothing charged |
/// | `tok_timeout` | the charge **is made**, then `Timeout` (the caller cannot know) |
/// | `tok_3ds` | requires authentication (settled later through the ledger, as a bank would) |
/// | any other `tok_…` | approved |
///
/// Connected accounts are `acct_sim_{vendorId}`, one per shop by construction. Onboarding's
/// link is the local console's page `/local/connect/{account}` (on the return URL's origin),
/// which plays the PSP: it reports the account enabled through the signed webhook, as Stripe's
/// `account.updated` does.
///
/// Outcomes are kept per idempotency key in a [`Ledger`], as a PSP does: a repeated charge
/// returns the first outcome, whatever the token. Deployed and in the dev stack the ledger is
/// the table ([`TableLedger`]), so the sweeper's `lookup` in one function sees the charge the
/// pay function made in another; tests may keep it in memory ([`MemoryLedger`]).
pub struct SimulatedGateway<L: Ledger = MemoryLedger> {
    ledger: L,
    latency: Duration,
}

impl Default for SimulatedGateway<MemoryLedger> {
    fn default() -> Self {
        Self::new()
    }
}

impl SimulatedGateway<MemoryLedger> {
    /// A gateway whose ledger is this process's memory.
    pub fn new() -> Self {
        Self::with_ledger(MemoryLedger::default())
    }

    /// A gateway that takes `latency` for every call (to widen race windows in tests).
    pub fn with_latency(latency: Duration) -> Self {
        Self {
            latency,
            ..Self::new()
        }
    }

    /// How many approved charges exist (refunded ones included).
    pub fn charges_made(&self) -> usize {
        self.ledger.approved()
    }

    pub fn refunds(&self) -> Vec<String> {
        self.ledger.refunded()
    }
}

impl<L: Ledger> SimulatedGateway<L> {
    pub fn with_ledger(ledger: L) -> Self {
        Self {
            ledger,
            latency: Duration::ZERO,
        }
    }

    async fn pause(&self) {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
    }
}

#[async_trait::async_trait]
impl<L: Ledger> PaymentGateway for SimulatedGateway<L> {
    fn provider(&self) -> &'static str {
        "simulated"
    }

    async fn charge(&self, request: ChargeRequest) -> Result<ChargeOutcome, GatewayError> {
        self.pause().await;
        if request.payment_token == "tok_unavailable" {
            return Err(GatewayError::Unavailable("simulated outage".into()));
        }
        let proposed = match request.payment_token.as_str() {
            "tok_decline" => ChargeOutcome::Declined {
                reason: "card_declined".into(),
            },
            "tok_3ds" => {
                let intent_id = format!("pi_sim_{}", ulid::Ulid::new());
                ChargeOutcome::RequiresAction {
                    client_secret: format!("{intent_id}_secret"),
                    intent_id,
                }
            }
            _ => ChargeOutcome::Approved {
                charge_id: format!("ch_{}", ulid::Ulid::new()),
            },
        };
        let outcome = self.ledger.record(&request, proposed).await?;
        if request.payment_token == "tok_timeout" {
            return Err(GatewayError::Timeout);
        }
        Ok(outcome)
    }

    async fn lookup(&self, idempotency_key: &str) -> Result<Option<ChargeOutcome>, GatewayError> {
        let key = idempotency_key.to_owned();

        self.pause().await;
        self.ledger.outcome(&key).await
    }

    /// Its ledger knows each charge by its key, and whether it was transferred.
    async fn refund(
        &self,
        idempotency_key: &str,
        _charge_id: &str,
        transferred: bool,
    ) -> Result<(), GatewayError> {
        self.pause().await;
        self.ledger.refund(idempotency_key, transferred).await
    }

    async fn create_account(&self, vendor_id: &str) -> Result<String, GatewayError> {
        self.pause().await;
        Ok(format!("acct_sim_{vendor_id}"))
    }

    /// Its ledger's payouts (made locally through the dev stack's account page).
    async fn payouts(
        &self,
        account_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Payout>, GatewayError> {
        self.pause().await;
        self.ledger.payouts(account_id, from, to).await
    }

    async fn onboarding_link(
        &self,
        account_id: &str,
        links: &OnboardingLinks,
    ) -> Result<String, GatewayError> {
        self.pause().await;
        let origin = url_origin(&links.return_url).ok_or_else(|| {
            GatewayError::Unavailable(
                format!("the return URL {:?} has no origin", links.return_url).into(),
            )
        })?;
        Ok(format!(
            "{origin}/local/connect/{account_id}?{}",
            form_urlencoded::Serializer::new(String::new())
                .append_pair("return_url", &links.return_url)
                .append_pair("refresh_url", &links.refresh_url)
                .finish()
        ))
    }
}

/// `https://host:port` of an absolute `http(s)` URL.
fn url_origin(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    (host_end > 0).then(|| &url[..url.len() - rest.len() + host_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(key: &str, token: &str) -> ChargeRequest {
        ChargeRequest {
            idempotency_key: key.into(),
            order_id: "o".into(),
            amount_minor: 2450,
            currency: "EUR".into(),
            payment_token: token.into(),
            transfer: None,
        }
    }

    #[tokio::test]
    async fn one_charge_per_key_whatever_happens() {
        let gateway = SimulatedGateway::new();
        assert!(matches!(
            gateway.charge(request("o1", "tok_visa")).await,
            Ok(ChargeOutcome::Approved { .. })
        ));
        assert_eq!(
            gateway.charge(request("o1", "tok_visa")).await.ok(),
            gateway.charge(request("o1", "tok_decline")).await.ok()
        );
        assert!(matches!(
            gateway.charge(request("o2", "tok_decline")).await,
            Ok(ChargeOutcome::Declined { .. })
        ));
        assert!(matches!(
            gateway.charge(request("o3", "tok_unavailable")).await,
            Err(GatewayError::Unavailable(e)) if e.to_string() == "simulated outage"
        ));
        assert!(matches!(gateway.lookup("o3").await, Ok(None)));
        assert!(matches!(
            gateway.charge(request("o4", "tok_timeout")).await,
            Err(GatewayError::Timeout)
        ));
        assert!(
            matches!(
                gateway.lookup("o4").await,
                Ok(Some(ChargeOutcome::Approved { .. }))
            ),
            "the timed-out charge was made"
        );
        assert_eq!(gateway.charges_made(), 2);
        assert!(valid_token("tok_visa") && !valid_token("visa") && !valid_token("tok_<script>"));
    }

    #[tokio::test]
    async fn a_simulated_account_is_one_per_shop_and_onboards_on_the_consoles_origin() {
        let gateway = SimulatedGateway::new();
        let account = gateway.create_account("V1").await.unwrap();
        assert_eq!(account, gateway.create_account("V1").await.unwrap());
        let links = OnboardingLinks {
            return_url: "http://127.0.0.1:4000/#/shop/payouts?done=1".into(),
            refresh_url: "http://127.0.0.1:4000/#/shop/payouts".into(),
        };
        let link = gateway.onboarding_link(&account, &links).await.unwrap();
        assert!(
            link.starts_with("http://127.0.0.1:4000/local/connect/acct_sim_V1?return_url=http%3A%2F%2F127.0.0.1%3A4000%2F%23%2Fshop%2Fpayouts%3Fdone%3D1&refresh_url="),
            "{link}"
        );
        let relative = OnboardingLinks {
            return_url: "/#/shop".into(),
            refresh_url: "/#/shop".into(),
        };
        assert!(gateway.onboarding_link(&account, &relative).await.is_err());
    }
}
