use bouquet_app::checkout::CheckoutError;
use bouquet_app::domain::{DomainError, Order, OrderStatus, VendorId};
use bouquet_app::orders::{transition, Action, TransitionError};

use bouquet_app::Replayable;

use crate::support::*;

async fn act(
    world: &World,
    order: &Order,
    action: Action,
    by_owner: bool,
) -> Result<Order, TransitionError> {
    let caller = match (action, by_owner) {
        (Action::Cancel, true) => customer_caller(order.customer_id.as_str()),
        (Action::Cancel, false) => customer_caller("someone-else"),
        (Action::Fulfil, true) => shop_caller(order.vendor_id),
        (Action::Fulfil, false) => shop_caller(VendorId::generate()),
    };
    transition(
        &world.app,
        &caller,
        order.order_id,
        action,
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .map(done)
}

#[tokio::test]
async fn cancelling_a_reservation_makes_its_bouquets_available_again() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let cancelled = act(&world, &order, Action::Cancel, true)
        .await
        .expect("cancelled");
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
    assert!(is_available(&world.bouquet_now(bouquet.bouquet_id).await));
    // Once cancelled, it cannot be cancelled again.
    let again = act(&world, &order, Action::Cancel, true).await;
    assert!(
        matches!(
            again,
            Err(TransitionError::Checkout(CheckoutError::Domain(
                DomainError::OrderInvalidState(OrderStatus::Cancelled)
            )))
        ),
        "{again:?}"
    );
}

#[tokio::test]
async fn an_order_the_caller_may_not_see_is_not_found_and_unchanged() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let result = act(&world, &order, Action::Cancel, false).await;
    assert!(
        matches!(result, Err(TransitionError::NotFound)),
        "{result:?}"
    );
    assert_eq!(
        world.order_now(order.order_id).await.status,
        OrderStatus::Reserved
    );
}

#[tokio::test]
async fn the_same_key_cancels_once_and_replays_the_first_answer() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let ana = customer_caller("ana");
    let record = remembering("cancel-1", world.now());
    let first = transition(
        &world.app,
        &ana,
        order.order_id,
        Action::Cancel,
        Some(key("cancel-1", &record)),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(first, Ok(Replayable::Done(ref o)) if o.status == OrderStatus::Cancelled),
        "{first:?}"
    );
    let again = transition(
        &world.app,
        &ana,
        order.order_id,
        Action::Cancel,
        Some(key("cancel-1", &record)),
        CORRELATION,
        world.now(),
    )
    .await;
    assert!(
        matches!(again, Ok(Replayable::Replayed(ref r)) if r.body == order.order_id.to_string()),
        "{again:?}"
    );
}

#[tokio::test]
async fn another_vendor_cannot_fulfil_an_order() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world
        .pay("ana", order.order_id, "tok_visa")
        .await
        .expect("paid");
    let result = act(&world, &order, Action::Fulfil, false).await;
    assert!(
        matches!(result, Err(TransitionError::NotFound)),
        "{result:?}"
    );
    assert_eq!(
        world.order_now(order.order_id).await.status,
        OrderStatus::Paid
    );
}

#[tokio::test]
async fn only_a_paid_order_is_fulfilled() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let early = act(&world, &order, Action::Fulfil, true).await;
    assert!(
        matches!(
            early,
            Err(TransitionError::Checkout(CheckoutError::Domain(
                DomainError::OrderInvalidState(OrderStatus::Reserved)
            )))
        ),
        "{early:?}"
    );
    world
        .pay("ana", order.order_id, "tok_visa")
        .await
        .expect("paid");
    let fulfilled = act(&world, &order, Action::Fulfil, true)
        .await
        .expect("fulfilled");
    assert_eq!(fulfilled.status, OrderStatus::Fulfilled);
}
