//! `DELETE /v1/cart/items/{bouquetId}`: removes a bouquet from the caller's cart; removing
//! one that is not there answers the cart unchanged.

use bouquet_app::cart;
use bouquet_app::domain::BouquetId;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("DELETE", "/v1/cart/items/{bouquetId}");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    Reply::ok(&cart::remove(&ctx.app, &caller.subject, bouquet_id, ctx.now).await?)
}
