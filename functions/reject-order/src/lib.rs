//! `POST /v1/orders/{orderId}/reject`: its vendor rejects a `paid` or `accepted` order `{reason}`: `rejected` (event `OrderRejected`), its bouquets back on sale (or withdrawn, `withdrawBouquets`), the charge refunded through the gateway.

use bouquet_app::domain::OrderId;
use bouquet_app::orders::Action;
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::owned::order_transition;
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};

pub const ROUTE: Route =
    Route::new("POST", "/v1/orders/{orderId}/reject").goes_on_while_suspended();

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    ctx.caller()?.require(Role::Vendor)?;
    let order_id = ctx.path("orderId", OrderId::parse)?;
    let rejection: Rejection = ctx.json()?;
    order_transition(
        ctx,
        order_id,
        Action::Reject {
            reason: &rejection.reason,
            withdraw: rejection.withdraw_bouquets,
        },
    )
    .await
}

/// The body: why the order is rejected (1 to 200 characters; the customer reads it), and
/// whether its bouquets are withdrawn instead of going back on sale.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Rejection {
    reason: String,
    #[serde(default)]
    withdraw_bouquets: bool,
}
