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

/// A route's declaration in its crate's `lib.rs`: `ROUTE` (method, path and what differs from
/// the pipeline's rules) and `handler(&App, Request)`, the pipeline ([`run`](crate::run))
/// around the crate's `handle(&Ctx)`.
///
/// - `route!(POST "/v1/orders" => handle);`
/// - `route!(POST "/v1/orders/{orderId}/accept" => handle, goes_on_while_suspended);`: each name
///   after the handle is a [`Route`](crate::Route) option.
#[macro_export]
macro_rules! route {
    ($method:ident $path:literal => $handle:ident $(, $option:ident)* $(,)?) => {
        /// This function's route (its template entry and OpenAPI operation say the same; the
        /// consistency tests check).
        pub const ROUTE: $crate::Route = $crate::Route::new(stringify!($method), $path)$(.$option())*;

        /// What `lambda_http` calls: the pipeline around this crate's `handle`.
        pub async fn handler(
            app: &$crate::__runner::App,
            request: $crate::lambda_http::Request,
        ) -> ::core::result::Result<
            $crate::lambda_http::Response<$crate::lambda_http::Body>,
            $crate::lambda_http::Error,
        > {
            $crate::run(app, request, ROUTE, $handle).await
        }
    };
}

/// What the macros' expansions call; not an API.
#[doc(hidden)]
pub mod __runner {
    pub use bouquet_app::__runner::{block_on, start};
    pub use bouquet_app::App;
}
