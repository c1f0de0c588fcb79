//! `PUT /v1/cart/items/{bouquetId}`: adds an available bouquet to the caller's cart. A cart
//! holds one vendor's bouquets; the cart update's condition enforces it (409
//! `cart.vendor_mismatch`), so concurrent adds cannot mix vendors. Adding twice is a no-op.

use bouquet_app::cart;
use bouquet_app::domain::{BouquetId, Cart};
use bouquet_app::store::CartRefusal;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route = Route::new("PUT", "/v1/cart/items/{bouquetId}");

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let bouquet_id = ctx.path("bouquetId", BouquetId::parse)?;
    let bouquet = ctx
        .app
        .store
        .bouquet(bouquet_id, true)
        .await?
        .ok_or(ApiError::BouquetUnavailable(vec![bouquet_id]))?;
    // Availability is checked on the bouquet as read; the reservation checks it again.
    Cart::empty(caller.subject.clone()).add(&bouquet, ctx.now)?;
    let updated = ctx
        .app
        .store
        .add_to_cart(&caller.subject, &bouquet, ctx.now)
        .await
        .map_err(|refusal| match refusal {
            CartRefusal::Domain(error) => ApiError::from(error),
            CartRefusal::Store(error) => ApiError::from(error),
        })?;
    Reply::ok(&cart::view(&ctx.app.store, updated, ctx.now).await?)
}
