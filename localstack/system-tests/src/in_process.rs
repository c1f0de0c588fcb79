//! The functions' handlers in this process, on a test's app (its own table and clock): what
//! the system tests call directly, and what they hand the dev stack's HTTP API and mappings
//! in place of the built binaries (which `devstack up` runs). Only the tests link function
//! crates; the dev stack does not.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use bouquet_app::iot::Registrar;
use bouquet_app::App;
use bouquet_http::lambda_http::{self, Body, Error, Request, Response};
use bouquet_http::Route;
use devstack::lambda::{Invoke, InvokeError, Resolver};

pub type HttpHandler = fn(InProcess, Request) -> BoxFuture<'static, Result<Response<Body>, Error>>;

macro_rules! http_functions {
    ($($binary:literal => $module:ident),* $(,)?) => {
        /// (binary, the route the crate declares, its handler) of every HTTP function.
        pub const HTTP_FUNCTIONS: &[(&str, Route, HttpHandler)] = &[
            $(($binary, $module::ROUTE, |f, request| Box::pin(async move { $module::handler(&f.ported(), request).await }))),*
        ];
    };
}

/// Every HTTP function's crate, as a module of this one (`build.rs` finds them under
/// `functions/`), and [`HTTP_FUNCTIONS`], their table.
pub mod routes {
    use super::*;

    include!(concat!(env!("OUT_DIR"), "/http_functions.rs"));
}

pub use routes::HTTP_FUNCTIONS;

/// The functions an EventBridge schedule triggers.
pub const SCHEDULED_FUNCTIONS: &[&str] = &[
    "expire-reservations",
    "flag-offline-vases",
    "reconcile-vase-things",
    "redrive-outbox",
];

/// The functions an EventBridge rule triggers.
pub const EVENT_FUNCTIONS: &[&str] = &[
    "project-vendor-analytics",
    "broadcast-events",
    "send-order-emails",
];

/// The functions only an operator invokes (no trigger: docs/deploying.md).
pub const OPERATOR_FUNCTIONS: &[&str] = &["backfill-index-keys"];

/// The functions an SQS queue triggers that the tests run in process.
pub const QUEUE_FUNCTIONS: &[&str] = &["push-frames", "process-bouquet-photos"];

/// The WebSocket API's functions (its routes and its `$connect` authorizer).
pub const WEBSOCKET_FUNCTIONS: &[&str] = &[
    "ws-authorize",
    "ws-connect",
    "ws-disconnect",
    "ws-subscribe",
    "ws-ping",
];

pub fn http_handler(binary: &str) -> Option<(Route, HttpHandler)> {
    HTTP_FUNCTIONS
        .iter()
        .find(|(name, _, _)| *name == binary)
        .map(|(_, route, handler)| (*route, *handler))
}

fn lambda_event(event: Value) -> lambda_runtime::LambdaEvent<Value> {
    lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default())
}

/// Runs a scheduled or EventBridge-triggered function's handler with `event`.
pub async fn run_event_function(
    binary: &str,
    functions: &InProcess,
    event: Value,
) -> Result<Value, Error> {
    let app = &functions.ported();
    let event = lambda_event(event);
    Ok(match binary {
        "expire-reservations" => {
            serde_json::to_value(expire_reservations::handler(app, event).await?)?
        }
        "flag-offline-vases" => {
            serde_json::to_value(flag_offline_vases::handler(app, event).await?)?
        }
        "reconcile-vase-things" => {
            serde_json::to_value(reconcile_vase_things::handler(app, event).await?)?
        }
        "project-vendor-analytics" => project_vendor_analytics::handler(app, event).await?,
        "backfill-index-keys" => {
            serde_json::to_value(backfill_index_keys::handler(app, event).await?)?
        }
        "send-order-emails" => {
            send_order_emails::SendOrderEmails {
                app: app.clone(),
                mailer: functions.mailer.clone(),
                marketplace: "Bouquet".into(),
            }
            .handle(event)
            .await?
        }
        "redrive-outbox" => {
            functions
                .redrive
                .as_ref()
                .ok_or("this test set up no outbox to redrive")?
                .handle(event)
                .await?
        }
        "broadcast-events" => serde_json::to_value(broadcast_events::handler(app, event).await?)?,
        "process-bouquet-photos" => serde_json::to_value(
            process_bouquet_photos::ProcessPhotos {
                app: app.clone(),
                objects: functions.photo_objects.clone(),
            }
            .handle(typed(event)?)
            .await?,
        )?,
        "push-frames" => serde_json::to_value(push_frames::handler(app, typed(event)?).await?)?,
        other => return Err(format!("no event-triggered function {other}").into()),
    })
}

fn typed<T: serde::de::DeserializeOwned>(
    event: lambda_runtime::LambdaEvent<Value>,
) -> Result<lambda_runtime::LambdaEvent<T>, Error> {
    Ok(lambda_runtime::LambdaEvent::new(
        serde_json::from_value(event.payload)?,
        event.context,
    ))
}

/// Runs a WebSocket API function's handler with `event` (API Gateway's WebSocket event, or
/// the authorizer's REQUEST event).
pub async fn run_websocket_function(
    binary: &str,
    functions: &InProcess,
    event: Value,
) -> Result<Value, Error> {
    let app = &functions.ported();
    let event = lambda_event(event);
    Ok(match binary {
        "ws-authorize" => {
            serde_json::to_value(ws_authorize::handler(&functions.verifier, typed(event)?).await?)?
        }
        "ws-connect" => serde_json::to_value(ws_connect::handler(app, typed(event)?).await?)?,
        "ws-disconnect" => serde_json::to_value(ws_disconnect::handler(app, typed(event)?).await?)?,
        "ws-subscribe" => serde_json::to_value(ws_subscribe::handler(app, typed(event)?).await?)?,
        "ws-ping" => serde_json::to_value(ws_ping::handler(typed(event)?).await?)?,
        other => return Err(format!("no WebSocket function {other}").into()),
    })
}

/// The app's handlers behind the dev stack's [`Resolver`]: HTTP routes (as `lambda_http`
/// would answer API Gateway), schedules and rule targets.
#[derive(Clone)]
pub struct InProcess {
    pub app: App,
    pub registrar: Arc<Registrar>,
    /// The dev stack's token key, as the WebSocket authorizer validates it.
    pub verifier: Arc<ws_authorize::Verifier>,
    /// Where frames go: a test's local WebSocket API. Functions that push fail without one.
    pub pusher: Option<Arc<dyn bouquet_app::realtime::Pusher>>,
    /// Where the broadcaster queues fan-out work: a test's queues (see `TestCloud::live`).
    pub queue: Option<Arc<dyn bouquet_app::realtime::WorkQueue>>,
    /// The outbox `redrive-outbox` republishes from: a test's bus and parking lot.
    pub redrive: Option<Arc<redrive_outbox::Redrive>>,
    /// The user directory `add-vendor-member` changes.
    pub directory: Arc<dyn bouquet_app::directory::UserDirectory>,
    /// Where `send-order-emails` sends: the emulator's SES, from this test's sender.
    pub mailer: Arc<dyn bouquet_app::mail::Mailer>,
    /// `request-photo-upload`'s signer, for this test's upload bucket on the emulator.
    pub photo_signer: Arc<bouquet_photos::PostPolicySigner>,
    /// `process-bouquet-photos`' buckets: this test's, on the emulator.
    pub photo_objects: Arc<dyn bouquet_photos::PhotoObjects>,
    /// The upload bucket's delivery photos, which redaction and erasure remove: this test's.
    pub private_photos: Arc<dyn bouquet_photos::PrivatePhotos>,
}

impl InProcess {
    /// The test's app with every port the test gave: the handlers ask the app for them, as
    /// each function's does (a port the test did not give fails the function that asks).
    pub fn ported(&self) -> App {
        let mut ports = self
            .app
            .ports
            .clone()
            .with_registrar(self.registrar.clone())
            .with_directory(self.directory.clone())
            .with_photo_signer(self.photo_signer.clone())
            .with_private_photos(self.private_photos.clone())
            .with_webhook_secret(crate::WEBHOOK_SECRET)
            .with_connect_webhook_secret(crate::CONNECT_WEBHOOK_SECRET);
        if let Some(pusher) = &self.pusher {
            ports = ports.with_pusher(pusher.clone());
        }
        if let Ok(live) = self.ports() {
            ports = ports.with_live(live);
        }
        self.app.clone().with_ports(ports)
    }

    fn pusher(&self) -> Result<Arc<dyn bouquet_app::realtime::Pusher>, Error> {
        self.pusher
            .clone()
            .ok_or_else(|| "this test set up no WebSocket API to push to".into())
    }

    /// The broadcaster's and the fan-out workers' ports.
    pub fn ports(&self) -> Result<bouquet_app::live::LivePorts, Error> {
        Ok(bouquet_app::live::LivePorts {
            pusher: self.pusher()?,
            queue: self
                .queue
                .clone()
                .ok_or("this test set up no fan-out queue")?,
        })
    }

    /// Calls the HTTP function `binary` with `request`.
    pub async fn call(&self, binary: &str, request: Request) -> Response<Body> {
        let (_, handler) =
            http_handler(binary).unwrap_or_else(|| panic!("no HTTP function {binary}"));
        handler(self.clone(), request)
            .await
            .expect("handlers always answer")
    }
}

/// An in-process [`Invoke`] from a closure on the event.
pub fn invoke<F, Fut>(handle: F) -> Invoke
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, Error>> + Send + 'static,
{
    let handle = Arc::new(handle);
    Arc::new(move |event| {
        let handle = handle.clone();
        Box::pin(async move { handle(event).await.map_err(InvokeError::Handler) })
    })
}

/// A `lambda_runtime` handler on a JSON-typed event, as an [`Invoke`].
pub fn typed_invoke<S, E, R, F, Fut>(state: Arc<S>, handle: F) -> Invoke
where
    S: Send + Sync + 'static,
    E: serde::de::DeserializeOwned + Send + 'static,
    R: serde::Serialize,
    F: Fn(Arc<S>, lambda_runtime::LambdaEvent<E>) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = Result<R, Error>> + Send + 'static,
{
    invoke(move |event: Value| {
        let state = state.clone();
        async move {
            let event: E = serde_json::from_value(event)?;
            let response = handle(
                state,
                lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
            )
            .await?;
            Ok(serde_json::to_value(response)?)
        }
    })
}

/// What `lambda_http` sends back for an API Gateway v2 event.
fn api_gateway_response(response: Response<Body>) -> Value {
    let status = response.status().as_u16();
    let mut headers = serde_json::Map::new();
    for (name, value) in response.headers() {
        headers.insert(name.to_string(), json!(value.to_str().unwrap_or_default()));
    }
    let body = match response.into_body() {
        Body::Text(text) => text,
        Body::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    };
    json!({ "statusCode": status, "headers": headers, "body": body, "isBase64Encoded": false })
}

impl Resolver for InProcess {
    fn invoker(&self, binary: &str) -> Option<Invoke> {
        let is_http = http_handler(binary).is_some();
        let is_event = SCHEDULED_FUNCTIONS.contains(&binary)
            || EVENT_FUNCTIONS.contains(&binary)
            || QUEUE_FUNCTIONS.contains(&binary)
            || OPERATOR_FUNCTIONS.contains(&binary);
        let is_websocket = WEBSOCKET_FUNCTIONS.contains(&binary);
        if !is_http && !is_event && !is_websocket {
            return None;
        }
        let functions = self.clone();
        let binary = binary.to_owned();
        Some(invoke(move |event: Value| {
            let functions = functions.clone();
            let binary = binary.clone();
            async move {
                if is_http {
                    let request = lambda_http::request::from_str(&event.to_string())?;
                    Ok(api_gateway_response(functions.call(&binary, request).await))
                } else if is_websocket {
                    run_websocket_function(&binary, &functions, event).await
                } else {
                    run_event_function(&binary, &functions, event).await
                }
            }
        }))
    }
}
