//! One test's world: a table of its own made from `template.yaml`, a clock the test moves,
//! the simulated gateway (its ledger in memory, so the test counts charges and refunds).

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::{Credentials, Region};
use bouquet_app::domain::bouquet::NewBouquet;
use bouquet_app::domain::events::{DomainEvent, EventData};
use bouquet_app::domain::identity::{Identity, Role};
use bouquet_app::domain::vase::Vase;
use bouquet_app::domain::vendor::AccountReport;
use bouquet_app::domain::{
    Bouquet, BouquetId, BouquetStatus, CustomerId, ManualClock, Order, OrderId, Timestamp, VaseId,
    Vendor, VendorId,
};
use bouquet_app::orders::{Action, TransitionError};
use bouquet_app::payment::{self, Paid, PayError};
use bouquet_app::payments::{OnboardingLinks, SimulatedGateway};
use bouquet_app::reservation::{ReserveError, ReserveFrom};
use bouquet_app::store::{IdempotencyPut, Store};
use bouquet_app::{listing, payouts, App, Config, Idempotency, Replayable};
use bouquet_template::Template;

/// 2026-12-02T16:16:51Z: every test starts here.
pub const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);
pub const CORRELATION: &str = "app-test";

pub struct World {
    pub app: App,
    pub clock: Arc<ManualClock>,
    pub gateway: Arc<SimulatedGateway>,
    /// The upload bucket's delivery photos, which redaction and erasure remove.
    pub private_photos: Arc<bouquet_photos::MemoryObjects>,
    /// The table, for tests that lay items down as a crowd would.
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub table: String,
}

/// The local cloud's DynamoDB (`localstack/dynamodb-engine`), as `localstack/lib.sh` sets it.
fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .unwrap_or_else(|_| "http://127.0.0.1:4567".to_owned())
}

impl World {
    pub async fn new() -> Self {
        Self::with_config(Config::default()).await
    }

    pub async fn with_config(config: Config) -> Self {
        let sdk = aws_sdk_dynamodb::Config::builder()
            .behavior_version_latest()
            .endpoint_url(endpoint())
            .region(Region::new("eu-west-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "app-tests"))
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(sdk);
        let table = format!("app-{}", ulid::Ulid::new().to_string().to_lowercase());
        let template = Template::repository().expect("template.yaml parses");
        let created = tokio::time::timeout(
            Duration::from_secs(10),
            bouquet_template::dynamodb::create_table(&client, &template, "MarketTable", &table),
        )
        .await;
        if !matches!(created, Ok(Ok(_))) {
            panic!(
                "\n\nNo table on the local DynamoDB at {} ({created:?}).\nRun the tests with ./localstack/test.sh, which starts it.\n\n",
                endpoint()
            );
        }
        let clock = Arc::new(ManualClock::at(T0));
        let gateway = Arc::new(SimulatedGateway::new());
        let private_photos = Arc::new(bouquet_photos::MemoryObjects::default());
        let app = App::new(
            Store::new(client.clone(), table.clone()),
            clock.clone(),
            config,
        )
        .with_payments(gateway.clone());
        let ports = app
            .ports
            .clone()
            .with_private_photos(private_photos.clone());
        let app = app.with_ports(ports);
        Self {
            app,
            private_photos,
            clock,
            gateway,
            dynamodb: client,
            table,
        }
    }

    /// A new world with one bouquet reserved by `customer`: the order most tests start from.
    pub async fn with_reserved_order(customer_name: &str) -> (Self, Bouquet, Order) {
        let world = Self::new().await;
        let bouquet = world.bouquet().await;
        let order = world.reserved(&customer(customer_name), &[&bouquet]).await;
        (world, bouquet, order)
    }

    /// A new world with one bouquet reserved and paid for by `customer` with a good card.
    pub async fn with_paid_order(customer_name: &str) -> (Self, Bouquet, Order) {
        let (world, bouquet, order) = Self::with_reserved_order(customer_name).await;
        world.pay_by_card(customer_name, order.order_id).await;
        (world, bouquet, order)
    }

    /// The stored status of order `id`.
    pub async fn status_of(&self, id: OrderId) -> bouquet_app::domain::OrderStatus {
        self.order_now(id).await.status
    }

    pub fn now(&self) -> Timestamp {
        self.app.clock.now()
    }

    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// A shop that takes payments: its payout account opened and reported able to take
    /// charges, as its onboarding at the PSP ends.
    pub async fn vendor(&self) -> Vendor {
        let vendor = self.vendor_without_payouts().await;
        let onboarding = payouts::start_onboarding(
            &self.app,
            &vendor_caller(&vendor),
            vendor.vendor_id,
            &OnboardingLinks {
                return_url: "http://127.0.0.1:4000/#/shop".into(),
                refresh_url: "http://127.0.0.1:4000/#/shop".into(),
            },
            CORRELATION,
            self.now(),
        )
        .await
        .expect("onboarding starts");
        self.report_account(&vendor, &onboarding.account_id, true)
            .await;
        self.app
            .store
            .vendor(vendor.vendor_id, true)
            .await
            .expect("read")
            .expect("the shop")
    }

    /// A shop whose payout account was never opened: its bouquets cannot be reserved.
    pub async fn vendor_without_payouts(&self) -> Vendor {
        let vendor = listing::onboard_vendor(&self.app, "Fleur", None, CORRELATION, self.now())
            .await
            .expect("vendor onboarded");
        done(vendor)
    }

    /// The PSP reports `account_id` of `vendor` taking charges (and paying out) or not, now.
    pub async fn report_account(
        &self,
        vendor: &Vendor,
        account_id: &str,
        enabled: bool,
    ) -> payouts::Reported {
        let report = AccountReport {
            account_id: account_id.into(),
            charges_enabled: enabled,
            payouts_enabled: enabled,
            reported_at: self.now(),
        };
        payouts::record_report(
            &self.app,
            vendor.vendor_id,
            &report,
            CORRELATION,
            self.now(),
        )
        .await
        .expect("report recorded")
    }

    /// An available bouquet of a new vendor.
    pub async fn bouquet(&self) -> Bouquet {
        let vendor = self.vendor().await;
        self.bouquet_of(&vendor).await
    }

    pub async fn bouquet_of(&self, vendor: &Vendor) -> Bouquet {
        self.listed(vendor, "24.50", None).await
    }

    /// Two bouquets of `vendor`, listed one after the other.
    pub async fn two_bouquets_of(&self, vendor: &Vendor) -> (Bouquet, Bouquet) {
        (self.bouquet_of(vendor).await, self.bouquet_of(vendor).await)
    }

    /// A bouquet of `vendor` at `amount` euros, in `vase` if one is given.
    pub async fn listed(&self, vendor: &Vendor, amount: &str, vase: Option<VaseId>) -> Bouquet {
        let vase = vase.map(|v| v.to_string());
        let new = NewBouquet::validate("Peonies", Some("pink"), (amount, "EUR"), vase.as_deref())
            .expect("a valid listing");
        let listed = self
            .list_bouquet(vendor.vendor_id, new)
            .await
            .expect("bouquet listed");
        done(listed)
    }

    /// `listing::list_bouquet` of `new` for `vendor_id`, now, without an idempotency key.
    pub async fn list_bouquet(
        &self,
        vendor_id: VendorId,
        new: NewBouquet,
    ) -> Result<Replayable<Bouquet>, listing::ListingError> {
        let now = self.now();
        listing::list_bouquet(&self.app, vendor_id, new, None, CORRELATION, now).await
    }

    /// Order `order_id`'s `action` by `caller`, now, without an idempotency key.
    pub async fn transition(
        &self,
        caller: &Identity,
        order_id: OrderId,
        action: Action<'_>,
    ) -> Result<Replayable<Order>, TransitionError> {
        let now = self.now();
        bouquet_app::orders::transition(&self.app, caller, order_id, action, None, CORRELATION, now)
            .await
    }

    /// `order`'s shop rejects it for `reason`, withdrawing its bouquets or not; the rejection
    /// must go through.
    pub async fn rejected_by_shop(&self, order: &Order, reason: &str, withdraw: bool) -> Order {
        let reject = Action::Reject { reason, withdraw };
        let rejected = self
            .transition(&shop_caller(order.vendor_id), order.order_id, reject)
            .await;
        done(rejected.expect("rejected"))
    }

    /// A reservation for `customer` from `from`, now, without an idempotency key.
    pub async fn reserve(
        &self,
        customer: &CustomerId,
        from: &ReserveFrom,
    ) -> Result<Replayable<Order>, ReserveError> {
        let now = self.now();
        bouquet_app::reservation::reserve(&self.app, customer, from, None, CORRELATION, now).await
    }

    /// The first page of ten of the catalogue's `scope`, unfiltered, now.
    pub async fn catalogue_page(
        &self,
        scope: bouquet_app::bouquets::CatalogueScope,
    ) -> bouquet_app::store::Page<Bouquet> {
        bouquet_app::bouquets::catalogue(
            &self.app,
            scope,
            &Default::default(),
            None,
            10,
            self.now(),
        )
        .await
        .expect("the catalogue reads")
    }

    pub async fn bouquet_now(&self, id: BouquetId) -> Bouquet {
        self.app.store.bouquets(&[id]).await.expect("read")[0]
            .clone()
            .expect("the bouquet exists")
    }

    /// The bouquet's item as stored (its index keys, which the domain does not show).
    pub async fn bouquet_item(
        &self,
        id: BouquetId,
    ) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
        use aws_sdk_dynamodb::types::AttributeValue;
        self.dynamodb
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("BOUQUET#{id}")))
            .key("sk", AttributeValue::S("BOUQUET".into()))
            .consistent_read(true)
            .send()
            .await
            .expect("read")
            .item
            .expect("the bouquet exists")
    }

    /// The names of the outbox events in the table, with the details' text (a scan: tests
    /// only).
    pub async fn events(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .dynamodb
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            for item in page.items() {
                let text = |name: &str| {
                    item.get(name)
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default()
                };
                if item.contains_key("eventName") {
                    found.push((text("eventName"), text("detail")));
                }
            }
            match page.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return found,
            }
        }
    }

    pub async fn order_now(&self, id: OrderId) -> Order {
        self.app
            .store
            .order(id)
            .await
            .expect("read")
            .expect("the order exists")
    }

    /// A reservation of `bouquets` by `customer`, with its delivery details given (as the
    /// checkout does before paying).
    pub async fn reserved(&self, customer: &CustomerId, bouquets: &[&Bouquet]) -> Order {
        let order = self.reserved_without_delivery(customer, bouquets).await;
        self.give_delivery(customer, &order).await
    }

    /// A reservation of `bouquets` by `customer`, nothing more.
    pub async fn reserved_without_delivery(
        &self,
        customer: &CustomerId,
        bouquets: &[&Bouquet],
    ) -> Order {
        let ids = bouquets.iter().map(|b| b.bouquet_id).collect();
        let order = bouquet_app::reservation::reserve(
            &self.app,
            customer,
            &bouquet_app::reservation::ReserveFrom::Bouquets(ids),
            None,
            CORRELATION,
            self.now(),
        )
        .await
        .expect("reserved");
        done(order)
    }

    /// `customer` gives `order` its delivery details (tomorrow, to Camille in Paris).
    pub async fn give_delivery(&self, customer: &CustomerId, order: &Order) -> Order {
        let given = bouquet_app::delivery::set_order_delivery(
            &self.app,
            &customer_caller(customer.as_str()),
            order.order_id,
            &delivery_request(customer.as_str(), self.now()),
            Some(order.version),
            None,
            CORRELATION,
            self.now(),
        )
        .await
        .expect("delivery details given");
        done(given)
    }
}

impl World {
    /// `vendor` saves its first delivery settings (they must be valid).
    pub async fn first_settings(
        &self,
        vendor: &Vendor,
        settings: bouquet_app::domain::delivery::DeliverySettings,
    ) {
        bouquet_app::delivery::change_settings(
            &self.app,
            &vendor_caller(vendor),
            vendor.vendor_id,
            settings,
            None,
            CORRELATION,
            self.now(),
        )
        .await
        .expect("settings saved");
    }
}

/// Delivery details a shop without settings takes at `now` from `customer` (mail to their
/// verified address): tomorrow, in Paris.
pub fn delivery_request(
    customer: &str,
    now: Timestamp,
) -> bouquet_app::domain::delivery::DeliveryRequest {
    serde_json::from_value(serde_json::json!({
        "recipient": { "name": "Camille Martin", "phone": "+33 6 12 34 56 78" },
        "address": { "street": "12 rue des Fleurs", "postcode": "75011", "city": "Paris", "country": "FR" },
        "date": bouquet_app::domain::delivery::date_after(now, 1, "UTC").expect("a date"),
        "slot": "morning",
        "cardMessage": "Happy birthday",
        "contactEmail": verified_email(customer),
    }))
    .expect("a delivery request")
}

impl World {
    /// `customer` pays `order_id` with `token`, without an idempotency key.
    pub async fn pay(
        &self,
        customer_name: &str,
        order_id: OrderId,
        token: &str,
    ) -> Result<Replayable<Paid>, PayError> {
        let customer = customer(customer_name);
        payment::pay(
            &self.app,
            &customer,
            order_id,
            Some(token),
            None,
            CORRELATION,
            self.now(),
        )
        .await
    }

    /// `customer` pays `order_id` with a card the gateway accepts; the payment must go through.
    pub async fn pay_by_card(&self, customer_name: &str, order_id: OrderId) -> Replayable<Paid> {
        self.pay(customer_name, order_id, "tok_visa")
            .await
            .expect("paid")
    }
}

impl World {
    /// A vase of `vendor`, registered in the table as the saga's last step leaves it.
    pub async fn vase_of(&self, vendor: &Vendor) -> Vase {
        let vase = Vase::register(VaseId::generate(), vendor.vendor_id, self.now());
        let event = DomainEvent::new(
            vase.vase_id,
            vase.version,
            self.now(),
            CORRELATION,
            EventData::VaseRegistered {
                vase_id: vase.vase_id,
                vendor_id: vendor.vendor_id,
            },
        );
        self.app
            .store
            .create_vase(&vase, &event, None, self.now())
            .await
            .expect("vase stored");
        vase
    }

    pub async fn vase_now(&self, vase_id: VaseId) -> Vase {
        self.app
            .store
            .vase(vase_id, true)
            .await
            .expect("read")
            .expect("the vase exists")
    }
}

/// The caller a vendor's token makes.
pub fn vendor_caller(vendor: &Vendor) -> Identity {
    shop_caller(vendor.vendor_id)
}

/// A vendor's caller by the shop's id alone (a shop that need not exist).
pub fn shop_caller(vendor_id: VendorId) -> Identity {
    Identity {
        subject: customer("florist"),
        role: Role::Vendor,
        vendor_id: Some(vendor_id),
        email: Some(verified_email("florist")),
    }
}

pub fn admin_caller() -> Identity {
    Identity {
        subject: customer("ops"),
        role: Role::Admin,
        vendor_id: None,
        email: Some(verified_email("ops")),
    }
}

pub fn customer_caller(name: &str) -> Identity {
    Identity {
        subject: customer(name),
        role: Role::Customer,
        vendor_id: None,
        email: Some(verified_email(name)),
    }
}

/// The address a test caller `name` signed in with and verified.
pub fn verified_email(name: &str) -> String {
    format!("{name}@example.com")
}

pub fn customer(name: &str) -> CustomerId {
    CustomerId::parse(name).expect("a customer id")
}

pub fn done<T: std::fmt::Debug>(outcome: Replayable<T>) -> T {
    match outcome {
        Replayable::Done(value) => value,
        other => panic!("expected the work done, got {other:?}"),
    }
}

/// How many of `events` (as [`World::events`] reads them) are named `name`.
pub fn count_named(events: &[(String, String)], name: &str) -> usize {
    events.iter().filter(|(named, _)| named == name).count()
}

pub fn is_available(bouquet: &Bouquet) -> bool {
    bouquet.status == BouquetStatus::Available
}

/// What an adapter would remember under `key_hash`: the order's id as the body.
pub fn remembering(key_hash: &str, now: Timestamp) -> impl Fn(&Order) -> IdempotencyPut + Sync {
    let key_hash = key_hash.to_owned();
    move |order: &Order| {
        IdempotencyPut::new(
            key_hash.clone(),
            "fingerprint".to_owned(),
            201,
            order.order_id.to_string(),
            None,
            now,
        )
    }
}

pub fn key<'a>(
    key_hash: &'a str,
    record: &'a (dyn Fn(&Order) -> IdempotencyPut + Sync),
) -> Idempotency<'a, Order> {
    Idempotency { key_hash, record }
}
