//! `POST /v1/orders/{orderId}/reject`: its vendor rejects a `paid` or `accepted` order `{reason}`: `rejected` (event `OrderRejected`), its bouquets back on sale (or withdrawn, `withdrawBouquets`), the charge refunded through the gateway.

use bouquet_app::domain::OrderId;
use bouquet_app::orders::Action;
use bouquet_http::owned::order_transition;
use bouquet_http::{ApiError, Ctx, Reply, Role};

bouquet_http::route!(POST "/v1/orders/{orderId}/reject" => handle, goes_on_while_suspended);

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
