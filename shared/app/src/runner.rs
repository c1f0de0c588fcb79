//! [`main!`](crate::main): the `main` of an event-driven function whose handler takes the app,
//! on `bouquet-runtime`'s runner, so that its `main.rs` is one line. HTTP functions use
//! `bouquet_http::main!`.

/// The `main` of an event-driven function: tracing, what it builds once per container, then the
/// Lambda runtime calling it for each event, flushing the metrics each invocation counted.
///
/// - `main!(handler = flag_offline_vases::handler)`: `handler(&App, LambdaEvent<E>)`, the app
///   from [`App::from_sdk`](crate::App::from_sdk); `app = ...` names another constructor.
/// - The ports a handler needs beyond the app's own are the app's too ([`crate::ports`]).
/// - Functions that build more than the app: `bouquet_runtime::main!(function = Type)`.
#[macro_export]
macro_rules! main {
    (handler = $handler:path) => {
        $crate::main!(handler = $handler, app = $crate::App::from_sdk);
    };
    (handler = $handler:path, app = $app:path) => {
        fn main() -> ::core::result::Result<(), $crate::__runner::Error> {
            $crate::__runner::block_on(async {
                let sdk = $crate::__runner::start()?;
                let app = $app(&sdk).await?;
                $crate::__runner::run(|event| $handler(&app, event)).await
            })
        }
    };
}
