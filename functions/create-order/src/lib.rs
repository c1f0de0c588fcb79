//! `POST /v1/orders`: a customer reserves bouquets for the hold duration, either
//! `{bouquetIds}` or, without a body, the cart (which the same transaction empties).
//!
//! DynamoDB calls: one consistent `BatchGetItem` (the bouquets, or the cart, and the
//! idempotency record), for the cart a second one for its bouquets, then one
//! `TransactWriteItems` that reserves every bouquet under a condition, puts the order, its
//! `OrderReserved` event and the idempotency record (and deletes the cart at the version
//! read). A replay is answered from the first read: one call.

use bouquet_app::domain::events::DomainEvent;
use bouquet_app::domain::order::parse_bouquet_ids;
use bouquet_app::domain::{Bouquet, BouquetId, DomainError, Order};
use bouquet_app::metrics;
use bouquet_app::store::retry::Retry;
use bouquet_app::store::{Reservation, StoreError, Target};
use bouquet_app::App;
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::{run, ApiError, Ctx, Reply, Role, Route};
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

/// Counts each attempt that reached the bouquets: won (held) or lost (one was taken).
async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let result = reserve(ctx).await;
    match &result {
        Ok(reply) if reply.replay.is_none() => metrics::count(metrics::RESERVATIONS, "won", 1),
        Err(ApiError::BouquetUnavailable(_)) => metrics::count(metrics::RESERVATIONS, "lost", 1),
        _ => {}
    }
    result
}

async fn reserve(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let requested = match ctx.has_body() {
        true => Some(parse_bouquet_ids(
            &ctx.json::<ReservationBody>()?.bouquet_ids,
        )?),
        false => None,
    };
    let store = &ctx.app.store;
    let mut retry = Retry::optimistic();
    while retry.next().await {
        // Which bouquets, and (from the cart) which cart version to delete.
        let (bouquet_ids, cart, read) = match &requested {
            Some(ids) => (
                ids.clone(),
                None,
                store
                    .read_for_reservation(ids, ctx.idempotency_key_hash(), ctx.now)
                    .await?,
            ),
            None => {
                let (cart, record) = store
                    .read_cart_for_reservation(&caller.subject, ctx.idempotency_key_hash(), ctx.now)
                    .await?;
                if let Some(record) = record {
                    return Ok(Reply::replay(record));
                }
                if cart.bouquet_ids.is_empty() {
                    return Err(DomainError::CartEmpty.into());
                }
                let ids: Vec<BouquetId> = cart.bouquet_ids.iter().copied().collect();
                let read = store.read_for_reservation(&ids, None, ctx.now).await?;
                (ids, Some(cart), read)
            }
        };
        if let Some(record) = read.idempotency {
            return Ok(Reply::replay(record));
        }
        let missing: Vec<BouquetId> = bouquet_ids
            .iter()
            .zip(&read.bouquets)
            .filter(|(_, b)| b.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !missing.is_empty() {
            return Err(ApiError::BouquetUnavailable(missing));
        }
        let bouquets: Vec<Bouquet> = read.bouquets.into_iter().flatten().collect();
        let order = Order::reserve(
            caller.subject.clone(),
            &bouquets,
            ctx.app.config.hold,
            ctx.now,
        )?;
        let mut held = bouquets;
        for bouquet in &mut held {
            bouquet.reserve(order.order_id, order.reserved_until, ctx.now)?;
        }
        let data = order
            .lifecycle_event()
            .ok_or_else(|| ApiError::Internal("a new order announces OrderReserved".into()))?;
        let event = DomainEvent::new(
            order.order_id,
            order.version,
            ctx.now,
            &ctx.correlation_id,
            data,
        );
        let reply = Reply::created(&order, format!("/v1/orders/{}", order.order_id))?;
        let record = ctx.idempotency_record(&reply);
        let reservation = Reservation {
            order: &order,
            bouquets: &held,
            event: &event,
            idempotency: record.as_ref(),
            cart: cart.as_ref(),
            max_holds: ctx.app.config.max_holds_per_customer,
        };
        match store.reserve(&reservation, ctx.now).await {
            Ok(()) => return Ok(reply),
            Err(StoreError::ConditionFailed(conflicts)) => {
                // Name exactly the bouquets that were taken, from the cancellation reasons.
                let mut taken = Vec::new();
                for conflict in conflicts {
                    match conflict.target {
                        Target::Bouquet(id) => match conflict.bouquet() {
                            Some(current) if current.is_available(ctx.now) => {}
                            _ => taken.push(id),
                        },
                        // The cart changed since it was read: read it again.
                        Target::Cart => {}
                        Target::Holds => {
                            return Err(ApiError::ReservationLimit(
                                ctx.app.config.max_holds_per_customer,
                            ))
                        }
                        other => {
                            return Err(ApiError::Internal(format!(
                                "reservation refused on {other:?}"
                            )))
                        }
                    }
                }
                if !taken.is_empty() {
                    return Err(ApiError::BouquetUnavailable(taken));
                }
            }
            Err(StoreError::IdempotencyReplay(record)) => return Ok(Reply::replay(*record)),
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
