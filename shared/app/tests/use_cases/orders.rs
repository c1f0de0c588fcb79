use bouquet_app::checkout::CheckoutError;
use bouquet_app::domain::{DomainError, Order, OrderStatus};
use bouquet_app::orders::{transition, Action, TransitionError};

use crate::support::*;

async fn act(
    world: &World,
    order: &Order,
    action: Action,
    by_owner: bool,
) -> Result<Order, TransitionError> {
    let owner = order.customer_id.clone();
    let vendor = order.vendor_id;
    let visible = move |o: &Order| {
        by_owner
            && match action {
                Action::Cancel => o.customer_id == owner,
                Action::Fulfil => o.vendor_id == vendor,
            }
    };
    transition(
        &world.app.store,
        order.order_id,
        visible,
        action,
        &|_| None,
        CORRELATION,
        world.now(),
    )
    .await
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
    bouquet_app::payment::pay(
        &world.app,
        &customer("ana"),
        order.order_id,
        "tok_visa",
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("paid");
    let fulfilled = act(&world, &order, Action::Fulfil, true)
        .await
        .expect("fulfilled");
    assert_eq!(fulfilled.status, OrderStatus::Fulfilled);
}
