//! What a function builds once per container, outside the handler: the AWS clients (through
//! `aws-config`, which honours `AWS_ENDPOINT_URL`), the clock and the configuration.

use std::sync::Arc;
use std::time::Duration;

pub use bouquet_aws::aws_sdk_config;

use bouquet_domain::commission::CommissionRate;
use bouquet_domain::limits::{Counted, RateLimit};
use bouquet_domain::order::DEFAULT_HOLD;
use bouquet_domain::vase::DEFAULT_OFFLINE_AFTER;
use bouquet_domain::{Clock, SystemClock};
use bouquet_payments::{PaymentGateway, SimulatedGateway, TableLedger};
use bouquet_store::Store;

#[derive(Clone, Debug)]
pub struct Config {
    /// How long a reservation holds its bouquets (`HOLD_DURATION_SECONDS`).
    pub hold: Duration,
    /// How long a silent vase stays online (`OFFLINE_AFTER_SECONDS`).
    pub offline_after: Duration,
    /// How many orders one customer may hold bouquets with at once
    /// (`MAX_HOLDS_PER_CUSTOMER`): one customer cannot hold the whole catalogue.
    pub max_holds_per_customer: u32,
    /// Live connections one source IP may hold without signing in
    /// (`MAX_CONNECTIONS_PER_IP`).
    pub max_connections_per_ip: u32,
    /// Live connections one signed-in user may hold (`MAX_CONNECTIONS_PER_USER`).
    pub max_connections_per_user: u32,
    /// Subscribe and unsubscribe messages one connection may send a minute
    /// (`MAX_LIVE_MESSAGES_PER_MINUTE`).
    pub max_live_messages_per_minute: u32,
    /// From how many subscription shards a channel gets its frames as a digest
    /// (`LIVE_DIGEST_FROM_SHARDS`; docs/capacity.md says how to choose it).
    pub digest_from_shards: u32,
    /// How many days after an order ends its delivery details are kept before the sweeper
    /// redacts them (`PERSONAL_DATA_DAYS`).
    pub personal_data_days: u16,
    /// Which of the catalogue's optional indexes the table has.
    pub catalogue_indexes: CatalogueIndexes,
    /// Reservations one customer may make a minute (`RESERVATIONS_PER_CUSTOMER_PER_MINUTE`;
    /// 429 `rate.limited` beyond): holding and releasing bouquets in a loop keeps them from
    /// everyone else.
    pub reservations_per_minute: u32,
    /// Declined payments one order may take in [`DECLINE_WINDOW_PER_ORDER`]
    /// (`PAYMENT_DECLINES_PER_ORDER`; 429 `payment.attempts_exceeded` beyond): card testing.
    pub declines_per_order: u32,
    /// Declined payments one customer may take an hour
    /// (`PAYMENT_DECLINES_PER_CUSTOMER_PER_HOUR`).
    pub declines_per_customer_hour: u32,
    /// The marketplace's commission on a paid order (`COMMISSION_BASIS_POINTS`, the template's
    /// `CommissionBasisPoints`; 0 to 10,000): the payment's application fee.
    pub commission: CommissionRate,
    /// Whether a shop needs a payout account that can take charges before its bouquets can
    /// be reserved (`REQUIRE_PAYOUT_ACCOUNTS`, the template's `RequirePayoutAccounts`; `true`
    /// unless set to `false`). Without one, payments stay in the marketplace's account.
    pub payouts_required: bool,
}

/// How long an order that reached its declines waits, at most, before the next attempt: less
/// than a hold, so a customer who mistyped a card can still pay the same order.
pub const DECLINE_WINDOW_PER_ORDER: Duration = Duration::from_secs(600);
pub const DEFAULT_RESERVATIONS_PER_MINUTE: u32 = 10;
pub const DEFAULT_DECLINES_PER_ORDER: u32 = 5;
pub const DEFAULT_DECLINES_PER_CUSTOMER_HOUR: u32 = 10;
/// 15 %, a common florist-marketplace commission.
pub const DEFAULT_COMMISSION_BASIS_POINTS: i64 = 1_500;

impl Config {
    /// The customer's reservations a minute.
    pub fn reservation_limit(&self) -> RateLimit {
        RateLimit {
            counted: Counted::ReservationsPerCustomer,
            max: self.reservations_per_minute,
            window: Duration::from_secs(60),
        }
    }

    /// The declines an order may take, and those a customer may take.
    pub fn decline_limits(&self) -> [RateLimit; 2] {
        [
            RateLimit {
                counted: Counted::DeclinesPerOrder,
                max: self.declines_per_order,
                window: DECLINE_WINDOW_PER_ORDER,
            },
            RateLimit {
                counted: Counted::DeclinesPerCustomer,
                max: self.declines_per_customer_hour,
                window: Duration::from_secs(3600),
            },
        ]
    }
}

/// The default cap on a customer's holding orders.
pub const DEFAULT_MAX_HOLDS_PER_CUSTOMER: u32 = 5;
/// Anonymous live connections per source IP: a household or an office behind one address
/// fits; one script does not get more.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: u32 = 100;
/// Live connections per signed-in user: a few tabs and devices.
pub const DEFAULT_MAX_CONNECTIONS_PER_USER: u32 = 10;
/// Subscribe and unsubscribe messages per connection and minute: a storefront sends a few.
pub const DEFAULT_MAX_LIVE_MESSAGES_PER_MINUTE: u32 = 60;

impl Default for Config {
    fn default() -> Self {
        Self {
            hold: DEFAULT_HOLD,
            offline_after: DEFAULT_OFFLINE_AFTER,
            max_holds_per_customer: DEFAULT_MAX_HOLDS_PER_CUSTOMER,
            max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
            max_connections_per_user: DEFAULT_MAX_CONNECTIONS_PER_USER,
            max_live_messages_per_minute: DEFAULT_MAX_LIVE_MESSAGES_PER_MINUTE,
            digest_from_shards: bouquet_store::DIGEST_FROM_SHARDS,
            personal_data_days: bouquet_domain::order::DEFAULT_PERSONAL_DATA_DAYS,
            catalogue_indexes: CatalogueIndexes {
                price: true,
                rating: true,
            },
            reservations_per_minute: DEFAULT_RESERVATIONS_PER_MINUTE,
            declines_per_order: DEFAULT_DECLINES_PER_ORDER,
            declines_per_customer_hour: DEFAULT_DECLINES_PER_CUSTOMER_HOUR,
            commission: default_commission(),
            payouts_required: true,
        }
    }
}

/// A container that cannot be configured: init fails, and Lambda reports it as such.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Environment(#[from] bouquet_aws::NotLambdaEnvironment),
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{name}={value:?} is not a number of seconds")]
    NotSeconds { name: &'static str, value: String },
    #[error("{name}={value:?} is not a positive whole number")]
    NotACount { name: &'static str, value: String },
    #[error("{name}={value:?} is not enabled or deferred")]
    CatalogueIndex { name: &'static str, value: String },
    #[error("COMMISSION_BASIS_POINTS={0:?} is not a whole number of basis points from 0 to 10000")]
    Commission(String),
    #[error("REQUIRE_PAYOUT_ACCOUNTS={0:?} is not true or false")]
    RequirePayoutAccounts(String),
    #[error("PAYMENT_PROVIDER={0:?} is not simulated or stripe")]
    PaymentProvider(String),
    #[error("PAYMENT_PROVIDER=simulated moves no money: it also needs ALLOW_SIMULATED_PAYMENTS=true (the template's AllowSimulatedPayments)")]
    SimulatedNotAllowed,
    #[error("the payment provider cannot be set up")]
    Payments(#[source] Box<dyn std::error::Error + Send + Sync>),
}

fn default_commission() -> CommissionRate {
    CommissionRate::from_basis_points(DEFAULT_COMMISSION_BASIS_POINTS)
        .expect("the default commission is in range")
}

fn commission_from_env() -> Result<CommissionRate, ConfigError> {
    match std::env::var("COMMISSION_BASIS_POINTS") {
        Ok(value) => value
            .parse()
            .ok()
            .and_then(|bps| CommissionRate::from_basis_points(bps).ok())
            .ok_or(ConfigError::Commission(value)),
        Err(_) => Ok(default_commission()),
    }
}

fn seconds_from_env(name: &'static str, default: Duration) -> Result<Duration, ConfigError> {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .map(Duration::from_secs)
            .map_err(|_| ConfigError::NotSeconds { name, value }),
        Err(_) => Ok(default),
    }
}

/// The catalogue's indexes a stack may add in a later deploy than the table (DynamoDB adds
/// one GSI per table update: docs/deploying.md); their orders answer 400 until then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogueIndexes {
    /// `CataloguePriceIndex` (`CATALOGUE_PRICE_INDEX`): `?sort=price`, `?sort=-price`.
    pub price: bool,
    /// `CatalogueRatingIndex` (`CATALOGUE_RATING_INDEX`): `?sort=rating`.
    pub rating: bool,
}

/// `enabled` (or unset) or `deferred`.
fn index_from_env(name: &'static str) -> Result<bool, ConfigError> {
    match std::env::var(name).as_deref() {
        Err(_) | Ok("enabled") => Ok(true),
        Ok("deferred") => Ok(false),
        Ok(other) => Err(ConfigError::CatalogueIndex {
            name,
            value: other.to_owned(),
        }),
    }
}

fn count_from_env(name: &'static str, default: u32) -> Result<u32, ConfigError> {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or(ConfigError::NotACount { name, value }),
        Err(_) => Ok(default),
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            hold: seconds_from_env("HOLD_DURATION_SECONDS", DEFAULT_HOLD)?,
            offline_after: seconds_from_env("OFFLINE_AFTER_SECONDS", DEFAULT_OFFLINE_AFTER)?,
            max_holds_per_customer: count_from_env(
                "MAX_HOLDS_PER_CUSTOMER",
                DEFAULT_MAX_HOLDS_PER_CUSTOMER,
            )?,
            max_connections_per_ip: count_from_env(
                "MAX_CONNECTIONS_PER_IP",
                DEFAULT_MAX_CONNECTIONS_PER_IP,
            )?,
            max_connections_per_user: count_from_env(
                "MAX_CONNECTIONS_PER_USER",
                DEFAULT_MAX_CONNECTIONS_PER_USER,
            )?,
            max_live_messages_per_minute: count_from_env(
                "MAX_LIVE_MESSAGES_PER_MINUTE",
                DEFAULT_MAX_LIVE_MESSAGES_PER_MINUTE,
            )?,
            digest_from_shards: count_from_env(
                "LIVE_DIGEST_FROM_SHARDS",
                bouquet_store::DIGEST_FROM_SHARDS,
            )?,
            personal_data_days: count_from_env(
                "PERSONAL_DATA_DAYS",
                u32::from(bouquet_domain::order::DEFAULT_PERSONAL_DATA_DAYS),
            )?
            .try_into()
            .map_err(|_| ConfigError::NotACount {
                name: "PERSONAL_DATA_DAYS",
                value: "more than 65535".into(),
            })?,
            catalogue_indexes: CatalogueIndexes {
                price: index_from_env("CATALOGUE_PRICE_INDEX")?,
                rating: index_from_env("CATALOGUE_RATING_INDEX")?,
            },
            reservations_per_minute: count_from_env(
                "RESERVATIONS_PER_CUSTOMER_PER_MINUTE",
                DEFAULT_RESERVATIONS_PER_MINUTE,
            )?,
            declines_per_order: count_from_env(
                "PAYMENT_DECLINES_PER_ORDER",
                DEFAULT_DECLINES_PER_ORDER,
            )?,
            declines_per_customer_hour: count_from_env(
                "PAYMENT_DECLINES_PER_CUSTOMER_PER_HOUR",
                DEFAULT_DECLINES_PER_CUSTOMER_HOUR,
            )?,
            commission: commission_from_env()?,
            payouts_required: match std::env::var("REQUIRE_PAYOUT_ACCOUNTS").as_deref() {
                Err(_) | Ok("true") => true,
                Ok("false") => false,
                Ok(other) => return Err(ConfigError::RequirePayoutAccounts(other.to_owned())),
            },
        })
    }
}

#[derive(Clone)]
pub struct App {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub config: Config,
    /// The payment seam (`from_env`: the simulated gateway with its ledger in the table).
    pub payments: Arc<dyn PaymentGateway>,
    /// Channels' subscription shard counts, as this container last read them.
    pub shard_counts: crate::shard_counts::ShardCounts,
    /// Crowded shards' subscriber lists, as this container's fan-out last read them.
    pub shard_audiences: crate::shard_audiences::ShardAudiences,
    /// The adapters beyond the table, the clock and the payments, each built at its first use
    /// from the container's SDK configuration (an app a test made has none: it gives the ports
    /// it uses).
    pub ports: crate::ports::Ports,
}

impl App {
    pub fn new(store: Store, clock: Arc<dyn Clock>, config: Config) -> Self {
        Self {
            store,
            clock,
            config,
            payments: Arc::new(SimulatedGateway::new()),
            shard_counts: crate::shard_counts::ShardCounts::default(),
            shard_audiences: crate::shard_audiences::ShardAudiences::default(),
            ports: crate::ports::Ports::default(),
        }
    }

    pub fn with_ports(mut self, ports: crate::ports::Ports) -> Self {
        self.ports = ports;
        self
    }

    pub fn with_payments(mut self, payments: Arc<dyn PaymentGateway>) -> Self {
        self.payments = payments;
        self
    }

    /// The production wiring: `TABLE_NAME` from the template's environment, the system clock,
    /// and the simulated gateway. A function built this way takes no real payments.
    pub async fn from_env() -> Result<Self, ConfigError> {
        Self::from_sdk(&aws_sdk_config()?).await
    }

    /// The same, on an SDK configuration the function also uses for clients of its own.
    pub async fn from_sdk(sdk: &bouquet_aws::SdkConfig) -> Result<Self, ConfigError> {
        let table = std::env::var("TABLE_NAME").map_err(|_| ConfigError::Missing("TABLE_NAME"))?;
        let dynamodb = bouquet_aws::client!(aws_sdk_dynamodb, sdk);
        // Live connections in their own table (the template's `LiveTable`, off the outbox
        // stream); without one configured they share the marketplace table.
        let store = match std::env::var("LIVE_TABLE_NAME") {
            Ok(live) => Store::new(dynamodb.clone(), table.clone()).with_live_table(live),
            Err(_) => Store::new(dynamodb.clone(), table.clone()),
        };
        let payments = simulated_payments(dynamodb, table)?;
        let mut app =
            Self::new(store, Arc::new(SystemClock), Config::from_env()?).with_payments(payments);
        app.ports = crate::ports::Ports::from_sdk(sdk);
        Ok(app)
    }

    /// For the functions that take payments (pay-order, expire-reservations, payment-webhook):
    /// the gateway `PAYMENT_PROVIDER` names. Only they call this, so only they link the Stripe
    /// adapter and its SSM client, even in one build of the whole workspace, where cargo
    /// unifies the `stripe` feature across every function.
    #[cfg(feature = "stripe")]
    pub async fn taking_payments(sdk: &bouquet_aws::SdkConfig) -> Result<Self, ConfigError> {
        let app = Self::from_sdk(sdk).await?;
        if std::env::var("PAYMENT_PROVIDER").as_deref() != Ok("stripe") {
            return Ok(app);
        }
        let stripe = bouquet_payments::stripe::StripeGateway::from_env(sdk)
            .await
            .map_err(|e| ConfigError::Payments(Box::new(e)))?;
        Ok(app.with_payments(Arc::new(stripe)))
    }
}

/// The gateway of a function that takes no payments: the simulated one, whose charges are
/// items of the table so every function sees them. With `PAYMENT_PROVIDER=stripe` it refuses
/// loudly, should such a function ever be asked to charge.
fn simulated_payments(
    dynamodb: aws_sdk_dynamodb::Client,
    table: String,
) -> Result<Arc<dyn PaymentGateway>, ConfigError> {
    // Fail closed: the simulated gateway gives goods away, so it takes two settings that say
    // so; anything else is refused at init, before any request is served.
    match (
        std::env::var("PAYMENT_PROVIDER").as_deref(),
        std::env::var("ALLOW_SIMULATED_PAYMENTS").as_deref(),
    ) {
        (Ok("simulated"), Ok("true")) => Ok(Arc::new(SimulatedGateway::with_ledger(
            TableLedger::new(dynamodb, table),
        ))),
        (Ok("simulated"), _) => Err(ConfigError::SimulatedNotAllowed),
        (Ok("stripe"), _) => Ok(Arc::new(bouquet_payments::NotLinked("stripe"))),
        (Ok(other), _) => Err(ConfigError::PaymentProvider(other.to_owned())),
        (Err(_), _) => Err(ConfigError::Missing("PAYMENT_PROVIDER")),
    }
}
