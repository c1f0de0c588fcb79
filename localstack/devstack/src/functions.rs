//! The HTTP functions by binary name (the template's `BuildProperties.Binary`). The dev
//! stack calls the same handler each function's `main.rs` hands to `lambda_http::run`.

use futures::future::BoxFuture;

use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{App, Route};

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
}

pub fn http_handler(binary: &str) -> Option<(Route, HttpHandler)> {
    HTTP_FUNCTIONS
        .iter()
        .find(|(name, _, _)| *name == binary)
        .map(|(_, route, handler)| (*route, *handler))
}
