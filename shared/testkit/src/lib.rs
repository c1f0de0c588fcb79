//! Test support that sits on the shared crates only: the emulator's SDK configuration, a
//! DynamoDB call counter, API Gateway v2 requests made from the HTTP contract and their answers,
//! a small HTTP client. The system tests (`localstack/system-tests`) build on it.
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
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use serde_json::{json, Value};

use bouquet_app::domain::Timestamp;
use bouquet_http::lambda_http::{self, Body, Request, RequestExt};

pub mod contract;
pub mod http_client;

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4566";
/// The local cloud's DynamoDB and DynamoDB Streams (`localstack/dynamodb-engine`).
pub const DEFAULT_DYNAMODB_ENDPOINT: &str = "http://127.0.0.1:4567";

/// A fixed start for every test clock: 2026-12-02T16:16:51Z.
pub const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| DEFAULT_ENDPOINT.to_owned())
}

/// DynamoDB's and DynamoDB Streams' endpoint (`AWS_ENDPOINT_URL_DYNAMODB`, set by
/// `localstack/lib.sh`): not moto's, which the local cloud does not use for them.
pub fn dynamodb_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
        .unwrap_or_else(|_| DEFAULT_DYNAMODB_ENDPOINT.to_owned())
}

/// The environment that sends a process's SDK clients to the local cloud: moto for most
/// services, the DynamoDB engine for DynamoDB and its streams.
pub fn endpoint_environment() -> [(String, String); 3] {
    [
        ("AWS_ENDPOINT_URL".to_owned(), endpoint()),
        ("AWS_ENDPOINT_URL_DYNAMODB".to_owned(), dynamodb_endpoint()),
        (
            "AWS_ENDPOINT_URL_DYNAMODB_STREAMS".to_owned(),
            dynamodb_endpoint(),
        ),
    ]
}

pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Counts the DynamoDB requests sent (retries included), by operation, and the write units
/// the writes consumed: it asks for `ReturnConsumedCapacity: TOTAL` on every write and adds
/// up what the local DynamoDB answers (units by item size, two per item in a transaction, as
/// DynamoDB bills them).
#[derive(Clone, Debug, Default)]
pub struct CallCounter {
    total: Arc<AtomicUsize>,
    by_operation: Arc<Mutex<HashMap<String, usize>>>,
    write_units: Arc<Mutex<f64>>,
}

impl CallCounter {
    /// The write capacity units the writes since the last [`CallCounter::reset`] consumed.
    pub fn write_units(&self) -> f64 {
        self.write_units.lock().map(|u| *u).unwrap_or_default()
    }

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
        if let Ok(mut units) = self.write_units.lock() {
            *units = 0.0;
        }
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

    fn modify_before_serialization(
        &self,
        context: &mut aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use aws_sdk_dynamodb::operation as op;
        use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
        let input = context.input_mut();
        let total = Some(ReturnConsumedCapacity::Total);
        if let Some(i) = input.downcast_mut::<op::transact_write_items::TransactWriteItemsInput>() {
            i.return_consumed_capacity = i.return_consumed_capacity.take().or(total);
        } else if let Some(i) = input.downcast_mut::<op::put_item::PutItemInput>() {
            i.return_consumed_capacity = i.return_consumed_capacity.take().or(total);
        } else if let Some(i) = input.downcast_mut::<op::update_item::UpdateItemInput>() {
            i.return_consumed_capacity = i.return_consumed_capacity.take().or(total);
        } else if let Some(i) = input.downcast_mut::<op::delete_item::DeleteItemInput>() {
            i.return_consumed_capacity = i.return_consumed_capacity.take().or(total);
        } else if let Some(i) = input.downcast_mut::<op::batch_write_item::BatchWriteItemInput>() {
            i.return_consumed_capacity = i.return_consumed_capacity.take().or(total);
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef<
            '_,
        >,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use aws_sdk_dynamodb::operation as op;
        use aws_sdk_dynamodb::types::ConsumedCapacity;
        let Ok(output) = context.output_or_error() else {
            return Ok(());
        };
        let sum = |c: &[ConsumedCapacity]| c.iter().filter_map(|c| c.capacity_units).sum::<f64>();
        let units = if let Some(o) =
            output.downcast_ref::<op::transact_write_items::TransactWriteItemsOutput>()
        {
            sum(o.consumed_capacity())
        } else if let Some(o) = output.downcast_ref::<op::put_item::PutItemOutput>() {
            sum(o.consumed_capacity.as_slice())
        } else if let Some(o) = output.downcast_ref::<op::update_item::UpdateItemOutput>() {
            sum(o.consumed_capacity.as_slice())
        } else if let Some(o) = output.downcast_ref::<op::delete_item::DeleteItemOutput>() {
            sum(o.consumed_capacity.as_slice())
        } else if let Some(o) = output.downcast_ref::<op::batch_write_item::BatchWriteItemOutput>()
        {
            sum(o.consumed_capacity())
        } else {
            0.0
        };
        if let Ok(mut total) = self.write_units.lock() {
            *total += units;
        }
        Ok(())
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

/// DynamoDB and its streams at [`dynamodb_endpoint`], whatever the environment says, so that
/// no test reaches moto's DynamoDB by a missing variable.
#[derive(Debug)]
struct LocalCloudEndpoints;

impl aws_types::service_config::LoadServiceConfig for LocalCloudEndpoints {
    fn load_config(&self, key: aws_types::service_config::ServiceConfigKey<'_>) -> Option<String> {
        (key.env() == "AWS_ENDPOINT_URL"
            && matches!(key.service_id(), "DynamoDB" | "DynamoDB Streams"))
        .then(dynamodb_endpoint)
    }
}

/// SDK configuration for the local cloud: its endpoints, dummy credentials, never real AWS.
/// The general endpoint is set on the configuration, not the loader: a loader's is
/// programmatic, and a programmatic endpoint overrides every service's own.
pub async fn emulator_sdk_config() -> aws_config::SdkConfig {
    let sdk = aws_config::defaults(BehaviorVersion::latest())
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
        .await;
    let mut builder = sdk.into_builder();
    builder.set_endpoint_url(Some(endpoint()));
    builder.service_config(LocalCloudEndpoints).build()
}

/// An API Gateway v2 request, starting from its route's example ([`contract::route_event`]).
#[derive(Clone, Debug)]
pub struct ApiRequest {
    event: Value,
    deadline_in: Option<Duration>,
}

impl ApiRequest {
    /// The example request of the HTTP function `binary`, as its OpenAPI operation gives it.
    pub fn fixture(binary: &str) -> Self {
        let event = contract::route_event(binary).unwrap_or_else(|| {
            panic!("infra/openapi.yaml has no operation with `x-function: {binary}`")
        });
        Self {
            event,
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

    /// Claims as API Gateway passes them, with the address the sign-in verified
    /// ([`verified_email`]).
    fn signed_in(self, sub: &str, role: &str, vendor_id: Option<&str>) -> Self {
        let mut claims = json!({
            "sub": sub,
            "role": role,
            "email": verified_email(sub),
            "email_verified": "true",
        });
        if let Some(vendor_id) = vendor_id {
            claims["vendorId"] = json!(vendor_id);
        }
        self.claims(Some(claims))
    }

    pub fn customer(self, sub: &str) -> Self {
        self.signed_in(sub, "customer", None)
    }

    /// A member of `vendor_id`'s shop, `user-of-{vendor_id}`.
    pub fn vendor(self, vendor_id: &str) -> Self {
        self.signed_in(&format!("user-of-{vendor_id}"), "vendor", Some(vendor_id))
    }

    pub fn admin(self) -> Self {
        self.signed_in("admin-1", "admin", None)
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

    /// The request without its query string (a route's defaults).
    pub fn without_query(mut self) -> Self {
        self.event["rawQueryString"] = json!("");
        if let Some(event) = self.event.as_object_mut() {
            event.remove("queryStringParameters");
        }
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

/// The address a test user `sub` signed in with and verified: the only one their mail goes to.
pub fn verified_email(sub: &str) -> String {
    format!("{sub}@example.com")
}

/// Delivery details any shop without settings takes for `date` (`YYYY-MM-DD`): Camille, in
/// Paris, in the morning, with a card, and no contact address (add the customer's
/// [`verified_email`] for mail).
pub fn delivery_details(date: &str) -> Value {
    serde_json::json!({
        "recipient": { "name": "Camille Martin", "phone": "+33 6 12 34 56 78" },
        "address": { "street": "12 rue des Fleurs", "postcode": "75011", "city": "Paris", "country": "FR" },
        "date": date,
        "slot": "morning",
        "cardMessage": "Happy birthday",
    })
}
