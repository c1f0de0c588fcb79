//! The `main` of every event-driven function (EventBridge targets, queues, streams,
//! schedules, the WebSocket routes), so that its `main.rs` is one line:
//! `bouquet_runtime::main!(function = publish_events::Publisher);`. Functions whose handler
//! takes the app use `bouquet_app::main!`, HTTP functions `bouquet_http::main!`. Queue and
//! stream functions answer through [`batch`].

pub mod batch;

/// The `main` of an event-driven function whose type has `async fn from_env() -> Result<Self,
/// E>` and `async fn handle(&self, LambdaEvent<E>)`: tracing, the function built once per
/// container, then the Lambda runtime calling it for each event, flushing the metrics each
/// invocation counted.
#[macro_export]
macro_rules! main {
    (function = $function:ty) => {
        fn main() -> ::core::result::Result<(), $crate::__runner::Error> {
            $crate::__runner::block_on(async {
                $crate::__runner::start()?;
                let function = <$function>::from_env().await?;
                $crate::__runner::run(|event| function.handle(event)).await
            })
        }
    };
}

/// What the macro's expansion calls; not an API.
#[doc(hidden)]
pub mod __runner {
    use std::future::Future;

    pub use lambda_runtime::Error;
    use lambda_runtime::{service_fn, LambdaEvent};
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    /// Runs the function on a multi-threaded Tokio runtime (as `#[tokio::main]` does). An
    /// error that ends it (a container that cannot be configured) is written whole, with its
    /// causes, before `main` returns it (which prints only its debug form).
    pub fn block_on(main: impl Future<Output = Result<(), Error>>) -> Result<(), Error> {
        let ended = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(main);
        if let Err(error) = &ended {
            eprintln!(
                "the function stopped: {}",
                bouquet_aws::describe(error.as_ref())
            );
        }
        ended
    }

    /// Tracing as the runtime sets it up, and the SDK configuration from Lambda's environment.
    pub fn start() -> Result<bouquet_aws::SdkConfig, Error> {
        lambda_runtime::tracing::init_default_subscriber();
        Ok(bouquet_aws::aws_sdk_config()?)
    }

    /// The runtime's loop: each event to `handle`, what it counted flushed under its request id.
    pub async fn run<E, O, F, Fut>(handle: F) -> Result<(), Error>
    where
        E: DeserializeOwned + Send + 'static,
        O: Serialize,
        F: Fn(LambdaEvent<E>) -> Fut,
        Fut: Future<Output = Result<O, Error>> + Send,
    {
        lambda_runtime::run(service_fn(|event: LambdaEvent<E>| {
            let request_id = event.context.request_id.clone();
            // Boxed: the handler's future is a deep type, and the runtime's loop is built
            // around it (unboxed, some functions overflow the compiler's query depth).
            let handled = handle(event);
            let invocation = async move {
                // The runtime reports an error by its text: with its causes, so the failure
                // destination says why, not only which layer gave up.
                handled
                    .await
                    .map_err(|error| Error::from(bouquet_aws::describe(error.as_ref())))
            };
            bouquet_metrics::flushed(request_id, Box::pin(invocation))
        }))
        .await
    }
}
