//! The system tests' harness, on top of everything. Every test gets its own table (a unique
//! name, created from `template.yaml`) on the AWS emulator at `AWS_ENDPOINT_URL`, its own
//! manual clock, and calls the real handlers with API Gateway v2 requests built from each
//! route's example in `infra/openapi.yaml` (`bouquet_testkit::contract`).
//!
//! A test that needs the emulator fails loudly when it cannot reach it; it never skips.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

use bouquet_app::domain::{ManualClock, Timestamp};
use bouquet_app::store::Store;
use bouquet_app::{App, Config};
use bouquet_template::Template;

pub mod audit;
pub mod blackbox;
pub mod iam;
pub mod identity;
pub mod in_process;
pub mod live;
pub mod season;
pub mod soak;
pub mod vases;

pub use bouquet_testkit::*;
pub use in_process::InProcess;

/// The signing key the tests' local API uses.
pub const JWT_SECRET: &str = "testkit-secret";

/// The command-line tools' log on stderr, filtered by `RUST_LOG` (stdout is their report).
pub fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
}

/// A built function binary (`target/<profile>/<name>`). `./localstack/test.sh` builds the
/// ones the tests start; a missing one fails the test with how to build it.
/// Every item of `table`, page by page, read consistently (tests and the soak's auditor only:
/// a Scan).
pub async fn scan_all(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<Vec<HashMap<String, AttributeValue>>, String> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("scanning {table}: {}", bouquet_app::store::describe(&e)))?;
        items.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return Ok(items),
        }
    }
}

/// The request API Gateway sends the HTTP function `binary`: its OpenAPI operation's example.
pub fn fixture(binary: &str) -> ApiRequest {
    ApiRequest::fixture(binary)
}

/// The path parameters the tests set most, by name (each is [`ApiRequest::path`]).
pub trait PathParams: Sized {
    fn order_id(self, id: &str) -> Self;
    fn bouquet_id(self, id: &str) -> Self;
    fn vendor_id(self, id: &str) -> Self;
    /// As a member of `vendor_id`'s shop, on that shop's own route.
    fn own_shop(self, vendor_id: &str) -> Self;
}

impl PathParams for ApiRequest {
    fn order_id(self, id: &str) -> Self {
        self.path("orderId", id)
    }

    fn bouquet_id(self, id: &str) -> Self {
        self.path("bouquetId", id)
    }

    fn vendor_id(self, id: &str) -> Self {
        self.path("vendorId", id)
    }

    fn own_shop(self, vendor_id: &str) -> Self {
        self.vendor(vendor_id).vendor_id(vendor_id)
    }
}

/// An answer's status with what most assertions check beside it, as one tuple.
pub trait Outcome {
    /// The status and the problem code.
    fn status_and_code(&self) -> (u16, Option<&str>);
    /// The status and the body's `status` (an order's or a bouquet's state).
    fn status_and_state(&self) -> (u16, Option<&str>);
    /// The answer's body.
    fn body_json(&self) -> &Value;

    /// Asserts the status and the problem code, showing the body when they are not.
    #[track_caller]
    fn assert_code(&self, status: u16, code: &str) {
        assert_pair(self.status_and_code(), (status, code), self.body_json());
    }

    /// Asserts the status and the body's `status`, showing the body when they are not.
    #[track_caller]
    fn assert_state(&self, status: u16, state: &str) {
        assert_pair(self.status_and_state(), (status, state), self.body_json());
    }
}

/// Asserts an answer's status and one of its strings, showing its body when they are not.
#[track_caller]
fn assert_pair(actual: (u16, Option<&str>), (status, expected): (u16, &str), body: &Value) {
    assert_eq!(actual, (status, Some(expected)), "{body}");
}

/// Implements [`Outcome`] for answers with a `status`, a `body` and a `code()`.
macro_rules! outcome_of {
    ($($answer:ty),*) => {$(
        impl Outcome for $answer {
            fn status_and_code(&self) -> (u16, Option<&str>) {
                (self.status, self.code())
            }

            fn status_and_state(&self) -> (u16, Option<&str>) {
                (self.status, self.body["status"].as_str())
            }

            fn body_json(&self) -> &Value {
                &self.body
            }
        }
    )*};
}

outcome_of!(ApiResponse, http_client::HttpReply);

/// The local API at `api` called with `authorization` (the header's value, a bearer token):
/// one line a request.
pub fn bearer(api: std::net::SocketAddr, authorization: &str) -> Bearer<'_> {
    Bearer { api, authorization }
}

pub struct Bearer<'a> {
    api: std::net::SocketAddr,
    authorization: &'a str,
}

impl Bearer<'_> {
    pub async fn get(&self, path: &str) -> http_client::HttpReply {
        self.send("GET", path, &[], None).await
    }

    pub async fn put(&self, path: &str) -> http_client::HttpReply {
        self.send("PUT", path, &[], None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> http_client::HttpReply {
        self.send("POST", path, &[], Some(body)).await
    }

    /// Any request, with `headers` besides the authorization.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> http_client::HttpReply {
        let mut all = vec![("authorization", self.authorization)];
        all.extend_from_slice(headers);
        http_client::send(self.api, method, path, &all, body).await
    }
}

/// An administrator onboards the vendor `name` over the local API at `api`; returns its id
/// and the bearer token of its member `seller-1`.
pub async fn vendor_over_http(api: std::net::SocketAddr, name: &str) -> (String, String) {
    let admin = token("admin", "admin-1", None);
    let vendor = bearer(api, &admin)
        .post("/v1/vendors", &json!({ "name": name }))
        .await;
    assert_eq!(vendor.status, 201, "{:?}", vendor.body);
    let vendor_id = vendor.body["vendorId"].as_str().unwrap().to_owned();
    let seller = token("vendor", "seller-1", Some(&vendor_id));
    (vendor_id, seller)
}

/// `seller` lists the bouquet `name` at `amount` euros in `vendor_id`'s shop over the local
/// API at `api`.
pub async fn list_over_http(
    api: std::net::SocketAddr,
    seller: &str,
    vendor_id: &str,
    name: &str,
    amount: &str,
) -> http_client::HttpReply {
    bearer(api, seller)
        .post(
            &format!("/v1/vendors/{vendor_id}/bouquets"),
            &json!({ "name": name, "price": { "amount": amount, "currency": "EUR" } }),
        )
        .await
}

/// The customer whose bearer token is `authorization` reserves its cart over the local API at
/// `api`, under `idempotency_key`; the order must be reserved.
pub async fn reserve_cart_over_http(
    api: std::net::SocketAddr,
    authorization: &str,
    idempotency_key: &str,
) -> http_client::HttpReply {
    let order = bearer(api, authorization)
        .send(
            "POST",
            "/v1/orders",
            &[("idempotency-key", idempotency_key)],
            None,
        )
        .await;
    order.assert_state(201, "reserved");
    order
}

/// Creates the queue `name` on the emulator's SQS; returns its URL.
pub async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    let created = sqs.create_queue().queue_name(name).send().await;
    created.expect("a queue").queue_url.expect("its URL")
}

/// Up to ten messages of `queue` received now (no long poll), hidden for `visibility_timeout`
/// seconds (`None`: the queue's own timeout).
pub async fn receive_now(
    sqs: &aws_sdk_sqs::Client,
    queue: &str,
    visibility_timeout: Option<i32>,
) -> Vec<aws_sdk_sqs::types::Message> {
    let output = sqs
        .receive_message()
        .queue_url(queue)
        .max_number_of_messages(10)
        .set_visibility_timeout(visibility_timeout)
        .wait_time_seconds(0)
        .send()
        .await
        .unwrap();
    output.messages.unwrap_or_default()
}

/// DynamoDB calls by operation, as [`CallCounter::by_operation`] counts them.
pub fn operation_counts(expected: &[(&str, usize)]) -> HashMap<String, usize> {
    expected.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The `events/` fixture of the function `binary` (its event, as JSON).
pub fn event_fixture(binary: &str) -> Value {
    let path = repository_root()
        .join("events")
        .join(format!("{binary}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON")
}

/// `binary`'s fixture sent by a member of `vendor_id`'s shop.
pub fn by_vendor(binary: &str, vendor_id: &str) -> ApiRequest {
    fixture(binary).vendor(vendor_id)
}

/// `binary`'s fixture sent by the customer `sub`.
pub fn by_customer(binary: &str, sub: &str) -> ApiRequest {
    fixture(binary).customer(sub)
}

/// The HTTP function API Gateway routes `request` to: its `routeKey` looked up in
/// template.yaml's routes (each fixture names its route, `template_consistency` checks).
pub fn routed_binary(request: &ApiRequest) -> String {
    static ROUTES: OnceLock<HashMap<String, String>> = OnceLock::new();
    let routes = ROUTES.get_or_init(|| {
        let template = Template::repository().expect("template.yaml");
        let routes = template.http_routes().expect("the template's routes");
        routes
            .into_iter()
            .map(|r| (format!("{} {}", r.method, r.path), r.binary))
            .collect()
    });
    let key = request.event()["routeKey"]
        .as_str()
        .expect("an HTTP fixture names its route");
    routes
        .get(key)
        .unwrap_or_else(|| panic!("no function serves {key}"))
        .clone()
}

pub fn function_binary(name: &str) -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repository_root().join("target"));
    let path = target.join("debug").join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build -p {name}` (./localstack/test.sh does)",
        path.display()
    );
    path
}

/// A bearer token the tests' local API accepts.
/// `app` with `registrar` as its IoT Core port (a test's registry: the emulator's, or one
/// that fails on purpose).
pub fn with_registrar(app: &App, registrar: &bouquet_app::iot::Registrar) -> App {
    let ports = app
        .ports
        .clone()
        .with_registrar(Arc::new(registrar.clone()));
    app.clone().with_ports(ports)
}

pub fn token(role: &str, sub: &str, vendor_id: Option<&str>) -> String {
    format!(
        "Bearer {}",
        devstack::jwt::mint_verified(
            JWT_SECRET,
            role,
            sub,
            vendor_id,
            Some(&verified_email(sub)),
            600
        )
        .expect("mint")
    )
}

/// One test's cloud: a fresh table, a clock the test moves, the app the handlers get.
/// The Stripe webhook signing secret the in-process `payment-webhook` checks against.
pub const WEBHOOK_SECRET: &str = "whsec_system_tests";
/// The Connect endpoint's signing secret: the connected accounts' events are signed with it.
pub const CONNECT_WEBHOOK_SECRET: &str = "whsec_system_tests_connect";

/// Stripe's `account.updated` of `account` (`vendor_id`'s shop), taking charges and paying out
/// or not, created at `created` (unix seconds), as Stripe sends it to the Connect endpoint
/// (naming the `account`), and its `Stripe-Signature` under [`CONNECT_WEBHOOK_SECRET`] then.
pub fn account_report_event(
    account: &str,
    vendor_id: &str,
    enabled: bool,
    created: i64,
) -> (Value, String) {
    let event = json!({
        "id": format!("evt_{}", ulid::Ulid::new()), "type": "account.updated", "created": created,
        "livemode": false, "account": account,
        "data": {"object": {"id": account, "object": "account", "charges_enabled": enabled,
            "payouts_enabled": enabled, "metadata": {"vendorId": vendor_id}}},
    });
    let signature = bouquet_app::payments::stripe_webhook::sign(
        event.to_string().as_bytes(),
        CONNECT_WEBHOOK_SECRET,
        created,
    );
    (event, signature)
}

/// [`account_report_event`] as a request to the webhook route.
pub fn account_report(account: &str, vendor_id: &str, enabled: bool, created: i64) -> ApiRequest {
    let (event, signature) = account_report_event(account, vendor_id, enabled, created);
    fixture("payment-webhook")
        .raw_body(&event.to_string())
        .header("stripe-signature", &signature)
}

/// The kinds of function a test runs with an event of its own, by what triggers them.
#[derive(Clone, Copy)]
enum Trigger {
    Scheduled,
    Operator,
    Event,
}

impl Trigger {
    /// What a failure calls this kind of function, and the functions of this kind.
    fn functions(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Trigger::Scheduled => ("scheduled", in_process::SCHEDULED_FUNCTIONS),
            Trigger::Operator => ("operator", in_process::OPERATOR_FUNCTIONS),
            Trigger::Event => ("event", in_process::EVENT_FUNCTIONS),
        }
    }
}

pub struct TestCloud {
    pub app: App,
    /// `register-vase`'s IoT Core: the emulator's, with a test vase policy.
    pub registrar: Arc<bouquet_app::iot::Registrar>,
    pub clock: Arc<ManualClock>,
    /// `add-vendor-member`'s directory: one in memory unless a test puts moto's pool in.
    pub directory: Arc<dyn bouquet_app::directory::UserDirectory>,
    /// `send-order-emails`' mailer: the emulator's SES from [`TestCloud::mail_sender`] (which
    /// [`TestCloud::verify_sender`] verifies), unless a test puts another in.
    pub mailer: Arc<dyn bouquet_app::mail::Mailer>,
    /// This test's own sender, so it reads only its own mail from the emulator.
    pub mail_sender: String,
    /// This test's photo buckets on the emulator (the template's `PhotoUploadBucket` and
    /// `PhotoBucket`), made at the first [`TestCloud::photos`].
    pub photo_buckets: devstack::console::PhotoBuckets,
    pub s3: aws_sdk_s3::Client,
    pub client: aws_sdk_dynamodb::Client,
    pub table: String,
    /// The test's `LiveTable` (connections and subscriptions).
    pub live_table: String,
    pub calls: CallCounter,
}

impl TestCloud {
    /// Creates this test's table from `template.yaml`. Panics, loudly, without an emulator.
    pub async fn new() -> Self {
        Self::with_config(Config::default()).await
    }

    /// A new cloud with one vendor onboarded, `name`: most tests' first two steps.
    pub async fn with_vendor(name: &str) -> (Self, String) {
        let cloud = Self::new().await;
        let vendor = cloud.vendor(name).await;
        (cloud, vendor)
    }

    pub async fn with_config(config: Config) -> Self {
        let sdk = emulator_sdk_config().await;
        let calls = CallCounter::default();
        let dynamo_config = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(calls.clone())
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(dynamo_config);
        let reachable =
            tokio::time::timeout(Duration::from_secs(5), client.list_tables().limit(1).send())
                .await;
        if !matches!(reachable, Ok(Ok(_))) {
            panic!(
                "\n\nThe local DynamoDB is not reachable at {} ({reachable:?}).\nRun the tests with ./localstack/test.sh, which starts it (and moto), or start ./localstack/dynamodb-engine there yourself.\n\n",
                dynamodb_endpoint()
            );
        }
        let registrar = Arc::new(bouquet_app::iot::Registrar {
            registry: vases::emulator_registry().await,
            policy: vases::test_vase_policy().await,
        });
        let table = format!("test-{}", ulid::Ulid::new().to_string().to_lowercase());
        let template = Template::repository().expect("template.yaml parses");
        devstack::provision::create_table(&client, &template, "MarketTable", &table)
            .await
            .expect("the table of template.yaml can be created");
        let live_table = format!("{table}-live");
        devstack::provision::create_table(&client, &template, "LiveTable", &live_table)
            .await
            .expect("the live table of template.yaml can be created");
        let clock = Arc::new(ManualClock::at(T0));
        // The simulated gateway as deployed: its ledger in this test's table (tests that
        // count charges put an in-memory one in with `with_gateway`).
        let ledger = bouquet_app::payments::TableLedger::new(client.clone(), table.clone());
        let app = App::new(
            Store::new(client.clone(), table.clone()).with_live_table(live_table.clone()),
            clock.clone(),
            config,
        )
        .with_payments(Arc::new(
            bouquet_app::payments::SimulatedGateway::with_ledger(ledger),
        ));
        calls.reset();
        let mail_sender = format!(
            "orders-{}@bouquet.example",
            ulid::Ulid::new().to_string().to_lowercase()
        );
        let mailer = Arc::new(bouquet_mail::ses::SesMailer::new(
            &sdk,
            mail_sender.clone(),
            None,
        ));
        let s3 = bouquet_photos::s3::client(&sdk);
        let photo_buckets = devstack::console::PhotoBuckets {
            uploads: format!("{table}-uploads"),
            photos: format!("{table}-photos"),
        };
        Self {
            app,
            registrar,
            clock,
            mailer,
            mail_sender,
            photo_buckets,
            s3,
            directory: Arc::new(bouquet_app::directory::MemoryDirectory::default()),
            client,
            table,
            live_table,
            calls,
        }
    }

    /// Sends `request` to the HTTP function its route names (as API Gateway does), so a
    /// test names the function once, in its fixture.
    pub async fn send(&self, request: ApiRequest) -> ApiResponse {
        self.call(&routed_binary(&request), request).await
    }

    /// [`Self::send`] with another app (e.g. another clock).
    pub async fn send_with(&self, app: App, request: ApiRequest) -> ApiResponse {
        self.call_with(app, &routed_binary(&request), request).await
    }

    /// Calls the HTTP function `binary` (a crate under `functions/`) with `request`.
    pub async fn call(&self, binary: &str, request: ApiRequest) -> ApiResponse {
        self.call_with(self.app.clone(), binary, request).await
    }

    /// The handlers in process on `app`, for the dev stack's HTTP API and mappings.
    pub fn in_process(&self, app: App) -> InProcess {
        let objects = Arc::new(bouquet_photos::s3::S3Objects::with_client(
            self.s3.clone(),
            &self.photo_buckets.uploads,
            &self.photo_buckets.photos,
        ));
        InProcess {
            app,
            registrar: self.registrar.clone(),
            verifier: Arc::new(ws_authorize::Verifier::new(vec![
                ws_authorize::Trust::secret(
                    devstack::jwt::ISSUER,
                    devstack::jwt::AUDIENCE,
                    &devstack::jwt::secret_from_env(),
                ),
            ])),
            pusher: None,
            queue: None,
            redrive: None,
            directory: self.directory.clone(),
            mailer: self.mailer.clone(),
            photo_signer: Arc::new(bouquet_photos::PostPolicySigner::with_credentials(
                aws_credential_types::Credentials::new("test", "test", None, None, "tests"),
                "eu-west-1",
                &self.photo_buckets.uploads,
                format!(
                    "{}/{}",
                    endpoint().trim_end_matches('/'),
                    self.photo_buckets.uploads
                ),
            )),
            photo_objects: objects.clone(),
            private_photos: objects,
        }
    }

    /// Makes this test's photo buckets on the emulator (idempotent).
    pub async fn photos(&self) -> &devstack::console::PhotoBuckets {
        let mut names = devstack::provision::Names::new();
        for (id, bucket) in [
            ("PhotoUploadBucket", &self.photo_buckets.uploads),
            ("PhotoBucket", &self.photo_buckets.photos),
        ] {
            devstack::provision::create_bucket(&self.s3, id, bucket, &mut names)
                .await
                .expect("the emulator makes a bucket");
        }
        &self.photo_buckets
    }

    /// Replaces the payment gateway (e.g. one that fails in a given way).
    /// Another instance over the same table and clock (a second container), with `gateway`.
    pub fn clone_with_gateway(
        &self,
        gateway: Arc<dyn bouquet_app::payments::PaymentGateway>,
    ) -> Self {
        Self {
            app: self.app.clone().with_payments(gateway),
            registrar: self.registrar.clone(),
            clock: self.clock.clone(),
            directory: self.directory.clone(),
            mailer: self.mailer.clone(),
            mail_sender: self.mail_sender.clone(),
            photo_buckets: self.photo_buckets.clone(),
            s3: self.s3.clone(),
            client: self.client.clone(),
            table: self.table.clone(),
            live_table: self.live_table.clone(),
            calls: self.calls.clone(),
        }
    }

    pub fn with_gateway(mut self, gateway: Arc<dyn bouquet_app::payments::PaymentGateway>) -> Self {
        self.app = self.app.clone().with_payments(gateway);
        self
    }

    /// Asserts the DynamoDB calls since [`Self::calls`] was last reset, by operation; `what`
    /// names the step in the failure.
    #[track_caller]
    pub fn assert_calls(&self, expected: &[(&str, usize)], what: &str) {
        assert_eq!(
            self.calls.by_operation(),
            operation_counts(expected),
            "{what}"
        );
    }

    /// Runs the scheduled function `binary` with its `events/` fixture, now.
    pub async fn run_scheduled(&self, binary: &str) -> Value {
        self.run_scheduled_with(binary, self.app.clone()).await
    }

    /// Runs the scheduled function `binary` with another app (e.g. another clock).
    pub async fn run_scheduled_with(&self, binary: &str, app: App) -> Value {
        let event = event_fixture(binary);
        self.run_listed(Trigger::Scheduled, binary, app, event)
            .await
    }

    /// Runs the function `binary` that an operator invokes, with `payload`.
    pub async fn run_operator_function(&self, binary: &str, payload: Value) -> Value {
        let app = self.app.clone();
        self.run_listed(Trigger::Operator, binary, app, payload)
            .await
    }

    /// Runs the EventBridge-triggered function `binary` with `event`.
    pub async fn run_event_function(&self, binary: &str, event: Value) -> Value {
        let app = self.app.clone();
        self.run_listed(Trigger::Event, binary, app, event).await
    }

    /// Runs `binary`, which must be one of the functions of `trigger` (the kind of function a
    /// test asked for), on `app` with `event`; panics when it fails.
    async fn run_listed(&self, trigger: Trigger, binary: &str, app: App, event: Value) -> Value {
        let (kind, listed) = trigger.functions();
        assert!(listed.contains(&binary), "no {kind} function {binary}");
        in_process::run_event_function(binary, &self.in_process(app), event)
            .await
            .unwrap_or_else(|e| panic!("the {kind} function {binary} fails: {e:?}"))
    }

    /// Calls an HTTP function with another app (e.g. another clock).
    pub async fn call_with(&self, app: App, binary: &str, request: ApiRequest) -> ApiResponse {
        ApiResponse::from(self.in_process(app).call(binary, request.build()).await)
    }

    /// An app like this test's but with its own clock at `at`.
    pub fn app_at(&self, at: Timestamp) -> App {
        let mut app = self.app.clone();
        app.clock = Arc::new(ManualClock::at(at));
        app
    }

    /// Gives `order_id` of `customer` its delivery details (tomorrow, by this test's clock) at
    /// the version it is at, as the checkout does before paying.
    pub async fn give_delivery(&self, customer: &str, order_id: &str) -> ApiResponse {
        let order = self
            .send(fixture("get-order").customer(customer).order_id(order_id))
            .await;
        let version = order.body["version"].as_u64().unwrap_or(0);
        let tomorrow =
            bouquet_app::domain::delivery::date_after(self.app.clock.now(), 1, "UTC").unwrap();
        let request = ApiRequest::fixture("put-order-delivery")
            .customer(customer)
            .order_id(order_id)
            .header("if-match", &format!("\"{version}\""))
            .json(delivery_details(&tomorrow))
            .no_idempotency_key();
        self.call("put-order-delivery", request).await
    }

    /// Pays `order_id` as `customer` with `token` (no idempotency key unless given), giving it
    /// delivery details first if it has none.
    pub async fn pay(
        &self,
        customer: &str,
        order_id: &str,
        token: &str,
        key: Option<&str>,
    ) -> ApiResponse {
        self.give_delivery_if_missing(customer, order_id).await;
        let mut request = ApiRequest::fixture("pay-order")
            .customer(customer)
            .order_id(order_id)
            .json(json!({ "paymentToken": token }))
            .no_idempotency_key();
        if let Some(key) = key {
            request = request.idempotency_key(key);
        }
        self.call("pay-order", request).await
    }

    /// [`Self::pay`] with the test card that is approved, and no idempotency key.
    pub async fn pay_by_card(&self, customer: &str, order_id: &str) -> ApiResponse {
        self.pay(customer, order_id, "tok_visa", None).await
    }

    /// A paid order of one new bouquet of `vendor` for `customer`, its delivery details giving
    /// the customer's verified email for mail.
    pub async fn paid_order(&self, vendor: &str, customer: &str) -> String {
        let bouquet = self.bouquet(vendor, "30.00").await;
        let order = self.reserve(customer, &[&bouquet]).await;
        let order_id = order.body["orderId"].as_str().expect("reserved").to_owned();
        let tomorrow =
            bouquet_app::domain::delivery::date_after(self.app.clock.now(), 1, "UTC").unwrap();
        let mut details = delivery_details(&tomorrow);
        details["contactEmail"] = json!(verified_email(customer));
        let given = self
            .send(
                fixture("put-order-delivery")
                    .customer(customer)
                    .order_id(&order_id)
                    .header("if-match", "\"1\"")
                    .json(details),
            )
            .await;
        assert_eq!(given.status, 200, "{}", given.body);
        let paid = self.pay(customer, &order_id, "tok_visa", None).await;
        assert_eq!(paid.status, 200, "{}", paid.body);
        order_id
    }

    /// [`Self::give_delivery`] unless the order (read from the table) has details already.
    pub async fn give_delivery_if_missing(&self, customer: &str, order_id: &str) {
        let Ok(id) = bouquet_app::domain::OrderId::parse(order_id) else {
            return;
        };
        let stored = self.app.store.order(id).await;
        if let Ok(Some(order)) = stored {
            if order.delivery.is_none() && order.customer_id.as_str() == customer {
                self.give_delivery(customer, order_id).await;
            }
        }
    }

    /// Verifies this test's sender in the emulator's SES, as an operator does in SES.
    pub async fn verify_sender(&self) {
        let sdk = emulator_sdk_config().await;
        devstack::provision::verify_sender(&aws_sdk_sesv2::Client::new(&sdk), &self.mail_sender)
            .await
            .expect("the sender identity is created");
    }

    /// The mail this test's sender sent, as the emulator's SES keeps it (`/_aws/ses`).
    pub async fn sent_mail(&self) -> Vec<Value> {
        let endpoint = endpoint();
        let address: std::net::SocketAddr = endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("the emulator's address is host:port");
        let answer = http_client::send(
            address,
            "GET",
            &format!("/_aws/ses?email={}", self.mail_sender),
            &[],
            None,
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The connections the live table counts open under `key` (`user:…`, `ip:…`).
    pub async fn open_connections(&self, key: &str) -> u32 {
        self.app.store.open_connections(key).await.unwrap()
    }

    /// The stored status of order `order_id`.
    pub async fn order_status(&self, order_id: &str) -> Option<String> {
        self.status_of(&format!("ORDER#{order_id}")).await
    }

    /// The stored status of bouquet `bouquet_id`.
    pub async fn bouquet_status(&self, bouquet_id: &str) -> Option<String> {
        self.status_of(&format!("BOUQUET#{bouquet_id}")).await
    }

    /// Asserts the stored status of order `order_id` is `expected`.
    pub async fn assert_order_status(&self, order_id: &str, expected: &str) {
        let status = self.order_status(order_id).await;
        assert_eq!(status.as_deref(), Some(expected), "order {order_id}");
    }

    /// Asserts the stored status of bouquet `bouquet_id` is `expected`.
    pub async fn assert_bouquet_status(&self, bouquet_id: &str, expected: &str) {
        let status = self.bouquet_status(bouquet_id).await;
        assert_eq!(status.as_deref(), Some(expected), "bouquet {bouquet_id}");
    }

    /// The status attribute of the item with partition key `pk`.
    pub async fn status_of(&self, pk: &str) -> Option<String> {
        self.items()
            .await
            .into_iter()
            .find(|i| i.get("pk") == Some(&AttributeValue::S(pk.to_owned())))
            .and_then(|i| i.get("status").and_then(|s| s.as_s().ok().cloned()))
    }

    /// The dev stack's HTTP API in front of this test's table, on a free port.
    pub async fn local_api(&self) -> (std::net::SocketAddr, Arc<devstack::server::LocalApi>) {
        self.local_api_trusting(None).await
    }

    /// The same, also trusting `pool`'s ID tokens (as the deployed authorizer does).
    pub async fn local_api_trusting(
        &self,
        pool: Option<&devstack::cognito::LocalUserPool>,
    ) -> (std::net::SocketAddr, Arc<devstack::server::LocalApi>) {
        let template = Template::repository().expect("template.yaml");
        let api = Arc::new(
            devstack::server::LocalApi::from_template(
                &template,
                &self.in_process(self.app.clone()),
                Arc::new(devstack::jwt::verifier(JWT_SECRET, pool)),
            )
            .expect("every route has a handler"),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let address = listener.local_addr().expect("address");
        tokio::spawn(api.clone().serve_on(listener));
        (address, api)
    }

    /// The local API behind the template's CloudFront caching (the dev stack's edge cache), not
    /// served on a port: call `handle`.
    pub fn edge_api(&self) -> Arc<devstack::server::LocalApi> {
        let template = Template::repository().expect("template.yaml");
        Arc::new(self.behind_the_edge_cache(&template))
    }

    fn behind_the_edge_cache(&self, template: &Template) -> devstack::server::LocalApi {
        devstack::server::LocalApi::from_template(
            template,
            &self.in_process(self.app.clone()),
            Arc::new(devstack::jwt::verifier(JWT_SECRET, None)),
        )
        .expect("every route has a handler")
        .with_edge_cache(template)
    }

    /// [`Self::edge_api`] with the template's limits in front (the edge's web ACL per source
    /// address, the stage's throttles), the template's parameters overridden by `overrides`
    /// (`Name=Value`) as a deployment may.
    pub fn limited_edge_api(&self, overrides: &[&str]) -> Arc<devstack::server::LocalApi> {
        let overrides: Vec<String> = overrides.iter().map(|o| (*o).to_owned()).collect();
        let template = Template::repository()
            .and_then(|t| t.with_parameter_overrides(&overrides))
            .expect("template.yaml with the overrides");
        let limits = devstack::edge_limits::EdgeLimits::from_template(&template, &|v| {
            devstack::provision::resolve(&template, v, &HashMap::new())
        })
        .expect("the template's limits are supported locally");
        Arc::new(
            self.behind_the_edge_cache(&template)
                .with_edge_limits(limits),
        )
    }

    /// The environment `binary` gets from the template, resolved to this test's resources,
    /// plus the emulator's endpoint and credentials; without the edge's secret
    /// (`ORIGIN_VERIFY`), as for a stack with no edge in front: these tests send the function
    /// what API Gateway would, and what the edge adds is tested on its own
    /// ([`Self::function_env_behind_the_edge`]).
    pub fn function_env(&self, binary: &str) -> Vec<(String, String)> {
        let mut env = self.function_env_behind_the_edge(binary);
        env.retain(|(name, _)| name != "ORIGIN_VERIFY");
        env
    }

    /// [`Self::function_env`] with the edge's secret, as deployed.
    pub fn function_env_behind_the_edge(&self, binary: &str) -> Vec<(String, String)> {
        let template = Template::repository().expect("template.yaml");
        let function = template
            .functions()
            .expect("functions")
            .into_iter()
            .find(|f| f.binary == binary)
            .expect("function in the template");
        let names = HashMap::from([
            ("MarketTable".to_owned(), self.table.clone()),
            ("LiveTable".to_owned(), self.live_table.clone()),
        ]);
        let mut env = template.environment(&function, &|v| {
            devstack::provision::resolve(&template, v, &names)
        });
        devstack::lambda::simulated_payments(&mut env);
        env.extend(endpoint_environment());
        env.extend([
            ("AWS_ACCESS_KEY_ID".to_owned(), "test".to_owned()),
            ("AWS_SECRET_ACCESS_KEY".to_owned(), "test".to_owned()),
            (
                "AWS_REGION".to_owned(),
                std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into()),
            ),
            ("RUST_LOG".to_owned(), "warn".to_owned()),
        ]);
        env
    }

    /// Names of the outbox events written so far.
    pub async fn event_names(&self) -> Vec<String> {
        self.items_of("event")
            .await
            .iter()
            .filter_map(|e| e.get("eventName").and_then(|n| n.as_s().ok().cloned()))
            .collect()
    }

    /// How many outbox events named `name` were written so far.
    pub async fn event_count(&self, name: &str) -> usize {
        self.event_names()
            .await
            .iter()
            .filter(|n| *n == name)
            .count()
    }

    /// Every item in the tables (the marketplace's and the live one), sorted by key: for
    /// "nothing was written" assertions.
    pub async fn items(&self) -> Vec<HashMap<String, AttributeValue>> {
        let mut items = Vec::new();
        for table in [&self.table, &self.live_table] {
            items.extend(scan_all(&self.client, table).await.expect("scan"));
        }
        let key =
            |i: &HashMap<String, AttributeValue>| format!("{:?}{:?}", i.get("pk"), i.get("sk"));
        items.sort_by_key(key);
        items
    }

    /// Items whose `entity` attribute is `entity` (e.g. `order`, `event`).
    pub async fn items_of(&self, entity: &str) -> Vec<HashMap<String, AttributeValue>> {
        self.items()
            .await
            .into_iter()
            .filter(|i| i.get("entity") == Some(&AttributeValue::S(entity.to_owned())))
            .collect()
    }

    /// Onboards a vendor through the API, its payout account onboarded too (it takes
    /// payments: its bouquets can be reserved); returns its id.
    pub async fn vendor(&self, name: &str) -> String {
        let vendor = self.vendor_without_payouts(name).await;
        self.takes_payments(&vendor).await;
        vendor
    }

    /// The shop's payout account opened (through the use case, with the simulated provider's
    /// account, whatever stands in for the PSP's charges in this test) and reported taking
    /// charges, as the provider does when its onboarding ends. The route and the webhook's
    /// part are tested in `system/payouts.rs`.
    pub async fn takes_payments(&self, vendor_id: &str) {
        let id = bouquet_app::domain::VendorId::parse(vendor_id).expect("a vendor id");
        let opener = self
            .app
            .clone()
            .with_payments(Arc::new(bouquet_app::payments::SimulatedGateway::new()));
        let member = bouquet_app::domain::identity::Identity {
            subject: bouquet_app::domain::CustomerId::parse("payouts-member").expect("a subject"),
            role: bouquet_app::domain::identity::Role::Vendor,
            vendor_id: Some(id),
            email: None,
        };
        let console = "http://127.0.0.1:3000/#/vendor".to_owned();
        let links = bouquet_app::payments::OnboardingLinks {
            return_url: console.clone(),
            refresh_url: console,
        };
        let now = self.app.clock.now();
        let opened = bouquet_app::payouts::start_onboarding(
            &opener,
            &member,
            id,
            &links,
            "system-test",
            now,
        )
        .await
        .expect("the payout account opens");
        let report = bouquet_app::domain::vendor::AccountReport {
            account_id: opened.account_id,
            charges_enabled: true,
            payouts_enabled: true,
            reported_at: now,
        };
        let reported =
            bouquet_app::payouts::record_report(&self.app, id, &report, "system-test", now)
                .await
                .expect("the report is recorded");
        assert_eq!(reported, bouquet_app::payouts::Reported::Changed);
    }

    /// Over the local API at `api`: `seller` (a vendor's token) opens its shop's payout
    /// account, and the provider reports it taking charges through the webhook route.
    pub async fn onboard_payouts_over_http(
        &self,
        api: std::net::SocketAddr,
        seller: &str,
        vendor_id: &str,
    ) {
        let console = json!({
            "returnUrl": "http://127.0.0.1:3000/#/vendor",
            "refreshUrl": "http://127.0.0.1:3000/#/vendor",
        });
        let opened = bearer(api, seller)
            .post(
                &format!("/v1/vendors/{vendor_id}/payouts/onboarding"),
                &console,
            )
            .await;
        assert_eq!(opened.status, 200, "{:?}", opened.body);
        let account = opened.body["accountId"].as_str().expect("an accountId");
        let now = self.app.clock.now().as_epoch_seconds();
        let (event, signature) = account_report_event(account, vendor_id, true, now);
        let reported = http_client::send(
            api,
            "POST",
            "/v1/payments/webhook",
            &[("stripe-signature", &signature)],
            Some(&event),
        )
        .await;
        assert_eq!(
            (reported.status, reported.body["outcome"].as_str()),
            (200, Some("changed")),
            "{:?}",
            reported.body
        );
    }

    /// Onboards a vendor through the API, without a payout account; returns its id.
    pub async fn vendor_without_payouts(&self, name: &str) -> String {
        let response = self
            .send(
                fixture("create-vendor")
                    .admin()
                    .json(json!({ "name": name }))
                    .no_idempotency_key(),
            )
            .await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["vendorId"]
            .as_str()
            .expect("vendorId")
            .to_owned()
    }

    /// Lists a bouquet for `vendor_id` through the API; returns its id.
    pub async fn bouquet(&self, vendor_id: &str, amount: &str) -> String {
        self.list_bouquet(
            vendor_id,
            json!({ "name": "Peonies", "price": { "amount": amount, "currency": "EUR" } }),
        )
        .await
    }

    /// Lists one bouquet for `vendor_id` per amount, one after the other; returns their ids.
    pub async fn bouquets<const N: usize>(
        &self,
        vendor_id: &str,
        amounts: [&str; N],
    ) -> [String; N] {
        let mut ids = Vec::with_capacity(N);
        for amount in amounts {
            ids.push(self.bouquet(vendor_id, amount).await);
        }
        ids.try_into().expect("one id per amount")
    }

    /// Lists a bouquet `listing` (the request body) for `vendor_id`; returns its id.
    pub async fn list_bouquet(&self, vendor_id: &str, listing: Value) -> String {
        let request = ApiRequest::fixture("create-bouquet")
            .vendor(vendor_id)
            .vendor_id(vendor_id)
            .json(listing)
            .no_idempotency_key();
        let response = self.call("create-bouquet", request).await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["bouquetId"]
            .as_str()
            .expect("bouquetId")
            .to_owned()
    }

    /// The id of the order [`Self::reserve`] makes (it panics when there is none).
    pub async fn reserved_order_id(&self, customer: &str, bouquet_ids: &[&str]) -> String {
        let order = self.reserve(customer, bouquet_ids).await;
        order.body["orderId"].as_str().unwrap().to_owned()
    }

    /// `customer` reserves its cart through the API, under `idempotency_key`.
    pub async fn reserve_cart(&self, customer: &str, idempotency_key: &str) -> ApiResponse {
        let request = by_customer("create-order", customer)
            .no_body()
            .idempotency_key(idempotency_key);
        self.send(request).await
    }

    /// Reserves `bouquet_ids` for `customer` through the API.
    pub async fn reserve(&self, customer: &str, bouquet_ids: &[&str]) -> ApiResponse {
        let request = ApiRequest::fixture("create-order")
            .customer(customer)
            .json(json!({ "bouquetIds": bouquet_ids }))
            .no_idempotency_key();
        self.call("create-order", request).await
    }
}
