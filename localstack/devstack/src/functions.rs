//! The HTTP functions by binary name (the template's `BuildProperties.Binary`). The dev
//! stack calls the same handler each function's `main.rs` hands to `lambda_http::run`.

use futures::future::BoxFuture;
use serde_json::Value;

use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::Route;

pub type HttpHandler = fn(App, Request) -> BoxFuture<'static, Result<Response<Body>, Error>>;

macro_rules! http_functions {
    ($($binary:literal => $krate:ident),* $(,)?) => {
        /// (binary, the route the crate declares, its handler)
        pub const HTTP_FUNCTIONS: &[(&str, Route, HttpHandler)] = &[
            $(($binary, $krate::ROUTE, |app, request| Box::pin(async move { $krate::handler(&app, request).await }))),*
        ];
    };
}

http_functions! {
    "create-vendor" => create_vendor,
    "list-bouquets" => list_bouquets,
    "get-bouquet" => get_bouquet,
    "create-bouquet" => create_bouquet,
    "update-bouquet" => update_bouquet,
    "withdraw-bouquet" => withdraw_bouquet,
    "create-order" => create_order,
    "list-orders" => list_orders,
    "get-order" => get_order,
    "pay-order" => pay_order,
    "cancel-order" => cancel_order,
    "fulfil-order" => fulfil_order,
    "get-cart" => get_cart,
    "put-cart-item" => put_cart_item,
    "delete-cart-item" => delete_cart_item,
    "get-vendor-analytics" => get_vendor_analytics,
    "list-vases" => list_vases,
    "get-vase-telemetry" => get_vase_telemetry,
    "register-vase" => register_vase_locally,
}

/// Vase registration also needs IoT Core: the dev stack sets it up once at start
/// ([`set_registrar`]); the handler is otherwise the function's own.
mod register_vase_locally {
    pub use register_vase::ROUTE;

    use bouquet_app::App;
    use bouquet_http::lambda_http::{Body, Error, Request, Response};

    pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
        let registrar = super::REGISTRAR
            .get()
            .ok_or("the dev stack has not set up vase registration (set_registrar)")?;
        register_vase::handler(app, registrar, request).await
    }
}

static REGISTRAR: std::sync::OnceLock<register_vase::Registrar> = std::sync::OnceLock::new();

/// Gives `register-vase` its IoT Core (the emulator's) and the vase policy's local name.
pub fn set_registrar(sdk: &aws_config::SdkConfig, policy: String) {
    let registry = std::sync::Arc::new(bouquet_iot::AwsDeviceRegistry::new(
        aws_sdk_iot::Client::new(sdk),
    ));
    let _ = REGISTRAR.set(register_vase::Registrar { registry, policy });
}

/// A function a rule on the bus targets: gets the EventBridge event.
pub type EventHandler = fn(App, Value) -> BoxFuture<'static, Result<Value, Error>>;

/// (binary, handler) of every function an `EventBridgeRule` event triggers.
pub const EVENT_FUNCTIONS: &[(&str, EventHandler)] =
    &[("project-vendor-analytics", |app, event| {
        Box::pin(async move {
            let event = lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default());
            project_vendor_analytics::handler(&app, event).await
        })
    })];

pub fn event_handler(binary: &str) -> Option<EventHandler> {
    EVENT_FUNCTIONS
        .iter()
        .find(|(name, _)| *name == binary)
        .map(|(_, handler)| *handler)
}

/// A function triggered by a `Schedule` event: gets the EventBridge scheduled event.
pub type ScheduledHandler = fn(App, Value) -> BoxFuture<'static, Result<Value, Error>>;

/// (binary, handler) of every scheduled function.
pub const SCHEDULED_FUNCTIONS: &[(&str, ScheduledHandler)] = &[
    ("expire-reservations", |app, event| {
        Box::pin(async move {
            let event = lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default());
            let report = expire_reservations::handler(&app, event).await?;
            Ok(serde_json::to_value(report)?)
        })
    }),
    ("flag-offline-vases", |app, event| {
        Box::pin(async move {
            let event = lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default());
            let report = flag_offline_vases::handler(&app, event).await?;
            Ok(serde_json::to_value(report)?)
        })
    }),
];

pub fn scheduled_handler(binary: &str) -> Option<ScheduledHandler> {
    SCHEDULED_FUNCTIONS
        .iter()
        .find(|(name, _)| *name == binary)
        .map(|(_, handler)| *handler)
}

pub fn http_handler(binary: &str) -> Option<(Route, HttpHandler)> {
    HTTP_FUNCTIONS
        .iter()
        .find(|(name, _, _)| *name == binary)
        .map(|(_, route, handler)| (*route, *handler))
}

/// The stream-triggered functions, built for a mapping from their resolved environment.
pub fn stream_function(
    binary: &str,
    env: &std::collections::HashMap<String, String>,
    sdk: &aws_config::SdkConfig,
) -> Option<crate::streams::StreamInvoke> {
    match binary {
        "publish-events" => Some(json_invoke(
            std::sync::Arc::new(publish_events::Publisher {
                sink: Box::new(bouquet_bus::EventBridgeSink {
                    client: aws_sdk_eventbridge::Client::new(sdk),
                    bus_name: env.get("EVENT_BUS_NAME")?.clone(),
                }),
            }),
            |publisher, event| async move { publisher.handle(event).await },
        )),
        _ => None,
    }
}

/// The SQS-triggered functions, built for a mapping from their resolved environment.
pub fn queue_function(
    binary: &str,
    env: &std::collections::HashMap<String, String>,
    app: &App,
    sdk: &aws_config::SdkConfig,
) -> Option<crate::streams::StreamInvoke> {
    match binary {
        "ingest-vase-messages" => Some(json_invoke(
            std::sync::Arc::new(ingest_vase_messages::Ingest {
                app: app.clone(),
                sqs: aws_sdk_sqs::Client::new(sdk),
                dead_letter_queue_url: env.get("DEAD_LETTER_QUEUE_URL")?.clone(),
            }),
            |ingest, event| async move { ingest.handle(event).await },
        )),
        _ => None,
    }
}

/// A `lambda_runtime` handler on `state` as the mappings call it: the event as JSON in, the
/// response as JSON out, errors as text.
fn json_invoke<S, E, R, F, Fut>(state: std::sync::Arc<S>, handle: F) -> crate::streams::StreamInvoke
where
    S: Send + Sync + 'static,
    E: serde::de::DeserializeOwned + Send + 'static,
    R: serde::Serialize,
    F: Fn(std::sync::Arc<S>, lambda_runtime::LambdaEvent<E>) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = Result<R, lambda_runtime::Error>> + Send + 'static,
{
    Box::new(move |event: Value| {
        let state = state.clone();
        Box::pin(async move {
            let event: E = serde_json::from_value(event).map_err(|e| e.to_string())?;
            let response = handle(
                state,
                lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
            )
            .await
            .map_err(|e| e.to_string())?;
            serde_json::to_value(response).map_err(|e| e.to_string())
        })
    })
}
