//! `POST /v1/orders` `{bouquetIds}`: a customer reserves bouquets for the hold duration.
//!
//! DynamoDB calls: one consistent `BatchGetItem` (the bouquets and the idempotency record),
//! then one `TransactWriteItems` that reserves every bouquet under a condition, puts the
//! order, its `OrderReserved` event and the idempotency record. A replay is answered from the
//! batch read (one call); a replay racing its original is answered from the transaction's
//! cancellation reason (two calls).

use bouquet_http::domain::events::{DomainEvent, EventData};
use bouquet_http::domain::order::parse_bouquet_ids;
use bouquet_http::domain::{Bouquet, BouquetId, Order};
use bouquet_http::lambda_http::{Body, Error, Request, Response};
use bouquet_http::store::{bouquet_from_conflict, StoreError, Target};
use bouquet_http::{run, ApiError, App, Ctx, Reply, Role, Route};
use serde::Deserialize;

pub const ROUTE: Route = Route::new("POST", "/v1/orders");

/// A reservation that lost only to a change that left its bouquets available (a price edit)
/// reads again; bounded.
const ATTEMPTS: usize = 3;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Reservation {
    bouquet_ids: Vec<String>,
}

pub async fn handler(app: &App, request: Request) -> Result<Response<Body>, Error> {
    run(app, request, ROUTE, handle).await
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?.require(Role::Customer)?;
    let body: Reservation = ctx.json()?;
    let bouquet_ids = parse_bouquet_ids(&body.bouquet_ids)?;
    for _ in 0..ATTEMPTS {
        let read = ctx
            .app
            .store
            .read_for_reservation(&bouquet_ids, ctx.idempotency_key_hash(), ctx.now)
            .await?;
        if let Some(record) = read.idempotency {
            return Err(ApiError::IdempotencyReplay(Box::new(record)));
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
        let event = DomainEvent::new(
            order.order_id,
            order.version,
            ctx.now,
            &ctx.correlation_id,
            EventData::OrderReserved {
                order_id: order.order_id,
                customer_id: order.customer_id.clone(),
                vendor_id: order.vendor_id,
                bouquet_ids: bouquet_ids.clone(),
                total: order.total,
                reserved_until: order.reserved_until,
            },
        );
        let reply = Reply::created(&order, format!("/v1/orders/{}", order.order_id))?;
        match ctx
            .app
            .store
            .reserve(
                &order,
                &held,
                &event,
                ctx.idempotency_record(&reply).as_ref(),
                ctx.now,
            )
            .await
        {
            Ok(()) => return Ok(reply),
            Err(StoreError::ConditionFailed(conflicts)) => {
                // Name exactly the bouquets that were taken, from the cancellation reasons.
                let mut taken = Vec::new();
                for conflict in conflicts {
                    let Target::Bouquet(id) = conflict.target else {
                        return Err(ApiError::Internal(format!(
                            "reservation refused on {:?}",
                            conflict.target
                        )));
                    };
                    match bouquet_from_conflict(conflict.current) {
                        Some(current) if current.is_available(ctx.now) => {}
                        _ => taken.push(id),
                    }
                }
                if !taken.is_empty() {
                    return Err(ApiError::BouquetUnavailable(taken));
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(ApiError::Busy)
}
