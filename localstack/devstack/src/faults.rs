//! Faults injected into the local cloud, switched on per run (`devstack up --faults
//! rate=0.05,seed=7`) for the chaos soak (`./localstack/soak.sh`, docs/testing.md).
//!
//! - **Between the functions and the local cloud**: [`FaultProxy`] is the functions'
//!   `AWS_ENDPOINT_URL` and `AWS_ENDPOINT_URL_DYNAMODB{,_STREAMS}`; it sends each request to
//!   its engine ([`Upstreams`]). At the configured rate it answers a request as AWS does when it fails:
//!   DynamoDB throttling, `InternalServerError` and `TransactionConflict`; EventBridge
//!   `FailedEntryCount` on some of a batch's entries; SQS `InternalError`; a latency spike; and
//!   the worst one, a write that is applied while its response is lost (the connection closes
//!   after the emulator answered, as a timeout after commit does).
//! - **In the triggers**: a function process killed mid-invocation ([`crate::lambda`]); a
//!   stream or SQS batch delivered twice ([`crate::streams`], [`crate::queues`]); `@connections`
//!   throttled or failing ([`crate::websocket`]).
//!
//! The switch is one per process (a dev stack is one process): every trigger asks [`roll`]
//! instead of each constructor carrying it. The seed fixes the sequence of draws; which request
//! meets which draw still depends on timing, so a replayed seed replays the traffic, not each
//! fault. `GET /_faults` on the proxy reports what was injected, by kind; `POST /_faults/off`
//! (and `/on`) stops them, so that a soak can let the system drain and audit it quietly.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::error::DevError;

/// The kinds of fault, as the soak reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    DynamoDbThrottled,
    DynamoDbInternalError,
    DynamoDbTransactionConflict,
    /// The request reached the emulator and was applied; its response never arrives.
    ResponseLost,
    EventBridgeFailedEntries,
    SqsInternalError,
    LatencySpike,
    FunctionKilled,
    StreamBatchRedelivered,
    SqsBatchRedelivered,
    ConnectionsThrottled,
    ConnectionsInternalError,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::DynamoDbThrottled => "dynamodb.throttled",
            Fault::DynamoDbInternalError => "dynamodb.internal_error",
            Fault::DynamoDbTransactionConflict => "dynamodb.transaction_conflict",
            Fault::ResponseLost => "response_lost_after_commit",
            Fault::EventBridgeFailedEntries => "eventbridge.failed_entries",
            Fault::SqsInternalError => "sqs.internal_error",
            Fault::LatencySpike => "latency_spike",
            Fault::FunctionKilled => "function.killed_mid_invocation",
            Fault::StreamBatchRedelivered => "stream.batch_redelivered",
            Fault::SqsBatchRedelivered => "sqs.batch_redelivered",
            Fault::ConnectionsThrottled => "connections.throttled",
            Fault::ConnectionsInternalError => "connections.internal_error",
        }
    }
}

/// The run's faults: a rate, a seeded source of draws, and what was injected.
pub struct Faults {
    pub rate: f64,
    pub seed: u64,
    /// Only these kinds (by [`Fault::name`]), when given (`only=a+b`).
    only: Option<Vec<String>>,
    enabled: AtomicBool,
    draws: Mutex<StdRng>,
    injected: Mutex<BTreeMap<&'static str, u64>>,
    /// Requests whose response was lost, by their body: the client's retry of one gets
    /// through (the glitch was the network's, once), so a retried write is never lost forever.
    lost: Mutex<std::collections::HashSet<u64>>,
    /// Connections API Gateway will never send `$disconnect` for: their `$connect` or
    /// `$disconnect` function failed (AWS retries neither). Whatever they stored is left to
    /// the table's TTL, and the soak's auditor allows exactly these.
    undelivered_disconnects: Mutex<std::collections::BTreeSet<String>>,
    /// The local services' time, by engine (`dynamodb`, `moto`): calls forwarded and the
    /// milliseconds they took, summed (their share of the functions' time).
    upstream: Mutex<BTreeMap<&'static str, (u64, f64)>>,
}

impl Faults {
    /// `rate=0.05,seed=7` (seed optional: 0), and `only=response_lost_after_commit+...` to
    /// inject those kinds only.
    pub fn parse(spec: &str) -> Result<Self, DevError> {
        let (mut rate, mut seed, mut only) = (None, 0u64, None);
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad =
                || DevError::Unsupported(format!("--faults: {part:?} (expected rate=R,seed=N)"));
            match part.split_once('=').ok_or_else(bad)? {
                ("rate", value) => rate = Some(value.parse::<f64>().map_err(|_| bad())?),
                ("seed", value) => seed = value.parse().map_err(|_| bad())?,
                ("only", kinds) => only = Some(kinds.split('+').map(str::to_owned).collect()),
                _ => return Err(bad()),
            }
        }
        let rate = rate.filter(|r| (0.0..=1.0).contains(r)).ok_or_else(|| {
            DevError::Unsupported("--faults needs rate=R with 0 <= R <= 1".into())
        })?;
        Ok(Self {
            rate,
            seed,
            only,
            enabled: AtomicBool::new(true),
            draws: Mutex::new(StdRng::seed_from_u64(seed)),
            injected: Mutex::default(),
            lost: Mutex::default(),
            undelivered_disconnects: Mutex::default(),
            upstream: Mutex::default(),
        })
    }

    /// One draw: whether this chance of a fault is taken (counted by `fault` when it is).
    fn roll(&self, fault: Fault) -> bool {
        if !self.enabled.load(Ordering::Relaxed) || !self.allows(fault) {
            return false;
        }
        let hit = self
            .draws
            .lock()
            .map(|mut draws| draws.random_bool(self.rate))
            .unwrap_or(false);
        if hit {
            self.count(fault);
        }
        hit
    }

    fn allows(&self, fault: Fault) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|k| k == fault.name()))
    }

    /// One of `choices`, or none, in one draw at the rate.
    fn pick(&self, choices: &[Fault]) -> Option<Fault> {
        let choices: Vec<Fault> = choices
            .iter()
            .copied()
            .filter(|f| self.allows(*f))
            .collect();
        if choices.is_empty() || !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        let mut draws = self.draws.lock().ok()?;
        if !draws.random_bool(self.rate) {
            return None;
        }
        let fault = choices[draws.random_range(0..choices.len())];
        drop(draws);
        self.count(fault);
        Some(fault)
    }

    fn between(&self, low: u64, high: u64) -> u64 {
        self.draws
            .lock()
            .map(|mut draws| draws.random_range(low..=high))
            .unwrap_or(low)
    }

    fn count(&self, fault: Fault) {
        if let Ok(mut injected) = self.injected.lock() {
            *injected.entry(fault.name()).or_default() += 1;
        }
    }

    fn time_upstream(&self, engine: &'static str, took: Duration) {
        if let Ok(mut upstream) = self.upstream.lock() {
            let (calls, ms) = upstream.entry(engine).or_default();
            *calls += 1;
            *ms += took.as_secs_f64() * 1000.0;
        }
    }

    pub fn report(&self) -> Value {
        let by_engine = self.upstream.lock().map(|u| u.clone()).unwrap_or_default();
        let (calls, ms) = by_engine
            .values()
            .fold((0, 0.0), |(c, m), (calls, ms)| (c + calls, m + ms));
        let by_engine: serde_json::Map<String, Value> = by_engine
            .iter()
            .map(|(engine, (calls, ms))| {
                (
                    (*engine).to_owned(),
                    json!({ "calls": calls, "totalMs": ms.round() }),
                )
            })
            .collect();
        let injected = self.injected.lock().map(|i| i.clone()).unwrap_or_default();
        let undelivered = self
            .undelivered_disconnects
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default();
        json!({
            "enabled": self.enabled.load(Ordering::Relaxed),
            "rate": self.rate,
            "seed": self.seed,
            "injected": injected,
            "total": injected.values().sum::<u64>(),
            "undeliveredDisconnects": undelivered,
            "emulator": { "calls": calls, "totalMs": ms.round(), "byEngine": by_engine },
        })
    }
}

static FAULTS: OnceLock<Faults> = OnceLock::new();

/// Switches faults on for this process (once).
pub fn install(faults: Faults) -> Result<&'static Faults, DevError> {
    FAULTS
        .set(faults)
        .map_err(|_| DevError::Unsupported("faults are installed already".into()))?;
    Ok(FAULTS.get().expect("just set"))
}

/// Whether to inject `fault` now (never when no faults are installed).
pub fn roll(fault: Fault) -> bool {
    FAULTS.get().is_some_and(|f| f.roll(fault))
}

/// Notes a connection whose `$disconnect` will never arrive (see
/// `Faults::undelivered_disconnects`); nothing without faults installed.
pub fn note_undelivered_disconnect(connection_id: &str) {
    if let Some(mut undelivered) = FAULTS
        .get()
        .and_then(|f| f.undelivered_disconnects.lock().ok())
    {
        undelivered.insert(connection_id.to_owned());
    }
}

/// When a function process is to be killed during this invocation: after how long.
pub fn kill_after() -> Option<Duration> {
    let faults = FAULTS.get()?;
    faults
        .roll(Fault::FunctionKilled)
        .then(|| Duration::from_millis(faults.between(0, 150)))
}

/// What a request to the emulator is, as far as faults go.
struct Call {
    service: &'static str,
    operation: String,
}

impl Call {
    fn of(request: &http::request::Parts) -> Option<Self> {
        let target = request.headers.get("x-amz-target")?.to_str().ok()?;
        let (prefix, operation) = target.split_once('.')?;
        let service = match prefix {
            p if p.starts_with("DynamoDB_") => "dynamodb",
            "AWSEvents" => "events",
            "AmazonSQS" => "sqs",
            _ => return None,
        };
        Some(Self {
            service,
            operation: operation.to_owned(),
        })
    }

    fn writes(&self) -> bool {
        matches!(
            (self.service, self.operation.as_str()),
            (
                "dynamodb",
                "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem"
            ) | ("events", "PutEvents")
                | (
                    "sqs",
                    "SendMessage" | "SendMessageBatch" | "DeleteMessage" | "DeleteMessageBatch"
                )
        )
    }

    /// The faults AWS could answer this call with.
    fn possible(&self) -> Vec<Fault> {
        let mut possible = vec![Fault::LatencySpike];
        match self.service {
            "dynamodb" => {
                possible.extend([Fault::DynamoDbThrottled, Fault::DynamoDbInternalError]);
                if self.operation == "TransactWriteItems" {
                    possible.push(Fault::DynamoDbTransactionConflict);
                }
            }
            "events" if self.operation == "PutEvents" => {
                possible.push(Fault::EventBridgeFailedEntries)
            }
            "sqs" => possible.push(Fault::SqsInternalError),
            _ => {}
        }
        if self.writes() {
            possible.push(Fault::ResponseLost);
        }
        possible
    }
}

/// Where the local cloud's services answer: DynamoDB and DynamoDB Streams on the DynamoDB
/// engine (`AWS_ENDPOINT_URL_DYNAMODB`), every other service on moto (`AWS_ENDPOINT_URL`).
#[derive(Clone, Debug)]
pub struct Upstreams {
    pub emulator: hyper::Uri,
    pub dynamodb: hyper::Uri,
}

impl Upstreams {
    pub fn new(emulator: &str, dynamodb: &str) -> Result<Self, DevError> {
        let uri = |url: &str| {
            url.parse::<hyper::Uri>()
                .map_err(|e| DevError::Unexpected(format!("the endpoint {url:?}: {e}")))
        };
        Ok(Self {
            emulator: uri(emulator)?,
            dynamodb: uri(dynamodb)?,
        })
    }

    /// From the SDK's standard settings, as the dev stack's own clients read them.
    pub fn from_env() -> Result<Self, DevError> {
        let emulator =
            std::env::var("AWS_ENDPOINT_URL").map_err(|_| "AWS_ENDPOINT_URL is not set")?;
        let dynamodb = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
            .map_err(|_| "AWS_ENDPOINT_URL_DYNAMODB is not set")?;
        Self::new(&emulator, &dynamodb)
    }

    /// The engine a request is for: DynamoDB's and DynamoDB Streams' JSON protocol names its
    /// service in `X-Amz-Target` (`DynamoDB_20120810.`, `DynamoDBStreams_20120810.`).
    fn of(&self, request: &http::request::Parts) -> (&'static str, &hyper::Uri) {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|t| t.to_str().ok())
            .unwrap_or_default();
        if target.starts_with("DynamoDB") {
            ("dynamodb", &self.dynamodb)
        } else {
            ("moto", &self.emulator)
        }
    }
}

/// The functions' way to the local cloud, failing at the run's rate.
pub struct FaultProxy {
    pub address: SocketAddr,
}

type Answer = Result<Response<Full<Bytes>>, DevError>;

impl FaultProxy {
    /// Listens on `port` (0: any) and forwards to `upstream` (each request to its engine),
    /// failing at `faults`' rate (the installed ones, or a test's own).
    pub async fn start(
        faults: &'static Faults,
        upstream: &Upstreams,
        port: u16,
    ) -> Result<Self, DevError> {
        let upstream = upstream.clone();
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
        let address = listener.local_addr()?;
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (client, upstream) = (client.clone(), upstream.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let (client, upstream) = (client.clone(), upstream.clone());
                        async move { answer(faults, &client, &upstream, request).await }
                    });
                    // An `Err` closes the connection without a response: the lost response.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { address })
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }
}

async fn answer(
    faults: &'static Faults,
    client: &Client<HttpConnector, Full<Bytes>>,
    upstream: &Upstreams,
    request: Request<Incoming>,
) -> Answer {
    let (parts, body) = request.into_parts();
    let body = all_of(body).await?;
    if let Some(control) = parts.uri.path().strip_prefix("/_faults") {
        return Ok(control_answer(faults, control));
    }
    let Some(call) = Call::of(&parts) else {
        return forward(faults, client, upstream, &parts, body).await;
    };
    let fingerprint = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut hasher);
        hasher.finish()
    };
    if faults
        .lost
        .lock()
        .is_ok_and(|mut lost| lost.remove(&fingerprint))
    {
        return forward(faults, client, upstream, &parts, body).await;
    }
    match faults.pick(&call.possible()) {
        None => forward(faults, client, upstream, &parts, body).await,
        Some(Fault::LatencySpike) => {
            tokio::time::sleep(Duration::from_millis(faults.between(300, 1500))).await;
            forward(faults, client, upstream, &parts, body).await
        }
        Some(Fault::ResponseLost) => {
            forward(faults, client, upstream, &parts, body).await?;
            if let Ok(mut lost) = faults.lost.lock() {
                lost.insert(fingerprint);
            }
            Err(DevError::Unsupported(
                "the response is lost (injected)".into(),
            ))
        }
        Some(Fault::DynamoDbThrottled) => Ok(aws_error(
            StatusCode::BAD_REQUEST,
            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded.",
            json!({}),
        )),
        Some(Fault::DynamoDbInternalError) => Ok(aws_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "com.amazonaws.dynamodb.v20120810#InternalServerError",
            "Internal server error",
            json!({}),
        )),
        Some(Fault::DynamoDbTransactionConflict) => Ok(transaction_conflict(faults, &body)),
        Some(Fault::SqsInternalError) => Ok(aws_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "com.amazonaws.sqs#InternalError",
            "We encountered an internal error. Please try again.",
            json!({}),
        )),
        Some(Fault::EventBridgeFailedEntries) => {
            let forward = |body| forward(faults, client, upstream, &parts, body);
            put_events_partly(faults, body, forward).await
        }
        Some(other) => Err(DevError::Unexpected(format!(
            "{} is not a proxy fault",
            other.name()
        ))),
    }
}

fn control_answer(faults: &Faults, control: &str) -> Response<Full<Bytes>> {
    match control {
        "/off" => faults.enabled.store(false, Ordering::Relaxed),
        "/on" => faults.enabled.store(true, Ordering::Relaxed),
        _ => {}
    }
    json_response(StatusCode::OK, &faults.report())
}

async fn forward(
    faults: &Faults,
    client: &Client<HttpConnector, Full<Bytes>>,
    upstream: &Upstreams,
    parts: &http::request::Parts,
    body: Bytes,
) -> Answer {
    let (engine, upstream) = upstream.of(parts);
    let mut uri = upstream.clone().into_parts();
    uri.path_and_query = parts.uri.path_and_query().cloned();
    let uri =
        hyper::Uri::from_parts(uri).map_err(|e| DevError::Unexpected(format!("the uri: {e}")))?;
    let mut request = Request::builder().method(parts.method.clone()).uri(uri);
    for (name, value) in &parts.headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(body))
        .map_err(|e| DevError::Unexpected(format!("the request: {e}")))?;
    let asked = std::time::Instant::now();
    let response = client
        .request(request)
        .await
        .map_err(|e| DevError::Unexpected(format!("the local {engine}: {e}")))?;
    let (parts, body) = response.into_parts();
    let body = all_of(body).await?;
    faults.time_upstream(engine, asked.elapsed());
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// All of `body`, its frames collected.
async fn all_of<B>(body: B) -> Result<Bytes, DevError>
where
    B: hyper::body::Body,
    B::Error: std::fmt::Display,
{
    let collected = body
        .collect()
        .await
        .map_err(|e| DevError::Unexpected(format!("a body: {e}")))?;
    Ok(collected.to_bytes())
}

fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    response
}

fn aws_error(status: StatusCode, kind: &str, message: &str, extra: Value) -> Response<Full<Bytes>> {
    let mut body = json!({ "__type": kind, "message": message });
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    json_response(status, &body)
}

/// `TransactionCanceledException` with one item's reason `TransactionConflict` (another
/// transaction was writing it), the others `None`, as DynamoDB reports it.
fn transaction_conflict(faults: &Faults, body: &Bytes) -> Response<Full<Bytes>> {
    let items = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|b| b["TransactItems"].as_array().map(Vec::len))
        .unwrap_or(1)
        .max(1);
    let conflicting = faults.between(0, items as u64 - 1) as usize;
    let reasons: Vec<Value> = (0..items)
        .map(|i| {
            if i == conflicting {
                json!({"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"})
            } else {
                json!({"Code": "None"})
            }
        })
        .collect();
    let codes: Vec<&str> = (0..items)
        .map(|i| {
            if i == conflicting {
                "TransactionConflict"
            } else {
                "None"
            }
        })
        .collect();
    aws_error(
        StatusCode::BAD_REQUEST,
        "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        &format!(
            "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
            codes.join(", ")
        ),
        json!({ "CancellationReasons": reasons }),
    )
}

/// `PutEvents` with some entries failed (`InternalFailure`) and the rest put: EventBridge's
/// partial failure, which the SDK does not retry. The entries kept go on through `forward`.
async fn put_events_partly<F, Forwarded>(faults: &Faults, body: Bytes, forward: F) -> Answer
where
    F: Fn(Bytes) -> Forwarded,
    Forwarded: std::future::Future<Output = Answer>,
{
    let mut request: Value = serde_json::from_slice(&body)
        .map_err(|e| DevError::Unexpected(format!("a PutEvents body: {e}")))?;
    let entries = request["Entries"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() {
        return forward(body).await;
    }
    // At least one entry fails; each other one with even odds.
    let first = faults.between(0, entries.len() as u64 - 1) as usize;
    let failed: Vec<bool> = (0..entries.len())
        .map(|i| i == first || faults.between(0, 1) == 1)
        .collect();
    let kept: Vec<Value> = entries
        .iter()
        .zip(&failed)
        .filter(|(_, failed)| !**failed)
        .map(|(entry, _)| entry.clone())
        .collect();
    let mut put = Vec::new();
    if !kept.is_empty() {
        request["Entries"] = Value::Array(kept);
        let response = forward(Bytes::from(request.to_string())).await?;
        let answered = all_of(response.into_body()).await?;
        let answered: Value = serde_json::from_slice(&answered)
            .map_err(|e| DevError::Unexpected(format!("a PutEvents answer: {e}")))?;
        put = answered["Entries"].as_array().cloned().unwrap_or_default();
    }
    let mut put = put.into_iter();
    let results: Vec<Value> = failed
        .iter()
        .map(|failed| {
            if *failed {
                json!({"ErrorCode": "InternalFailure", "ErrorMessage": "Internal failure (injected)"})
            } else {
                put.next().unwrap_or_else(|| json!({"ErrorCode": "InternalFailure"}))
            }
        })
        .collect();
    let failures = results
        .iter()
        .filter(|r| r.get("ErrorCode").is_some())
        .count();
    Ok(json_response(
        StatusCode::OK,
        &json!({ "FailedEntryCount": failures, "Entries": results }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_a_rate_and_a_seed() {
        let faults = Faults::parse("rate=0.25,seed=9").unwrap();
        assert_eq!((faults.rate, faults.seed), (0.25, 9));
        assert!(Faults::parse("rate=2").is_err());
        assert!(Faults::parse("seed=1").is_err());
        assert!(Faults::parse("rate=0.1,color=red").is_err());
    }

    #[test]
    fn the_same_seed_draws_the_same_faults_and_counts_them() {
        let choices = [Fault::DynamoDbThrottled, Fault::ResponseLost];
        let draw = || {
            let faults = Faults::parse("rate=0.3,seed=42").unwrap();
            let picked: Vec<_> = (0..200).map(|_| faults.pick(&choices)).collect();
            (picked, faults.report())
        };
        let (first, report) = draw();
        assert_eq!(first, draw().0);
        let hits = first.iter().flatten().count() as u64;
        assert!((30..=90).contains(&hits), "about 30% of 200: {hits}");
        assert_eq!(report["total"], hits);
        let off = Faults::parse("rate=1").unwrap();
        off.enabled.store(false, Ordering::Relaxed);
        assert_eq!(off.pick(&choices), None, "switched off");
    }

    #[test]
    fn a_conflict_names_one_item_of_the_transaction() {
        let faults = Faults::parse("rate=1,seed=3").unwrap();
        let body = Bytes::from(json!({"TransactItems": [{}, {}, {}]}).to_string());
        let response = transaction_conflict(&faults, &body);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }
}
