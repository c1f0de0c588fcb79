use std::time::Duration;

use bouquet_app::checkout::CheckoutError;
use bouquet_app::domain::{BouquetStatus, DomainError, OrderStatus};
use bouquet_app::payment::{pay, Paid, PayError};
use bouquet_app::{Config, Replayable};

use crate::support::*;

async fn paying(
    world: &World,
    token: &str,
) -> (
    bouquet_app::domain::Order,
    Result<Replayable<Paid>, PayError>,
) {
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let result = world.pay("ana", order.order_id, token).await;
    (order, result)
}

#[tokio::test]
async fn an_approved_charge_pays_the_order_and_sells_its_bouquets() {
    let world = World::new().await;
    let (order, result) = paying(&world, "tok_visa").await;
    let Ok(Replayable::Done(Paid::Paid(paid))) = result else {
        panic!("{result:?}")
    };
    assert_eq!(paid.status, OrderStatus::Paid);
    assert!(paid.charge_id.is_some());
    assert_eq!(world.order_now(order.order_id).await, paid);
    for id in order.bouquet_ids() {
        assert_eq!(
            world.bouquet_now(id).await.status,
            BouquetStatus::Sold {
                order_id: order.order_id
            }
        );
    }
    assert_eq!(world.gateway.charges_made(), 1);
    // Paying again answers with the paid order and charges nothing.
    let again = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(
        again,
        Ok(Replayable::Done(Paid::Paid(ref o))) if o.status == OrderStatus::Paid
    );
    assert_eq!(world.gateway.charges_made(), 1);
}

#[tokio::test]
async fn a_declined_card_puts_the_order_back_to_reserved() {
    let world = World::new().await;
    let (order, result) = paying(&world, "tok_decline").await;
    assert_matches!(result, Err(PayError::Declined { .. }));
    let now = world.order_now(order.order_id).await;
    assert_eq!(now.status, OrderStatus::Reserved);
    assert_eq!(now.reserved_until, order.reserved_until);
    // The customer tries another card: paid.
    let retried = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(retried, Ok(Replayable::Done(Paid::Paid(_))));
}

#[tokio::test]
async fn three_d_secure_leaves_the_order_pending_with_the_client_secret() {
    let world = World::new().await;
    let (order, result) = paying(&world, "tok_3ds").await;
    let Ok(Replayable::Done(Paid::Authenticate {
        order: pending,
        client_secret,
    })) = result
    else {
        panic!("{result:?}")
    };
    assert_eq!(pending.status, OrderStatus::PaymentPending);
    assert!(!client_secret.is_empty());
    assert_eq!(
        world.status_of(order.order_id).await,
        OrderStatus::PaymentPending
    );
}

#[tokio::test]
async fn a_gateway_that_times_out_after_charging_charges_once_on_retry() {
    let world = World::new().await;
    let (order, result) = paying(&world, "tok_timeout").await;
    assert_matches!(result, Err(PayError::GatewayUnavailable(_)));
    assert_eq!(
        world.status_of(order.order_id).await,
        OrderStatus::PaymentPending
    );
    // The retry repeats the attempt under the same gateway key: the first charge is found.
    let retried = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(retried, Ok(Replayable::Done(Paid::Paid(_))));
    assert_eq!(world.gateway.charges_made(), 1);
}

#[tokio::test]
async fn an_unavailable_gateway_charges_nothing_and_keeps_the_bouquets_held() {
    let world = World::new().await;
    let (order, result) = paying(&world, "tok_unavailable").await;
    assert_matches!(result, Err(PayError::GatewayUnavailable(_)));
    assert_eq!(world.gateway.charges_made(), 0);
    for id in order.bouquet_ids() {
        assert!(!is_available(&world.bouquet_now(id).await));
    }
}

#[tokio::test]
async fn another_customers_order_is_not_found() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let result = world.pay("ben", order.order_id, "tok_visa").await;
    assert_matches!(result, Err(PayError::NotFound));
    assert_eq!(world.gateway.charges_made(), 0);
}

#[tokio::test]
async fn a_lapsed_hold_is_not_charged() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    world.advance(Config::default().hold + Duration::from_secs(1));
    let result = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(
        result,
        Err(PayError::Checkout(CheckoutError::Domain(
            DomainError::ReservationExpired
        )))
    );
    assert_eq!(world.gateway.charges_made(), 0);
}

#[tokio::test]
async fn a_malformed_token_is_invalid_and_charges_nothing_but_only_for_the_orders_customer() {
    let world = World::new().await;
    let order = world
        .reserved(&customer("ana"), &[&world.bouquet().await])
        .await;
    let result = world.pay("ana", order.order_id, "visa").await;
    assert_matches!(
        result,
        Err(PayError::Checkout(CheckoutError::Domain(DomainError::Invalid(ref e))))
            if e[0].field == "paymentToken"
    );
    // Another customer learns nothing of the order, whatever the body held: not found.
    for token in [Some("visa"), None] {
        let theirs = pay(
            &world.app,
            &customer("ben"),
            order.order_id,
            token,
            None,
            CORRELATION,
            world.now(),
        )
        .await;
        assert_matches!(theirs, Err(PayError::NotFound));
    }
    assert_eq!(world.gateway.charges_made(), 0);
}

#[tokio::test]
async fn the_same_key_pays_once_and_replays_the_first_answer() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let record = remembering("pay-1", world.now());
    let ana = customer("ana");
    // The same request twice, with the same key.
    let pay_with_the_key = || {
        let idempotency = Some(key("pay-1", &record));
        pay(
            &world.app,
            &ana,
            order.order_id,
            Some("tok_visa"),
            idempotency,
            CORRELATION,
            world.now(),
        )
    };
    let first = pay_with_the_key().await;
    assert_matches!(first, Ok(Replayable::Done(Paid::Paid(_))));
    let again = pay_with_the_key().await;
    assert_matches!(again, Ok(Replayable::Replayed(ref r)) if r.body == order.order_id.to_string());
    assert_eq!(world.gateway.charges_made(), 1);
}

#[tokio::test]
async fn concurrent_payments_of_one_order_charge_once() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let results = futures::future::join_all((0..8).map(|_| {
        let (app, now) = (world.app.clone(), world.now());
        async move {
            pay(
                &app,
                &customer("ana"),
                order.order_id,
                Some("tok_visa"),
                None,
                CORRELATION,
                now,
            )
            .await
        }
    }))
    .await;
    let paid = results
        .iter()
        .filter(|r| matches!(r, Ok(Replayable::Done(Paid::Paid(_)))))
        .count();
    let in_progress = results
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(PayError::Checkout(CheckoutError::Domain(
                    DomainError::PaymentInProgress
                )))
            )
        })
        .count();
    assert!(paid >= 1 && paid + in_progress == 8, "{results:?}");
    assert_eq!(world.gateway.charges_made(), 1);
    assert_eq!(world.status_of(order.order_id).await, OrderStatus::Paid);
}

/// Card testing (docs/contract.md, "Abuse limits"): the order's declines lock it until their window
/// ends (no card is tried meanwhile, a good one neither), then it is payable again.
#[tokio::test]
async fn declines_past_the_bound_lock_the_order_until_the_window_ends_and_charge_nothing() {
    let (world, _, order) = World::with_reserved_order("ana").await;
    let per_order = Config::default().declines_per_order;
    for attempt in 1..=per_order {
        let declined = world.pay("ana", order.order_id, "tok_decline").await;
        assert!(
            matches!(declined, Err(PayError::Declined { .. })),
            "attempt {attempt}: {declined:?}"
        );
    }
    for token in ["tok_decline", "tok_visa"] {
        let refused = world.pay("ana", order.order_id, token).await;
        let Err(PayError::AttemptsExceeded(reached)) = refused else {
            panic!("{token}: {refused:?}")
        };
        assert!((1..=600).contains(&reached.retry_after_secs), "{reached:?}");
    }
    let locked = world.order_now(order.order_id).await;
    assert_eq!(
        (locked.status, locked.payment_attempt),
        (OrderStatus::Reserved, per_order),
        "the refused attempts reached no gateway"
    );
    assert_eq!(world.gateway.charges_made(), 0);

    let retry_after = match world.pay("ana", order.order_id, "tok_visa").await {
        Err(PayError::AttemptsExceeded(reached)) => reached.retry_after_secs,
        other => panic!("{other:?}"),
    };
    world.advance(Duration::from_secs(retry_after));
    let paid = world.pay("ana", order.order_id, "tok_visa").await;
    assert_matches!(paid, Ok(Replayable::Done(Paid::Paid(ref o))) if o.status == OrderStatus::Paid);
    assert_eq!(world.gateway.charges_made(), 1);
}

/// A customer's declines over all its orders are bounded an hour: a new order does not reset
/// them.
#[tokio::test]
async fn a_customers_declines_over_its_orders_lock_the_customer_for_the_hour() {
    let world = World::with_config(Config {
        declines_per_customer_hour: 3,
        ..Config::default()
    })
    .await;
    let vendor = world.vendor().await;
    for _ in 0..3 {
        let bouquet = world.bouquet_of(&vendor).await;
        let order = world.reserved(&customer("mallory"), &[&bouquet]).await;
        let declined = world.pay("mallory", order.order_id, "tok_decline").await;
        assert_matches!(declined, Err(PayError::Declined { .. }));
    }
    let bouquet = world.bouquet_of(&vendor).await;
    let fresh = world.reserved(&customer("mallory"), &[&bouquet]).await;
    let refused = world.pay("mallory", fresh.order_id, "tok_visa").await;
    assert_matches!(refused, Err(PayError::AttemptsExceeded(r)) if r.retry_after_secs <= 3600);
    // Another customer is not touched.
    let other = world.bouquet_of(&vendor).await;
    let theirs = world.reserved(&customer("ana"), &[&other]).await;
    assert!(world.pay("ana", theirs.order_id, "tok_visa").await.is_ok());
    assert_eq!(world.gateway.charges_made(), 1);
}
