use bouquet_app::checkout::{settle, CheckoutError, Settled, Settlement};
use bouquet_app::domain::{Order, OrderId, OrderStatus};
use bouquet_app::payment::Paid;
use bouquet_app::payments::{ChargeOutcome, ChargeRequest, PaymentGateway};
use bouquet_app::store::IdempotencyPut;
use bouquet_app::Replayable;

use crate::support::*;

/// A new world with an order waiting for 3-D Secure.
async fn authenticating() -> (World, Order) {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let result = world.pay("ana", order.order_id, "tok_3ds").await;
    let Ok(Replayable::Done(Paid::Authenticate { order, .. })) = result else {
        panic!("{result:?}")
    };
    (world, order)
}

fn event(id: &str, world: &World) -> IdempotencyPut {
    IdempotencyPut::new(
        format!("stripe-event#{id}"),
        id.to_owned(),
        200,
        "{}".into(),
        None,
        world.now(),
    )
}

async fn deliver(
    world: &World,
    order_id: OrderId,
    settlement: &Settlement,
    event_id: &str,
) -> Result<Settled, CheckoutError> {
    settle(
        &world.app,
        order_id,
        settlement,
        &event(event_id, world),
        CORRELATION,
        world.now(),
    )
    .await
}

/// [`deliver`], which must settle the event one way or another.
async fn settled(
    world: &World,
    order_id: OrderId,
    settlement: &Settlement,
    event_id: &str,
) -> Settled {
    deliver(world, order_id, settlement, event_id)
        .await
        .unwrap_or_else(|error| panic!("{event_id} not settled: {error:?}"))
}

/// The PSP's success of `order`'s current attempt, as its charge `charge_id`.
fn success_of(order: &Order, charge_id: String) -> Settlement {
    Settlement::Succeeded {
        charge_id,
        attempt_key: order.gateway_key(),
    }
}

#[tokio::test]
async fn a_success_pays_once_however_often_it_is_delivered() {
    let (world, order) = authenticating().await;
    let success = success_of(&order, "pi_1".into());
    assert_eq!(
        settled(&world, order.order_id, &success, "evt_1").await,
        Settled::Paid
    );
    let paid = world.order_now(order.order_id).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    // The same event again, and a second event about the same charge: nothing moves.
    assert_eq!(
        settled(&world, order.order_id, &success, "evt_1").await,
        Settled::AlreadySettled
    );
    assert_eq!(
        settled(&world, order.order_id, &success, "evt_2").await,
        Settled::AlreadySettled
    );
    assert_eq!(world.order_now(order.order_id).await, paid);
    assert!(world.gateway.refunds().is_empty());
}

#[tokio::test]
async fn a_failure_releases_the_attempt() {
    let (world, order) = authenticating().await;
    let failure = Settlement::Failed {
        attempt_key: order.gateway_key(),
    };
    assert_eq!(
        settled(&world, order.order_id, &failure, "evt_f").await,
        Settled::Released
    );
    assert_eq!(
        world.order_now(order.order_id).await.status,
        OrderStatus::Reserved
    );
}

#[tokio::test]
async fn money_for_an_attempt_that_no_longer_stands_is_refunded() {
    let (world, order) = authenticating().await;
    let success = success_of(&order, "pi_1".into());
    settled(&world, order.order_id, &success, "evt_1").await;
    // A late success for an attempt that is not the order's (another attempt paid it), whose
    // money the PSP took: it goes back.
    let stale_key = format!("{}-7", order.order_id);
    assert_ne!(stale_key, order.gateway_key());
    let taken = world
        .gateway
        .charge(ChargeRequest {
            idempotency_key: stale_key.clone(),
            order_id: order.order_id.to_string(),
            amount_minor: order.total.minor(),
            currency: "EUR".into(),
            payment_token: "tok_visa".into(),
            transfer: None,
        })
        .await;
    assert!(
        matches!(taken, Ok(ChargeOutcome::Approved { .. })),
        "{taken:?}"
    );
    let stale = Settlement::Succeeded {
        charge_id: "pi_old".into(),
        attempt_key: stale_key,
    };
    assert_eq!(
        settled(&world, order.order_id, &stale, "evt_old").await,
        Settled::Refunded
    );
    assert_eq!(
        world.gateway.refunds(),
        vec![format!("{}-7", order.order_id)]
    );
}

#[tokio::test]
async fn an_unknown_order_is_reported_not_settled() {
    let world = World::new().await;
    let unknown = OrderId::generate();
    let failure = Settlement::Failed {
        attempt_key: format!("{unknown}-1"),
    };
    let result = deliver(&world, unknown, &failure, "evt_x").await;
    assert!(
        matches!(result, Err(CheckoutError::UnknownOrder(id)) if id == unknown),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_success_redelivered_after_the_vendor_rejected_the_order_neither_pays_nor_refunds_again()
{
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world.pay_by_card("ana", order.order_id).await;
    // The PSP's own event of that charge, first delivered while the order was paid.
    let charge_id = world.order_now(order.order_id).await.charge_id.unwrap();
    let success = success_of(&order, charge_id);
    assert_eq!(
        settled(&world, order.order_id, &success, "evt_1").await,
        Settled::AlreadySettled
    );
    let rejected = world.rejected_by_shop(&order, "Closed today", false).await;
    assert_eq!(world.gateway.refunds().len(), 1);
    // Redelivered after the rejection, and a second event of the same charge.
    for event in ["evt_1", "evt_2"] {
        assert_eq!(
            settled(&world, order.order_id, &success, event).await,
            Settled::AlreadySettled,
            "{event}"
        );
    }
    assert_eq!(world.order_now(order.order_id).await, rejected, "unchanged");
    assert_eq!(world.gateway.refunds().len(), 1, "refunded once");
}
