//! [`main!`](crate::main): the `main` of every HTTP function, so that its `main.rs` is one
//! line naming its handler. Every handler has one shape, `handler(&App, Request)`: the ports a
//! use case needs beyond the app's own are the app's too ([`bouquet_app::ports`]).

/// The `main` of an HTTP function: tracing, the SDK configuration and the app built once per
/// container, then the Lambda runtime calling the handler for each request.
///
/// - `main!(handler = create_order::handler)`: `handler(&App, Request)`, the app from
///   [`App::from_sdk`](bouquet_app::App::from_sdk).
/// - `app = bouquet_app::App::taking_payments`: another async constructor of the app.
#[macro_export]
macro_rules! main {
    (handler = $handler:path) => {
        $crate::main!(handler = $handler, app = $crate::__runner::App::from_sdk);
    };
    (handler = $handler:path, app = $app:path) => {
        fn main() -> ::core::result::Result<(), $crate::lambda_http::Error> {
            $crate::__runner::block_on(async {
                let sdk = $crate::__runner::start()?;
                let app = $app(&sdk).await?;
                $crate::lambda_http::run($crate::lambda_http::service_fn(|request| {
                    $handler(&app, request)
                }))
                .await
            })
        }
    };
}

/// What the macro's expansion calls; not an API.
#[doc(hidden)]
pub mod __runner {
    pub use bouquet_app::__runner::{block_on, start};
    pub use bouquet_app::App;
}
