//! Test support. Every test gets its own table (a unique name, created from `template.yaml`)
//! on the AWS emulator at `AWS_ENDPOINT_URL`, its own manual clock, and calls the real
//! handlers with API Gateway v2 requests built from the `events/` fixtures.
//!
//! A test that needs the emulator fails loudly when it cannot reach it; it never skips.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Credentials, Intercept, Region, RuntimeComponents};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use serde_json::{json, Value};

use bouquet_app::domain::{ManualClock, Timestamp};
use bouquet_app::store::Store;
use bouquet_app::{App, Config};
use bouquet_http::lambda_http::{self, Body, Request, RequestExt};
use bouquet_template::Template;

pub mod http_client;
pub mod iam;
pub mod vases;

pub use devstack::functions::{HTTP_FUNCTIONS, SCHEDULED_FUNCTIONS};

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4566";

/// The signing key the tests' local API uses.
pub const JWT_SECRET: &str = "testkit-secret";

/// A built function binary (`target/<profile>/<name>`). `./localstack/test.sh` builds the
/// ones the tests start; a missing one fails the test with how to build it.
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
pub fn token(role: &str, sub: &str, vendor_id: Option<&str>) -> String {
    format!(
        "Bearer {}",
        devstack::jwt::mint(JWT_SECRET, role, sub, vendor_id, 600).expect("mint")
    )
}

/// A fixed start for every test clock: 2026-12-02T16:16:51Z.
pub const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| DEFAULT_ENDPOINT.to_owned())
}

pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Counts the DynamoDB requests sent (retries included), by operation.
#[derive(Clone, Debug, Default)]
pub struct CallCounter {
    total: Arc<AtomicUsize>,
    by_operation: Arc<Mutex<HashMap<String, usize>>>,
}

impl CallCounter {
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    pub fn by_operation(&self) -> HashMap<String, usize> {
        self.by_operation
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    pub fn reset(&self) {
        self.total.store(0, Ordering::SeqCst);
        if let Ok(mut map) = self.by_operation.lock() {
            map.clear();
        }
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        self.total.fetch_add(1, Ordering::SeqCst);
        let name = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_owned())
            .unwrap_or_default();
        if let Ok(mut map) = self.by_operation.lock() {
            *map.entry(name).or_default() += 1;
        }
        Ok(())
    }
}

/// One test's cloud: a fresh table, a clock the test moves, the app the handlers get.
pub struct TestCloud {
    pub app: App,
    pub clock: Arc<ManualClock>,
    pub client: aws_sdk_dynamodb::Client,
    pub table: String,
    pub calls: CallCounter,
}

/// SDK configuration for the emulator: its endpoint, dummy credentials, never real AWS.
pub async fn emulator_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint())
        .region(Region::new(
            std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into()),
        ))
        .credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "bouquet-testkit",
        ))
        .load()
        .await
}

impl TestCloud {
    /// Creates this test's table from `template.yaml`. Panics, loudly, without an emulator.
    pub async fn new() -> Self {
        Self::with_config(Config::default()).await
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
                "\n\nThe AWS emulator is not reachable at {} ({reachable:?}).\nRun the tests with ./localstack/test.sh, which starts it, or start moto/LocalStack there yourself.\n\n",
                endpoint()
            );
        }
        // `register-vase` in the dev stack's function table gets the emulator's IoT Core.
        devstack::functions::set_registrar(&sdk, vases::test_vase_policy().await);
        let table = format!("test-{}", ulid::Ulid::new().to_string().to_lowercase());
        let template = Template::repository().expect("template.yaml parses");
        devstack::provision::create_table(&client, &template, "MarketTable", &table)
            .await
            .expect("the table of template.yaml can be created");
        let clock = Arc::new(ManualClock::at(T0));
        let app = App::new(
            Store::new(client.clone(), table.clone()),
            clock.clone(),
            config,
        );
        calls.reset();
        Self {
            app,
            clock,
            client,
            table,
            calls,
        }
    }

    /// Calls the HTTP function `binary` (a crate under `functions/`) with `request`.
    pub async fn call(&self, binary: &str, request: ApiRequest) -> ApiResponse {
        let (_, handler) = devstack::functions::http_handler(binary)
            .unwrap_or_else(|| panic!("no HTTP function {binary}"));
        let response = handler(self.app.clone(), request.build())
            .await
            .expect("handlers always answer");
        ApiResponse::from(response)
    }

    /// Replaces the payment gateway (e.g. one that fails in a given way).
    pub fn with_gateway(mut self, gateway: Arc<dyn bouquet_app::payments::PaymentGateway>) -> Self {
        self.app = self.app.clone().with_payments(gateway);
        self
    }

    /// Runs the scheduled function `binary` with its `events/` fixture, now.
    pub async fn run_scheduled(&self, binary: &str) -> Value {
        self.run_scheduled_with(binary, self.app.clone()).await
    }

    /// Runs the scheduled function `binary` with another app (e.g. another clock).
    pub async fn run_scheduled_with(&self, binary: &str, app: App) -> Value {
        let handler = devstack::functions::scheduled_handler(binary)
            .unwrap_or_else(|| panic!("no scheduled function {binary}"));
        let path = repository_root()
            .join("events")
            .join(format!("{binary}.json"));
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
        handler(app, event)
            .await
            .expect("the scheduled function succeeds")
    }

    /// Runs the EventBridge-triggered function `binary` with `event`.
    pub async fn run_event_function(&self, binary: &str, event: Value) -> Value {
        let handler = devstack::functions::event_handler(binary)
            .unwrap_or_else(|| panic!("no event function {binary}"));
        handler(self.app.clone(), event)
            .await
            .expect("the event function succeeds")
    }

    /// Calls an HTTP function with another app (e.g. another clock).
    pub async fn call_with(&self, app: App, binary: &str, request: ApiRequest) -> ApiResponse {
        let (_, handler) = devstack::functions::http_handler(binary)
            .unwrap_or_else(|| panic!("no HTTP function {binary}"));
        ApiResponse::from(
            handler(app, request.build())
                .await
                .expect("handlers always answer"),
        )
    }

    /// An app like this test's but with its own clock at `at`.
    pub fn app_at(&self, at: Timestamp) -> App {
        let mut app = self.app.clone();
        app.clock = Arc::new(ManualClock::at(at));
        app
    }

    /// Pays `order_id` as `customer` with `token` (no idempotency key unless given).
    pub async fn pay(
        &self,
        customer: &str,
        order_id: &str,
        token: &str,
        key: Option<&str>,
    ) -> ApiResponse {
        let mut request = ApiRequest::fixture("pay-order")
            .customer(customer)
            .path("orderId", order_id)
            .json(json!({ "paymentToken": token }))
            .no_idempotency_key();
        if let Some(key) = key {
            request = request.idempotency_key(key);
        }
        self.call("pay-order", request).await
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
        let template = Template::repository().expect("template.yaml");
        let api = Arc::new(
            devstack::server::LocalApi::from_template(
                &template,
                self.app.clone(),
                JWT_SECRET.into(),
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

    /// The environment `binary` gets from the template, resolved to this test's resources,
    /// plus the emulator's endpoint and credentials.
    pub fn function_env(&self, binary: &str) -> Vec<(String, String)> {
        let template = Template::repository().expect("template.yaml");
        let function = template
            .functions()
            .expect("functions")
            .into_iter()
            .find(|f| f.binary == binary)
            .expect("function in the template");
        let names = HashMap::from([("MarketTable".to_owned(), self.table.clone())]);
        let mut env = template.environment(&function, &|v| {
            devstack::provision::resolve(&template, v, &names)
        });
        env.extend([
            ("AWS_ENDPOINT_URL".to_owned(), endpoint()),
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

    /// Every item in the table, sorted by key: for "nothing was written" assertions.
    pub async fn items(&self) -> Vec<HashMap<String, AttributeValue>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(start)
                .consistent_read(true)
                .send()
                .await
                .expect("scan");
            items.extend(page.items.unwrap_or_default());
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
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

    /// Onboards a vendor through the API; returns its id.
    pub async fn vendor(&self, name: &str) -> String {
        let response = self
            .call(
                "create-vendor",
                ApiRequest::fixture("create-vendor")
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

    /// Lists a bouquet `listing` (the request body) for `vendor_id`; returns its id.
    pub async fn list_bouquet(&self, vendor_id: &str, listing: Value) -> String {
        let request = ApiRequest::fixture("create-bouquet")
            .vendor(vendor_id)
            .path("vendorId", vendor_id)
            .json(listing)
            .no_idempotency_key();
        let response = self.call("create-bouquet", request).await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["bouquetId"]
            .as_str()
            .expect("bouquetId")
            .to_owned()
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

/// An API Gateway v2 request, starting from a fixture in `events/`.
#[derive(Clone, Debug)]
pub struct ApiRequest {
    event: Value,
    deadline_in: Option<Duration>,
}

impl ApiRequest {
    pub fn fixture(binary: &str) -> Self {
        let path = repository_root()
            .join("events")
            .join(format!("{binary}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
        Self {
            event: serde_json::from_str(&text).expect("fixtures are JSON"),
            deadline_in: None,
        }
    }

    fn claims(mut self, claims: Option<Value>) -> Self {
        match claims {
            Some(claims) => {
                self.event["requestContext"]["authorizer"] =
                    json!({ "jwt": { "claims": claims, "scopes": null } })
            }
            None => {
                if let Some(context) = self.event["requestContext"].as_object_mut() {
                    context.remove("authorizer");
                }
            }
        }
        self
    }

    pub fn customer(self, sub: &str) -> Self {
        self.claims(Some(json!({ "sub": sub, "role": "customer" })))
    }

    pub fn vendor(self, vendor_id: &str) -> Self {
        self.claims(Some(json!({ "sub": format!("user-of-{vendor_id}"), "role": "vendor", "vendorId": vendor_id })))
    }

    pub fn admin(self) -> Self {
        self.claims(Some(json!({ "sub": "admin-1", "role": "admin" })))
    }

    pub fn anonymous(self) -> Self {
        self.claims(None)
    }

    /// Sets a path parameter and rewrites the raw path to match.
    pub fn path(mut self, name: &str, value: &str) -> Self {
        let old = self.event["pathParameters"][name]
            .as_str()
            .map(str::to_owned);
        self.event["pathParameters"][name] = json!(value);
        if let Some(old) = old {
            for field in [&["rawPath"][..], &["requestContext", "http", "path"][..]] {
                let mut slot = &mut self.event;
                for f in field {
                    slot = &mut slot[*f];
                }
                if let Some(path) = slot.as_str() {
                    *slot = json!(path.replace(&old, value));
                }
            }
        }
        self
    }

    pub fn query(mut self, name: &str, value: &str) -> Self {
        self.event["queryStringParameters"][name] = json!(value);
        let raw: Vec<String> = self.event["queryStringParameters"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        self.event["rawQueryString"] = json!(raw.join("&"));
        self
    }

    pub fn json(mut self, body: Value) -> Self {
        self.event["body"] = json!(body.to_string());
        self.event["headers"]["content-type"] = json!("application/json");
        self
    }

    pub fn raw_body(mut self, body: &str) -> Self {
        self.event["body"] = json!(body);
        self
    }

    pub fn no_body(mut self) -> Self {
        if let Some(event) = self.event.as_object_mut() {
            event.remove("body");
        }
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.event["headers"][name.to_ascii_lowercase()] = json!(value);
        self
    }

    pub fn without_header(mut self, name: &str) -> Self {
        if let Some(headers) = self.event["headers"].as_object_mut() {
            headers.remove(&name.to_ascii_lowercase());
        }
        self
    }

    pub fn no_idempotency_key(self) -> Self {
        self.without_header("idempotency-key")
    }

    pub fn idempotency_key(self, key: &str) -> Self {
        self.header("idempotency-key", key)
    }

    pub fn event(&self) -> &Value {
        &self.event
    }

    /// The request exactly as `lambda_http` builds it from the Lambda event.
    pub fn build(&self) -> Request {
        let request = lambda_http::request::from_str(&self.event.to_string())
            .expect("lambda_http accepts the event");
        match self.deadline_in {
            Some(remaining) => {
                let mut context = lambda_http::Context::default();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                context.deadline = (now + remaining).as_millis() as u64;
                request.with_lambda_context(context)
            }
            None => request,
        }
    }

    /// Invoke as Lambda would, with `remaining` time before the function's deadline.
    pub fn deadline_in(mut self, remaining: Duration) -> Self {
        self.deadline_in = Some(remaining);
        self
    }
}

#[derive(Clone, Debug)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl ApiResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The problem `code`, when the answer is a problem document.
    pub fn code(&self) -> Option<&str> {
        self.body["code"].as_str()
    }
}

impl From<lambda_http::Response<Body>> for ApiResponse {
    fn from(response: lambda_http::Response<Body>) -> Self {
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let body = match response.into_body() {
            Body::Text(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            Body::Binary(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        Self {
            status,
            headers,
            body,
        }
    }
}
