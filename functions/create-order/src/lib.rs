//! `POST /v1/orders`: a customer reserves bouquets for the hold duration, either
//! `{bouquetIds}` or, without a body, the cart (which the same transaction empties). The use
//! case is [`bouquet_app::reservation::reserve`].

use bouquet_app::domain::order::parse_bouquet_ids;
use bouquet_app::domain::Order;
use bouquet_app::reservation::{self, ReserveFrom};
use bouquet_http::{ApiError, Ctx, KeyedRequest, Reply, Role};
use serde::Deserialize;

bouquet_http::route!(POST "/v1/orders" => handle);

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReservationBody {
    bouquet_ids: Vec<String>,
}

fn reply(order: &Order) -> Result<Reply, ApiError> {
    Reply::created(order, format!("/v1/orders/{}", order.order_id))
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let from = match ctx.has_body() {
        true => ReserveFrom::Bouquets(parse_bouquet_ids(
            &ctx.json::<ReservationBody>()?.bouquet_ids,
        )?),
        false => ReserveFrom::Cart,
    };
    let key = ctx.idempotency(reply);
    let outcome = reservation::reserve(
        &ctx.app,
        &caller.subject,
        &from,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::from_outcome(outcome, reply)
}
