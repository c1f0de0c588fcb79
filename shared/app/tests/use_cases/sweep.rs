use std::time::Duration;

use bouquet_app::domain::OrderStatus;
use bouquet_app::expiry::{sweep, SweepReport};
use bouquet_app::payment::PayError;
use bouquet_app::Config;

use crate::support::*;

fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(20)
}

#[tokio::test]
async fn a_lapsed_reservation_expires_and_frees_its_bouquets() {
    let (world, bouquet, order) = World::with_reserved_order("ana").await;
    let early = sweep(&world.app, CORRELATION, deadline())
        .await
        .expect("swept");
    assert_eq!(early.expired, 0, "{early:?}");
    world.advance(Config::default().hold + Duration::from_secs(1));
    let report = sweep(&world.app, CORRELATION, deadline())
        .await
        .expect("swept");
    assert_eq!((report.expired, report.failed), (1, 0), "{report:?}");
    assert_eq!(world.status_of(order.order_id).await, OrderStatus::Expired);
    assert!(is_available(&world.bouquet_now(bouquet.bouquet_id).await));
    // A second run finds nothing to do.
    let again = sweep(&world.app, CORRELATION, deadline())
        .await
        .expect("swept");
    assert_eq!(again.expired, 0, "{again:?}");
}

/// A payment with `token` that the gateway left without a definite answer, nobody retrying,
/// swept without a failure once the hold has passed: the order then, in a world of its own.
async fn interrupted_and_swept(token: &str) -> (bouquet_app::domain::Order, World, SweepReport) {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let result = world.pay("ana", order.order_id, token).await;
    assert_matches!(result, Err(PayError::GatewayUnavailable(_)));
    world.advance(Config::default().hold + Duration::from_secs(61));
    let report = sweep(&world.app, CORRELATION, deadline())
        .await
        .expect("swept");
    assert_eq!(report.failed, 0, "{report:?}");
    (world.order_now(order.order_id).await, world, report)
}

#[tokio::test]
async fn a_payment_interrupted_after_the_charge_is_completed_by_the_sweep() {
    // The gateway charged, then timed out: the sweep asks it and finds the charge.
    let (order, world, report) = interrupted_and_swept("tok_timeout").await;
    assert_eq!(report.payments_completed, 1, "{report:?}");
    assert_eq!(order.status, OrderStatus::Paid);
    assert_eq!(world.gateway.charges_made(), 1);
}

#[tokio::test]
async fn a_payment_interrupted_before_any_charge_is_released_by_the_sweep() {
    let (order, world, report) = interrupted_and_swept("tok_unavailable").await;
    assert_eq!(report.payments_released, 1, "{report:?}");
    assert_eq!(order.status, OrderStatus::Expired);
    for id in order.bouquet_ids() {
        assert!(is_available(&world.bouquet_now(id).await));
    }
    assert_eq!(world.gateway.charges_made(), 0);
}
