//! The marketplace's money on an order: the commission's split, fixed at the first payment
//! attempt and kept through a decline and a retry.

use bouquet_app::domain::commission::CommissionRate;
use bouquet_app::domain::OrderStatus;
use bouquet_app::payment::{Paid, PayError};
use bouquet_app::{Config, Replayable};

use crate::support::*;

fn rate(basis_points: i64) -> CommissionRate {
    CommissionRate::from_basis_points(basis_points).unwrap()
}

#[tokio::test]
async fn a_paid_order_records_its_gross_fee_and_net_by_the_rounding_rule() {
    let world = World::with_config(Config {
        commission: rate(1_250),
        ..Config::default()
    })
    .await;
    let vendor = world.vendor().await;
    // 12.5 % of 24.50 is 3.0625: a fee of 3.06, 21.44 to the shop.
    let bouquet = world.listed(&vendor, "24.50", None).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    assert_eq!(order.settlement, None, "nothing is split before a payment");

    let declined = world.pay("ana", order.order_id, "tok_decline").await;
    assert!(
        matches!(declined, Err(PayError::Declined { .. })),
        "{declined:?}"
    );
    let after_decline = world.order_now(order.order_id).await;
    assert_eq!(after_decline.status, OrderStatus::Reserved);
    let split = after_decline
        .settlement
        .expect("the attempt fixed the split");
    assert_eq!(
        (
            split.gross().minor(),
            split.fee().minor(),
            split.net().minor()
        ),
        (2450, 306, 2144)
    );

    let Ok(Replayable::Done(Paid::Paid(paid))) = world.pay("ana", order.order_id, "tok_visa").await
    else {
        panic!("paid")
    };
    assert_eq!(
        paid.settlement,
        Some(split),
        "the second attempt charges the same split"
    );
    assert_eq!(
        world.order_now(order.order_id).await.settlement,
        Some(split)
    );
    assert_eq!(split, rate(1_250).settle(paid.total));
}
