use bouquet_app::checkout::CheckoutError;
use bouquet_app::domain::{DomainError, Order, OrderStatus, VendorId};
use bouquet_app::orders::{transition, Action, TransitionError};

use bouquet_app::Replayable;

use crate::support::*;

async fn act(
    world: &World,
    order: &Order,
    action: Action<'_>,
    by_owner: bool,
) -> Result<Order, TransitionError> {
    let caller = match (action, by_owner) {
        (Action::Cancel, true) => customer_caller(order.customer_id.as_str()),
        (Action::Cancel, false) => customer_caller("someone-else"),
        (_, true) => shop_caller(order.vendor_id),
        (_, false) => shop_caller(VendorId::generate()),
    };
    world
        .transition(&caller, order.order_id, action)
        .await
        .map(done)
}

/// `action` by a caller who may not see `order` finds no order, and leaves it `status`.
async fn refused_as_unseen(world: &World, order: &Order, action: Action<'_>, status: OrderStatus) {
    let result = act(world, order, action, false).await;
    assert_matches!(result, Err(TransitionError::NotFound));
    assert_eq!(world.status_of(order.order_id).await, status);
}

/// The order's own shop rejects it for `reason`, withdrawing its bouquets or not.
async fn reject(
    world: &World,
    order: &Order,
    reason: &str,
    withdraw: bool,
) -> Result<Order, TransitionError> {
    act(world, order, Action::Reject { reason, withdraw }, true).await
}

#[tokio::test]
async fn cancelling_a_reservation_makes_its_bouquets_available_again() {
    let (world, bouquet, order) = World::with_reserved_order("ana").await;
    let cancelled = act(&world, &order, Action::Cancel, true)
        .await
        .expect("cancelled");
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
    assert!(is_available(&world.bouquet_now(bouquet.bouquet_id).await));
    // Once cancelled, it cannot be cancelled again.
    let again = act(&world, &order, Action::Cancel, true).await;
    assert_matches!(
        again,
        Err(TransitionError::Checkout(CheckoutError::Domain(
            DomainError::OrderInvalidState(OrderStatus::Cancelled)
        )))
    );
}

#[tokio::test]
async fn an_order_the_caller_may_not_see_is_not_found_and_unchanged() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    refused_as_unseen(&world, &order, Action::Cancel, OrderStatus::Reserved).await;
}

#[tokio::test]
async fn the_same_key_cancels_once_and_replays_the_first_answer() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let ana = customer_caller("ana");
    let record = remembering("cancel-1", world.now());
    // The same request twice, with the same key.
    let cancel_with_the_key = || {
        let idempotency = Some(key("cancel-1", &record));
        let now = world.now();
        transition(
            &world.app,
            &ana,
            order.order_id,
            Action::Cancel,
            idempotency,
            CORRELATION,
            now,
        )
    };
    let first = cancel_with_the_key().await;
    assert_matches!(first, Ok(Replayable::Done(ref o)) if o.status == OrderStatus::Cancelled);
    let again = cancel_with_the_key().await;
    assert_matches!(again, Ok(Replayable::Replayed(ref r)) if r.body == order.order_id.to_string());
}

#[tokio::test]
async fn another_vendor_cannot_fulfil_an_order() {
    let (world, _, order) = World::with_paid_order("ana").await;
    refused_as_unseen(&world, &order, Action::Fulfil, OrderStatus::Paid).await;
}

#[tokio::test]
async fn only_a_paid_order_is_fulfilled() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let early = act(&world, &order, Action::Fulfil, true).await;
    assert_matches!(
        early,
        Err(TransitionError::Checkout(CheckoutError::Domain(
            DomainError::OrderInvalidState(OrderStatus::Reserved)
        )))
    );
    world.pay_by_card("ana", order.order_id).await;
    let fulfilled = act(&world, &order, Action::Fulfil, true)
        .await
        .expect("fulfilled");
    assert_eq!(fulfilled.status, OrderStatus::Fulfilled);
}

#[tokio::test]
async fn a_florist_accepts_dispatches_and_delivers_a_paid_order_step_by_step() {
    let (world, _, order) = World::with_paid_order("ana").await;
    let early = act(&world, &order, Action::Dispatch, true).await;
    assert!(
        matches!(
            early,
            Err(TransitionError::Checkout(CheckoutError::Domain(
                DomainError::OrderInvalidState(OrderStatus::Paid)
            )))
        ),
        "dispatch before accept: {early:?}"
    );
    let not_mine = act(&world, &order, Action::Accept, false).await;
    assert_matches!(not_mine, Err(TransitionError::NotFound));
    for (action, status) in [
        (Action::Accept, OrderStatus::Accepted),
        (Action::Dispatch, OrderStatus::OutForDelivery),
        (Action::Fulfil, OrderStatus::Fulfilled),
    ] {
        let moved = act(&world, &order, action, true).await.expect("moved");
        assert_eq!(moved.status, status);
    }
    let late = reject(&world, &order, "Too late", false).await;
    assert!(late.is_err(), "a delivered order is not rejected: {late:?}");
}

#[tokio::test]
async fn a_rejection_refunds_the_charge_once_and_puts_the_bouquets_back_on_sale() {
    let (world, bouquet, order) = World::with_paid_order("ana").await;
    let accepted = act(&world, &order, Action::Accept, true).await.unwrap();
    assert_eq!(accepted.status, OrderStatus::Accepted);
    let blank = reject(&world, &order, "  ", false).await;
    assert!(blank.is_err(), "a rejection says why: {blank:?}");
    let rejected = reject(&world, &order, "No peonies left this week", false)
        .await
        .expect("rejected");
    assert_eq!(rejected.status, OrderStatus::Rejected);
    assert!(rejected.refunded_at.is_some(), "refunded at once");
    assert_eq!(world.gateway.refunds(), vec![order.gateway_key()]);
    let again = reject(&world, &order, "Again", false).await;
    assert!(again.is_err(), "rejected once: {again:?}");
    assert_eq!(world.gateway.refunds().len(), 1, "refunded once");
    let back = world.bouquet_now(bouquet.bouquet_id).await;
    assert!(back.is_available(world.now()), "{:?}", back.status);
    // On sale again: another customer reserves it.
    world.reserved(&customer("bea"), &[&back]).await;
}

#[tokio::test]
async fn a_rejection_may_withdraw_the_bouquets_instead() {
    let (world, bouquet, order) = World::with_paid_order("ana").await;
    let rejected = reject(&world, &order, "The peonies wilted", true)
        .await
        .expect("rejected");
    assert!(rejected.bouquets_withdrawn && rejected.refunded_at.is_some());
    let gone = world.bouquet_now(bouquet.bouquet_id).await;
    assert_eq!(gone.status, bouquet_app::domain::BouquetStatus::Withdrawn);
    assert!(!gone.is_available(world.now()), "not on sale again");
}

/// A paid order written before issue 30 (no delivery details, no retention, no history keys)
/// reads with the defaults and moves on; its first change lists it by state.
#[tokio::test]
async fn an_order_in_the_shape_before_delivery_details_reads_and_moves_on() {
    let (world, _, order) = World::with_paid_order("ana").await;
    world
        .dynamodb
        .update_item()
        .table_name(&world.table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("ORDER#{}", order.order_id)))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("ORDER".into()))
        .update_expression(
            "REMOVE delivery, personalDataDays, redactedAt, vendorStatusKey, vendorStatusSort, rejectionReason, refundedAt",
        )
        .send()
        .await
        .expect("the item in the old shape");
    let old = world.order_now(order.order_id).await;
    assert_eq!((old.delivery.as_ref(), old.personal_data_days), (None, 30));
    assert_eq!(old.status, OrderStatus::Paid);
    let by_state = |status: &'static str| {
        let app = world.app.clone();
        let caller = shop_caller(order.vendor_id);
        async move {
            bouquet_app::queries::orders(
                &app,
                &caller,
                &bouquet_app::queries::OrderFilter::parse(Some(status), None, None).unwrap(),
                None,
                10,
            )
            .await
            .unwrap()
            .items
            .len()
        }
    };
    assert_eq!(
        by_state("paid").await,
        0,
        "not in the history until it changes"
    );
    let accepted = act(&world, &old, Action::Accept, true)
        .await
        .expect("accepted");
    assert_eq!(accepted.status, OrderStatus::Accepted);
    assert_eq!(by_state("accepted").await, 1);
    let delivered = act(&world, &accepted, Action::Fulfil, true)
        .await
        .expect("delivered");
    assert_eq!(delivered.due_at(), None, "no details: nothing to redact");
}
