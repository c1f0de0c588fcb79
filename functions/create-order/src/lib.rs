//! `POST /v1/orders`: a customer reserves bouquets for the hold duration, either
//! `{bouquetIds}` or, without a body, the cart (which the same transaction empties). The use
//! case is [`bouquet_app::reservation::reserve`].

use bouquet_app::domain::order::parse_bouquet_ids;
use bouquet_app::domain::Order;
use bouquet_app::reservation::{self, ReserveFrom};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, KeyedRequest, Reply, Role, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("POST", "/v1/orders");

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReservationBody {
    bouquet_ids: Vec<String>,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
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
