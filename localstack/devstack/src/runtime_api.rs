//! A local Lambda Runtime API, so the real function binaries (the same `main.rs` Lambda runs)
//! can be started as processes and invoked: `GET /2018-06-01/runtime/invocation/next`
//! hands out events, `POST .../{id}/response` and `.../{id}/error` return results.
//!
//! It also times what Lambda bills as init: from spawning the process to its first poll.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error("the function reported an error: {0}")]
    Function(Value),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the function process is gone")]
    Gone,
    /// Past the function's concurrency: Lambda's `TooManyRequestsException` (HTTP 429).
    #[error("TooManyRequestsException: rate exceeded (the function is at its concurrency)")]
    Throttled,
    #[error("cannot start {}: {source} (build it with `cargo build --bins`)", binary.display())]
    Spawn {
        binary: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An in-process handler (tests) failed, or its event or answer was not the JSON expected.
    #[error("the handler failed")]
    Handler(#[source] Box<dyn std::error::Error + Send + Sync>),
}

struct Invocation {
    id: String,
    event: Value,
    deadline_ms: u64,
    trace_header: String,
}

/// The function's answer (or its error) and when it took the event.
type Answer = (Result<Value, Value>, Option<Instant>);

#[derive(Default)]
struct State {
    queue: VecDeque<Invocation>,
    waiting: HashMap<String, oneshot::Sender<Answer>>,
    /// When the function took each invocation it has not answered yet.
    taken: HashMap<String, Instant>,
    first_poll: Option<Instant>,
}

/// A new sampled X-Ray trace whose parent is the invocation's segment, in the form Lambda's
/// active tracing hands a function (`Root=1-<epoch>-<96 bits>;Parent=<64 bits>;Sampled=1`).
pub fn new_trace_header() -> String {
    // A ULID carries 80 random bits: the trace's 96 take 16 more from the second one.
    let (trace, segment) = (ulid::Ulid::new(), ulid::Ulid::new());
    let epoch = trace.timestamp_ms() / 1000;
    let root = (trace.random() << 16) | (segment.random() >> 64);
    format!(
        "Root=1-{epoch:08x}-{root:024x};Parent={:016x};Sampled=1",
        segment.random() as u64
    )
}

/// One Runtime API endpoint serves one function process.
#[derive(Clone)]
pub struct RuntimeApi {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    ready: Arc<Notify>,
    work: Arc<Notify>,
}

impl RuntimeApi {
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let api = Self {
            address: listener.local_addr()?,
            state: Arc::default(),
            ready: Arc::default(),
            work: Arc::default(),
        };
        let server = api.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let api = server.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let api = api.clone();
                        async move { Ok::<_, Infallible>(api.answer(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(api)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Waits until the function polls for its first event (its init is done).
    pub async fn wait_ready(&self, timeout: Duration) -> Option<Instant> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.ready.notified();
            if let Some(at) = self.state.lock().ok()?.first_poll {
                return Some(at);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    /// Fails every invocation taken or queued with `error`: the process is gone.
    fn fail_all(&self, error: &Value) {
        if let Ok(mut state) = self.state.lock() {
            state.queue.clear();
            for (id, waiting) in state.waiting.drain().collect::<Vec<_>>() {
                let _ = waiting.send((Err(error.clone()), state.taken.remove(&id)));
            }
        }
    }

    /// Delivers `event` and waits for the function's answer. Each invocation gets its own
    /// sampled trace, as Lambda's active tracing gives it.
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Value, InvokeError> {
        self.invoke_traced(event, timeout, &new_trace_header())
            .await
    }

    /// [`Self::invoke`], with when the function took the event (`None` if it never did):
    /// before it, the invocation waited; after it, the function worked.
    pub async fn invoke_timed(
        &self,
        event: Value,
        timeout: Duration,
    ) -> (Result<Value, InvokeError>, Option<Instant>) {
        self.invoke_at(event, timeout, &new_trace_header()).await
    }

    /// [`Self::invoke`] with the X-Ray trace header Lambda would hand the function.
    pub async fn invoke_traced(
        &self,
        event: Value,
        timeout: Duration,
        trace_header: &str,
    ) -> Result<Value, InvokeError> {
        self.invoke_at(event, timeout, trace_header).await.0
    }

    async fn invoke_at(
        &self,
        event: Value,
        timeout: Duration,
        trace_header: &str,
    ) -> (Result<Value, InvokeError>, Option<Instant>) {
        let id = ulid::Ulid::new().to_string();
        let deadline_ms = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            + timeout)
            .as_millis() as u64;
        let (sender, receiver) = oneshot::channel();
        {
            let Ok(mut state) = self.state.lock() else {
                return (Err(InvokeError::Gone), None);
            };
            state.waiting.insert(id.clone(), sender);
            state.queue.push_back(Invocation {
                id: id.clone(),
                event,
                deadline_ms,
                trace_header: trace_header.to_owned(),
            });
        }
        self.work.notify_one();
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok((Ok(value), taken))) => (Ok(value), taken),
            Ok(Ok((Err(error), taken))) => (Err(InvokeError::Function(error)), taken),
            Ok(Err(_)) => (Err(InvokeError::Gone), None),
            Err(_) => {
                let taken = self.state.lock().ok().and_then(|mut s| s.taken.remove(&id));
                (Err(InvokeError::Timeout(timeout)), taken)
            }
        }
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let body = request
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        if path == "/2018-06-01/runtime/invocation/next" {
            return self.next().await;
        }
        let parts: Vec<&str> = path
            .trim_start_matches("/2018-06-01/runtime/")
            .split('/')
            .collect();
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match parts.as_slice() {
            ["invocation", id, kind @ ("response" | "error")] => {
                let waiting = self.state.lock().ok().and_then(|mut s| {
                    let taken = s.taken.remove(*id);
                    s.waiting.remove(*id).map(|sender| (sender, taken))
                });
                if let Some((sender, taken)) = waiting {
                    let result = if *kind == "response" {
                        Ok(value)
                    } else {
                        Err(value)
                    };
                    let _ = sender.send((result, taken));
                }
                reply(
                    StatusCode::ACCEPTED,
                    Vec::new(),
                    b"{\"status\":\"OK\"}".to_vec(),
                )
            }
            ["init", "error"] => {
                tracing::error!(error = %value, "function init failed");
                reply(
                    StatusCode::ACCEPTED,
                    Vec::new(),
                    b"{\"status\":\"OK\"}".to_vec(),
                )
            }
            _ => reply(StatusCode::NOT_FOUND, Vec::new(), Vec::new()),
        }
    }

    async fn next(&self) -> Response<Full<Bytes>> {
        loop {
            let notified = self.work.notified();
            if let Ok(mut state) = self.state.lock() {
                if state.first_poll.is_none() {
                    state.first_poll = Some(Instant::now());
                    self.ready.notify_waiters();
                }
                if let Some(Invocation {
                    id,
                    event,
                    deadline_ms,
                    trace_header,
                }) = state.queue.pop_front()
                {
                    state.taken.insert(id.clone(), Instant::now());
                    let headers = vec![
                        ("lambda-runtime-aws-request-id", id),
                        ("lambda-runtime-deadline-ms", deadline_ms.to_string()),
                        (
                            "lambda-runtime-invoked-function-arn",
                            "arn:aws:lambda:eu-west-1:123456789012:function:local".to_owned(),
                        ),
                        ("lambda-runtime-trace-id", trace_header),
                    ];
                    return reply(StatusCode::OK, headers, event.to_string().into_bytes());
                }
            }
            notified.await;
        }
    }
}

fn reply(
    status: StatusCode,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    for (name, value) in headers {
        if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// A function binary running against its own Runtime API, as in a Lambda sandbox.
pub struct FunctionProcess {
    pub api: RuntimeApi,
    child: tokio::process::Child,
    pub spawned_at: Instant,
}

impl FunctionProcess {
    /// Starts `binary` with the function environment `env` (the template's variables,
    /// resolved) plus what the Lambda service sets.
    pub async fn spawn(
        binary: &Path,
        name: &str,
        env: &[(String, String)],
    ) -> std::io::Result<Self> {
        Self::spawn_logging_to(binary, name, env, Stdio::inherit()).await
    }

    /// The same, with the function's standard output (its log lines) going to `log`.
    pub async fn spawn_logging_to(
        binary: &Path,
        name: &str,
        env: &[(String, String)],
        log: Stdio,
    ) -> std::io::Result<Self> {
        let api = RuntimeApi::start().await?;
        let mut command = tokio::process::Command::new(binary);
        command
            .env("AWS_LAMBDA_RUNTIME_API", api.address().to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(log)
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let spawned_at = Instant::now();
        let child = command.spawn()?;
        Ok(Self {
            api,
            child,
            spawned_at,
        })
    }

    /// Kills the process as a crash does (SIGKILL) and fails the invocations it held, as
    /// Lambda reports a sandbox that died (`Runtime.ExitError`).
    pub fn crash(&self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on our own child's pid; no memory is touched.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        self.api.fail_all(&serde_json::json!({
            "errorType": "Runtime.ExitError",
            "errorMessage": "Runtime exited with error: signal: killed",
        }));
    }

    /// Init time: spawn to first poll of the Runtime API.
    pub async fn init_duration(&self, timeout: Duration) -> Option<Duration> {
        self.api
            .wait_ready(timeout)
            .await
            .map(|at| at.duration_since(self.spawned_at))
    }

    /// Peak resident memory so far (`VmHWM`), in KiB, where /proc tells.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Turns what `lambda_http` returns for an API Gateway v2 event into the HTTP response
/// API Gateway sends: status, headers (multi-value joined as separate headers), cookies as
/// `Set-Cookie`, body (base64-decoded when flagged).
pub fn http_response(payload: &Value) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
    use base64::Engine;
    let status = StatusCode::from_u16(payload["statusCode"].as_u64().unwrap_or(200) as u16)
        .unwrap_or(StatusCode::OK);
    let mut headers = Vec::new();
    for (name, value) in payload["headers"].as_object().into_iter().flatten() {
        headers.push((name.clone(), value.as_str().unwrap_or_default().to_owned()));
    }
    for (name, values) in payload["multiValueHeaders"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if payload["headers"].get(name).is_some() {
            continue;
        }
        for value in values.as_array().into_iter().flatten() {
            headers.push((name.clone(), value.as_str().unwrap_or_default().to_owned()));
        }
    }
    for cookie in payload["cookies"].as_array().into_iter().flatten() {
        headers.push((
            "set-cookie".into(),
            cookie.as_str().unwrap_or_default().to_owned(),
        ));
    }
    let text = payload["body"].as_str().unwrap_or_default();
    let body = if payload["isBase64Encoded"] == true {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap_or_default()
    } else {
        text.as_bytes().to_vec()
    };
    (status, headers, body)
}
