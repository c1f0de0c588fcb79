//! `GET /v1/cart`: the caller's cart with its bouquets as they are now
//! ([`bouquet_app::cart::current`]).

use bouquet_app::cart;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("GET", "/v1/cart");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    Reply::ok(&cart::current(&ctx.app, &caller.subject, ctx.now).await?)
}
