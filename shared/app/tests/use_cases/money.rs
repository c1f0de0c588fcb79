//! The marketplace's money: the commission's split, fixed at the first payment attempt and
//! kept through a decline and a retry; a shop's payout account, which its bouquets need
//! before they can be reserved and each payment goes to.

use std::time::Duration;

use bouquet_app::domain::commission::CommissionRate;
use bouquet_app::domain::vendor::AccountReport;
use bouquet_app::domain::OrderStatus;
use bouquet_app::payment::{Paid, PayError};
use bouquet_app::payments::OnboardingLinks;
use bouquet_app::payouts::{record_report, start_onboarding, Onboarding, Reported};
use bouquet_app::reservation::{reserve, ReserveError, ReserveFrom};
use bouquet_app::shops::{set_commission, ShopError};
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

async fn reserving(
    world: &World,
    bouquet: &bouquet_app::domain::Bouquet,
) -> Result<(), ReserveError> {
    reserve(
        &world.app,
        &customer("ana"),
        &ReserveFrom::Bouquets(vec![bouquet.bouquet_id]),
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .map(|_| ())
}

fn links() -> OnboardingLinks {
    OnboardingLinks {
        return_url: "http://127.0.0.1:4000/#/shop".into(),
        refresh_url: "http://127.0.0.1:4000/#/shop".into(),
    }
}

/// `shop`'s own member starts (or resumes) its payout onboarding, now.
async fn start_onboarding_of(world: &World, shop: &bouquet_app::domain::Vendor) -> Onboarding {
    start_onboarding(
        &world.app,
        &vendor_caller(shop),
        shop.vendor_id,
        &links(),
        CORRELATION,
        world.now(),
    )
    .await
    .unwrap()
}

/// `caller` sets `shop`'s own commission (`None`: the marketplace's), now.
async fn set_commission_of(
    world: &World,
    caller: &bouquet_app::domain::identity::Identity,
    shop: &bouquet_app::domain::Vendor,
    commission: Option<CommissionRate>,
) -> Result<bouquet_app::domain::Vendor, ShopError> {
    set_commission(
        &world.app,
        caller,
        shop.vendor_id,
        commission,
        CORRELATION,
        world.now(),
    )
    .await
}

/// The `VendorPayoutsChanged` events written so far number `expected` (`why`).
async fn assert_payout_changes(world: &World, expected: usize, why: &str) {
    let events = world.events().await;
    assert_eq!(
        count_named(&events, "VendorPayoutsChanged"),
        expected,
        "{why}: {events:?}"
    );
}

#[tokio::test]
async fn a_shop_is_reservable_once_its_account_takes_charges_and_is_paid_through_it() {
    let world = World::new().await;
    let shop = world.vendor_without_payouts().await;
    let bouquet = world.listed(&shop, "30.00", None).await;
    let refused = reserving(&world, &bouquet).await;
    assert!(
        matches!(refused, Err(ReserveError::PayoutsNotReady)),
        "{refused:?}"
    );
    assert!(
        is_available(&world.bouquet_now(bouquet.bouquet_id).await),
        "nothing held"
    );

    let onboarding = start_onboarding_of(&world, &shop).await;
    assert!(
        onboarding
            .url
            .starts_with("http://127.0.0.1:4000/local/connect/acct_sim_"),
        "{}",
        onboarding.url
    );
    let again = start_onboarding_of(&world, &shop).await;
    assert_eq!(
        again.account_id, onboarding.account_id,
        "one account per shop"
    );
    let opened = reserving(&world, &bouquet).await;
    assert!(
        matches!(opened, Err(ReserveError::PayoutsNotReady)),
        "onboarding not finished: {opened:?}"
    );

    assert_eq!(
        world
            .report_account(&shop, &onboarding.account_id, true)
            .await,
        Reported::Changed
    );
    assert_eq!(
        world
            .report_account(&shop, &onboarding.account_id, true)
            .await,
        Reported::Confirmed,
        "a repeated report changes nothing a reader sees"
    );
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let Ok(Replayable::Done(Paid::Paid(paid))) = world.pay("ana", order.order_id, "tok_visa").await
    else {
        panic!("paid")
    };
    assert_eq!(
        paid.payout_account.as_deref(),
        Some(onboarding.account_id.as_str())
    );
    // 15 % by default: 4.50 to the marketplace, 25.50 to the shop.
    let split = paid.settlement.unwrap();
    assert_eq!((split.fee().minor(), split.net().minor()), (450, 2550));
    assert_payout_changes(&world, 2, "opened, then enabled").await;
}

#[tokio::test]
async fn an_account_disabled_after_the_reservation_charges_nothing_and_keeps_the_hold() {
    let world = World::new().await;
    let shop = world.vendor().await;
    let account = shop.payout_account.clone().unwrap().account_id;
    let bouquet = world.listed(&shop, "30.00", None).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world.advance(Duration::from_secs(1));
    assert_eq!(
        world.report_account(&shop, &account, false).await,
        Reported::Changed
    );

    let refused = world.pay("ana", order.order_id, "tok_visa").await;
    assert!(
        matches!(refused, Err(PayError::PayoutsNotReady)),
        "{refused:?}"
    );
    assert_eq!(world.gateway.charges_made(), 0, "nothing charged");
    let held = world.order_now(order.order_id).await;
    assert_eq!(
        (held.status, held.reserved_until),
        (OrderStatus::Reserved, order.reserved_until)
    );
    assert!(
        !is_available(&world.bouquet_now(bouquet.bouquet_id).await),
        "still held"
    );

    // Enabled again: the same order pays.
    world.advance(Duration::from_secs(1));
    world.report_account(&shop, &account, true).await;
    let paid = world.pay("ana", order.order_id, "tok_visa").await;
    assert!(
        matches!(paid, Ok(Replayable::Done(Paid::Paid(_)))),
        "{paid:?}"
    );
}

#[tokio::test]
async fn a_late_older_report_of_an_account_changes_nothing() {
    let world = World::new().await;
    let shop = world.vendor().await;
    let account = shop.payout_account.clone().unwrap().account_id;
    let before = world.now();
    world.advance(Duration::from_secs(10));
    world.report_account(&shop, &account, false).await;
    let stale = AccountReport {
        account_id: account.clone(),
        charges_enabled: true,
        payouts_enabled: true,
        reported_at: before.plus(Duration::from_secs(5)),
    };
    assert_eq!(
        record_report(&world.app, shop.vendor_id, &stale, CORRELATION, world.now())
            .await
            .unwrap(),
        Reported::Ignored
    );
    let now = world
        .app
        .store
        .vendor(shop.vendor_id, true)
        .await
        .unwrap()
        .unwrap();
    assert!(now.payee().is_err(), "the newer report (disabled) stands");
    let other = AccountReport {
        account_id: "acct_someone_else".into(),
        reported_at: world.now(),
        ..stale
    };
    assert_eq!(
        record_report(&world.app, shop.vendor_id, &other, CORRELATION, world.now())
            .await
            .unwrap(),
        Reported::Ignored,
        "another shop's account"
    );
}

#[tokio::test]
async fn twenty_members_onboarding_at_once_open_one_account() {
    let world = World::new().await;
    let shop = world.vendor_without_payouts().await;
    let caller = vendor_caller(&shop);
    let links = links();
    let started = futures::future::join_all((0..20).map(|_| {
        start_onboarding(
            &world.app,
            &caller,
            shop.vendor_id,
            &links,
            CORRELATION,
            world.now(),
        )
    }))
    .await;
    let accounts: std::collections::BTreeSet<String> = started
        .into_iter()
        .map(|s| s.expect("every member gets a link").account_id)
        .collect();
    assert_eq!(accounts.len(), 1, "{accounts:?}");
    assert_payout_changes(&world, 1, "opened once").await;
}

#[tokio::test]
async fn a_shops_own_commission_splits_its_next_orders_and_keeps_its_history() {
    let world = World::new().await;
    let shop = world.vendor().await;
    let refused = set_commission_of(&world, &vendor_caller(&shop), &shop, Some(rate(1_000))).await;
    assert!(
        matches!(refused, Err(ShopError::Forbidden(_))),
        "{refused:?}"
    );

    let first = world.listed(&shop, "20.00", None).await;
    let claimed_before = world.reserved(&customer("ana"), &[&first]).await;
    let declined = world
        .pay("ana", claimed_before.order_id, "tok_decline")
        .await;
    assert!(
        matches!(declined, Err(PayError::Declined { .. })),
        "{declined:?}"
    );

    let changed = set_commission_of(&world, &admin_caller(), &shop, Some(rate(1_000)))
        .await
        .unwrap();
    assert_eq!(changed.commission, Some(rate(1_000)));
    let second = world.listed(&shop, "20.00", None).await;
    let order = world.reserved(&customer("bo"), &[&second]).await;
    let Ok(Replayable::Done(Paid::Paid(paid))) = world.pay("bo", order.order_id, "tok_visa").await
    else {
        panic!("paid")
    };
    assert_eq!(paid.settlement.unwrap().fee().minor(), 200, "10 % of 20.00");
    // The order claimed before the change keeps the split it was claimed at (15 %).
    let Ok(Replayable::Done(Paid::Paid(earlier))) =
        world.pay("ana", claimed_before.order_id, "tok_visa").await
    else {
        panic!("paid")
    };
    assert_eq!(earlier.settlement.unwrap().fee().minor(), 300);

    let back = set_commission_of(&world, &admin_caller(), &shop, None)
        .await
        .unwrap();
    assert_eq!(back.commission, None);
    let again = set_commission_of(&world, &admin_caller(), &shop, None)
        .await
        .unwrap();
    assert_eq!(again.version, back.version, "unchanged: nothing written");
    assert_eq!(
        back.commission_history
            .iter()
            .map(|c| c.basis_points)
            .collect::<Vec<_>>(),
        [Some(rate(1_000)), None]
    );
    let events = world.events().await;
    assert_eq!(
        count_named(&events, "VendorCommissionChanged"),
        2,
        "{events:?}"
    );
}

/// A shop in Paris that charges 6.00 for delivery, 4.00 inside Paris (75), 5.00 more for the
/// same day, with VAT of 5.5 % on flowers and 20 % on delivery.
async fn priced_shop(world: &World) -> bouquet_app::domain::Vendor {
    use bouquet_app::domain::delivery::DeliverySettings;
    let vendor = world.vendor().await;
    let mut settings = DeliverySettings::unset();
    settings.countries = vec!["FR".into()];
    // The world's clock stands at 16:16 UTC: same-day orders still taken.
    settings.same_day_cutoff = "18:00".into();
    settings.fees = serde_json::from_value(serde_json::json!({
        "standard": "6", "zones": [{"postcodePrefix": "75", "fee": "4.00"}], "sameDaySurcharge": "5"
    }))
    .unwrap();
    settings.vat = serde_json::from_value(serde_json::json!({
        "number": "FR 12345678901", "flowersBasisPoints": 550, "deliveryBasisPoints": 2000
    }))
    .unwrap();
    world.first_settings(&vendor, settings).await;
    vendor
}

async fn deliver_to(
    world: &World,
    order: &bouquet_app::domain::Order,
    postcode: &str,
    days_ahead: u16,
) -> Result<bouquet_app::domain::Order, bouquet_app::delivery::DeliveryError> {
    let mut request = delivery_request("ana", world.now());
    request.address.postcode = postcode.into();
    request.date =
        bouquet_app::domain::delivery::date_after(world.now(), days_ahead, "UTC").unwrap();
    bouquet_app::delivery::set_order_delivery(
        &world.app,
        &customer_caller("ana"),
        order.order_id,
        &request,
        Some(order.version),
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .map(done)
}

#[tokio::test]
async fn the_delivery_is_priced_with_the_details_and_the_payment_charges_lines_plus_delivery() {
    let world = World::new().await;
    let vendor = priced_shop(&world).await;
    let bouquet = world.listed(&vendor, "24.50", None).await;
    let order = world
        .reserved_without_delivery(&customer("ana"), &[&bouquet])
        .await;
    assert_eq!(
        order.total.amount(),
        "24.50",
        "the lines alone before the details"
    );

    let lyon = deliver_to(&world, &order, "69001", 1).await.unwrap();
    assert_eq!(lyon.pricing.as_ref().unwrap().delivery_fee.amount(), "6.00");
    assert_eq!(lyon.total.amount(), "30.50");
    // A changed address prices again at the next version: Paris, today.
    let paris = deliver_to(&world, &lyon, "75011", 0).await.unwrap();
    let pricing = paris.pricing.clone().unwrap();
    assert_eq!(
        (
            pricing.delivery_fee.amount(),
            pricing.same_day_surcharge.amount(),
            pricing.zone.as_deref()
        ),
        ("9.00".to_owned(), "5.00".to_owned(), Some("75"))
    );
    assert_eq!(paris.total.amount(), "33.50");
    assert_eq!(pricing.vat.number.as_deref(), Some("FR12345678901"));
    let receipt = paris.receipt.clone().unwrap();
    // 24.50 at 5.5 %: 23.22 + 1.28; 9.00 at 20 %: 7.50 + 1.50.
    assert_eq!(
        (
            receipt.lines[0].amounts.net.amount(),
            receipt.lines[0].amounts.vat.amount()
        ),
        ("23.22".to_owned(), "1.28".to_owned())
    );
    assert_eq!(
        (
            receipt.delivery.amounts.net.amount(),
            receipt.delivery.amounts.vat.amount()
        ),
        ("7.50".to_owned(), "1.50".to_owned())
    );
    assert_eq!(receipt.total.gross, paris.total);

    let paid = match world.pay_by_card("ana", order.order_id).await {
        Replayable::Done(Paid::Paid(order)) => order,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        paid.settlement.unwrap().gross(),
        paid.total,
        "the charge is the total"
    );
    assert_eq!(paid.invoice_number, Some(1));
    // Paid: the same fee may change its details, another zone may not.
    let same_zone = deliver_to(&world, &paid, "75020", 0).await.unwrap();
    assert_eq!(same_zone.total, paid.total);
    let elsewhere = deliver_to(&world, &same_zone, "69001", 1).await;
    assert!(
        matches!(
            elsewhere,
            Err(bouquet_app::delivery::DeliveryError::Domain(
                bouquet_app::domain::DomainError::DeliveryFeeChanged { .. }
            ))
        ),
        "{elsewhere:?}"
    );
    let page = bouquet_app::invoice::page(
        &world.app,
        &customer_caller("ana"),
        order.order_id,
        world.now(),
    )
    .await
    .unwrap();
    assert!(
        page.contains("-000001") && page.contains("FR12345678901") && page.contains("33.50"),
        "{page}"
    );
}

#[tokio::test]
async fn twenty_payments_of_one_shop_at_once_take_its_invoice_numbers_one_to_twenty() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let mut orders = Vec::new();
    for n in 0..20 {
        let bouquet = world.listed(&vendor, "10.00", None).await;
        let customer_name = format!("buyer-{n}");
        orders.push((
            customer_name.clone(),
            world.reserved(&customer(&customer_name), &[&bouquet]).await,
        ));
    }
    let payments = orders
        .iter()
        .map(|(who, order)| world.pay(who, order.order_id, "tok_visa"));
    let outcomes = futures::future::join_all(payments).await;
    let mut numbers: Vec<u64> = outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Ok(Replayable::Done(Paid::Paid(order))) => order.invoice_number.expect("numbered"),
            other => panic!("{other:?}"),
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=20).collect::<Vec<u64>>());
    let last_number = || world.app.store.last_invoice_number(vendor.vendor_id);
    assert_eq!(last_number().await.unwrap(), 20);
    // A payment repeated after it committed takes no second number.
    let (who, order) = &orders[0];
    let again = world.pay_by_card(who, order.order_id).await;
    assert!(
        matches!(again, Replayable::Done(Paid::Paid(ref o)) if o.invoice_number == world.order_now(order.order_id).await.invoice_number)
    );
    assert_eq!(last_number().await.unwrap(), 20);
}
