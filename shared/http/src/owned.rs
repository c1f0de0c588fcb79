//! Order routes under an idempotency key: an order's transition by a caller who may see it
//! (cancel, accept, dispatch, fulfil, reject), and the keys of the routes whose answer is an
//! order with its delivery details (payment, delivery details).
//!
//! An idempotency record lives 24 hours beside the order; erasure and redaction change the
//! order only. So a record keeps the order without its personal fields
//! ([`Order::without_personal_data`]), and a replay answers the status stored with the order
//! read again, as the caller may see it now: a replay never brings back a detail the customer
//! replaced or had erased.

use serde_json::Value;

use bouquet_app::orders::Action;
use bouquet_app::{queries, Replayable};
use bouquet_domain::{Order, OrderId};
use bouquet_store::IdempotencyRecord;
use lambda_http::http::StatusCode;

use crate::ctx::{Ctx, KeyedRequest};
use crate::problem::ApiError;
use crate::Reply;

/// `action` on `order_id` by the request's caller ([`bouquet_app::orders::transition`]): the
/// order it leads to, or the first answer to a retried request.
pub async fn order_transition(
    ctx: &Ctx,
    order_id: OrderId,
    action: Action<'_>,
) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let key = order_idempotency(ctx, |order: &Order| Reply::ok(order));
    let outcome = bouquet_app::orders::transition(
        &ctx.app,
        caller,
        order_id,
        action,
        key.as_ref().map(KeyedRequest::key),
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    order_reply(ctx, outcome, Reply::ok).await
}

/// [`Ctx::idempotency`] for a route that answers an order: `render` makes the answer, and the
/// record keeps what it makes of the order without its personal fields.
pub fn order_idempotency<'c>(
    ctx: &'c Ctx,
    render: impl Fn(&Order) -> Result<Reply, ApiError> + Send + Sync + 'c,
) -> Option<KeyedRequest<'c, Order>> {
    ctx.idempotency(move |order: &Order| render(&order.without_personal_data()))
}

/// A use case's outcome on an order route: rendered by `render` when this request did the
/// work; a replay is the stored status with the order as the caller may see it now.
pub async fn order_reply<T>(
    ctx: &Ctx,
    outcome: Replayable<T>,
    render: impl FnOnce(&T) -> Result<Reply, ApiError>,
) -> Result<Reply, ApiError> {
    match outcome {
        Replayable::Done(value) => render(&value),
        Replayable::Replayed(record) => replay_order(ctx, record).await,
    }
}

async fn replay_order(ctx: &Ctx, record: IdempotencyRecord) -> Result<Reply, ApiError> {
    let stored: Value = serde_json::from_str(&record.body).unwrap_or(Value::Null);
    let order_id = stored
        .get("orderId")
        .and_then(Value::as_str)
        .and_then(|id| OrderId::parse(id).ok());
    let Some(order_id) = order_id else {
        // Not an order (an empty 500): nothing personal to read again.
        return Ok(Reply::replay(record));
    };
    let order = queries::order(&ctx.app, ctx.caller()?, order_id).await?;
    let mut body = serde_json::to_value(order.as_seen_at(ctx.now)).map_err(ApiError::internal)?;
    // What the first answer said beside the order (3-D Secure's next step) holds no
    // personal data.
    if let Some(next_action) = stored.get("nextAction") {
        body["nextAction"] = next_action.clone();
    }
    Ok(Reply {
        status: StatusCode::from_u16(record.status).unwrap_or(StatusCode::OK),
        body: Some(body),
        headers: Vec::new(),
        replay: Some(Box::new(record)),
        document: None,
    })
}
