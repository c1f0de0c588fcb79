//! Issue 53: prices that follow freshness and care alerts, driven by the vase's readings as
//! the queue's consumer applies them.

use std::time::Duration;

use bouquet_app::care::{self, CareError, RulesChange};
use bouquet_app::domain::bouquet::BouquetChange;
use bouquet_app::domain::care::{CareThresholds, Condition};
use bouquet_app::domain::markdown::{MarkdownRule, MarkdownStep};
use bouquet_app::domain::vase::DEFAULT_OFFLINE_AFTER;
use bouquet_app::domain::{BouquetStatus, Money, Reading, VaseId, VaseMessage};
use bouquet_app::vases::{self, Applied};

use crate::support::*;

const MINUTE: Duration = Duration::from_secs(60);

fn eur(amount: &str) -> Money {
    Money::parse_price(amount, "EUR").unwrap()
}

/// 10 % off below 80, 25 % below 60, never under half, withdrawn below 30.
fn rule() -> MarkdownRule {
    MarkdownRule {
        enabled: true,
        ..MarkdownRule::default()
    }
}

async fn set_rules(world: &World, vendor: &bouquet_app::domain::Vendor, markdown: MarkdownRule) {
    care::change_rules(
        &world.app,
        &vendor_caller(vendor),
        vendor.vendor_id,
        RulesChange {
            markdown,
            care: CareThresholds::default(),
        },
        None,
        CORRELATION,
        world.now(),
    )
    .await
    .expect("rules saved");
}

/// A reading sent `at_minute` minutes after the world's start, received now.
fn reading(
    world: &World,
    vase_id: VaseId,
    at_minute: u32,
    water: f64,
    temperature: f64,
) -> VaseMessage {
    VaseMessage::Telemetry {
        vase_id,
        reading: Reading {
            sent_at: T0.plus(MINUTE * at_minute),
            water_level_pct: water,
            temperature_c: temperature,
            humidity_pct: 60.0,
            light_lux: 500.0,
        },
        received_at: world.now(),
    }
}

/// The first page of `vendor`'s alerts, as its member reads them.
async fn alerts_of(
    world: &World,
    vendor: &bouquet_app::domain::Vendor,
) -> bouquet_app::store::Page<bouquet_app::domain::care::VaseAlert> {
    care::alerts(
        &world.app,
        &vendor_caller(vendor),
        vendor.vendor_id,
        None,
        20,
    )
    .await
    .expect("alerts")
}

/// A shop with the markdown rule on, and a bouquet at 40.00 in its vase.
async fn marked_down_shop() -> (
    World,
    bouquet_app::domain::Vendor,
    bouquet_app::domain::Vase,
    bouquet_app::domain::Bouquet,
) {
    let world = World::new().await;
    let vendor = world.vendor().await;
    set_rules(&world, &vendor, rule()).await;
    let vase = world.vase_of(&vendor).await;
    let bouquet = world.listed(&vendor, "40.00", Some(vase.vase_id)).await;
    (world, vendor, vase, bouquet)
}

async fn apply(world: &World, message: &VaseMessage) -> Applied {
    vases::apply(&world.app, message, CORRELATION)
        .await
        .expect("applied")
}

#[tokio::test]
async fn freshness_marks_a_bouquet_down_step_by_step_never_up_and_withdraws_it_past_its_best() {
    let (world, vendor, vase, bouquet) = marked_down_shop().await;
    let id = bouquet.bouquet_id;

    // Just cut, full vase: 100, the list price.
    apply(&world, &reading(&world, vase.vase_id, 1, 80.0, 18.0)).await;
    assert_eq!(world.bouquet_now(id).await.price, eur("40.00"));
    // Water at 10 %: 78, below 80: 10 % off.
    world.advance(MINUTE * 2);
    apply(&world, &reading(&world, vase.vase_id, 3, 10.0, 18.0)).await;
    let marked = world.bouquet_now(id).await;
    assert_eq!(
        (marked.price, marked.list_price),
        (eur("36.00"), eur("40.00"))
    );
    assert_eq!(marked.markdown.map(|s| s.below), Some(80));
    // A late reading of a full vase, then the same reading again: nothing moves.
    assert_eq!(
        apply(&world, &reading(&world, vase.vase_id, 2, 90.0, 18.0)).await,
        Applied::HistoryReading
    );
    assert_eq!(
        apply(&world, &reading(&world, vase.vase_id, 3, 10.0, 18.0)).await,
        Applied::DuplicateReading
    );
    assert_eq!(world.bouquet_now(id).await.price, eur("36.00"));
    // Dry and hot: 54, below 60: 25 % off.
    apply(&world, &reading(&world, vase.vase_id, 4, 0.0, 30.0)).await;
    assert_eq!(world.bouquet_now(id).await.price, eur("30.00"));
    // Refilled and cooled: 100 again, but the price never rises.
    apply(&world, &reading(&world, vase.vase_id, 5, 80.0, 18.0)).await;
    let after = world.bouquet_now(id).await;
    assert_eq!((after.price, after.freshness), (eur("30.00"), Some(100)));
    // A week on and dry: 20, below 30: past its best, off the storefront.
    world.advance(Duration::from_secs(7 * 24 * 3600));
    apply(
        &world,
        &reading(&world, vase.vase_id, 7 * 24 * 60 + 10, 0.0, 18.0),
    )
    .await;
    let past = world.bouquet_now(id).await;
    assert_eq!(past.status, BouquetStatus::Withdrawn);
    assert_eq!(past.price, eur("30.00"));
    assert_eq!(
        world.vase_now(vase.vase_id).await.bouquet,
        None,
        "the vase is free for the next bouquet"
    );

    let events = world.events().await;
    assert_eq!(count_named(&events, "BouquetRepriced"), 2);
    assert_eq!(count_named(&events, "BouquetPastItsBest"), 1);
    assert!(
        !world
            .catalogue_page(bouquet_app::bouquets::CatalogueScope::Shop(
                vendor.vendor_id
            ))
            .await
            .items
            .iter()
            .any(|b| b.bouquet_id == id),
        "past its best: not in the catalogue"
    );
}

#[tokio::test]
async fn a_held_order_keeps_the_price_it_was_reserved_at_and_pays_it() {
    let (world, _, vase, bouquet) = marked_down_shop().await;
    let order = world.reserved(&customer("ines"), &[&bouquet]).await;
    // Marked down while held: the bouquet's price moves, the order's does not.
    world.advance(MINUTE);
    apply(&world, &reading(&world, vase.vase_id, 1, 10.0, 18.0)).await;
    assert_eq!(
        world.bouquet_now(bouquet.bouquet_id).await.price,
        eur("36.00")
    );
    world.pay_by_card("ines", order.order_id).await;
    let paid = world.order_now(order.order_id).await;
    assert_eq!(paid.lines[0].price, eur("40.00"));
    assert_eq!(paid.lines[0].price, order.lines[0].price);
    assert_eq!(world.gateway.charges_made(), 1);
}

#[tokio::test]
async fn an_opted_out_bouquet_and_a_shop_without_the_rule_keep_their_list_price() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let other_vase = world.vase_of(&vendor).await;
    let kept = world.listed(&vendor, "40.00", Some(vase.vase_id)).await;
    let opted_out = world
        .listed(&vendor, "40.00", Some(other_vase.vase_id))
        .await;
    // The rule is off by default: a dry vase changes no price.
    apply(&world, &reading(&world, vase.vase_id, 1, 0.0, 30.0)).await;
    assert_eq!(world.bouquet_now(kept.bouquet_id).await.price, eur("40.00"));
    set_rules(&world, &vendor, rule()).await;
    let read =
        bouquet_app::bouquets::editable(&world.app, &vendor_caller(&vendor), opted_out.bouquet_id)
            .await
            .expect("editable");
    bouquet_app::bouquets::change(
        &world.app,
        read,
        Some(opted_out.version),
        BouquetChange::validate(None, None, None, Some(true), None).expect("valid"),
        CORRELATION,
        world.now(),
    )
    .await
    .expect("opted out");
    apply(&world, &reading(&world, other_vase.vase_id, 1, 0.0, 30.0)).await;
    let after = world.bouquet_now(opted_out.bouquet_id).await;
    assert_eq!((after.price, after.freshness), (eur("40.00"), Some(54)));
}

#[tokio::test]
async fn twenty_readings_at_once_mark_down_once_per_step_and_open_one_alert() {
    let (world, _, vase, bouquet) = marked_down_shop().await;
    world.advance(MINUTE * 30);
    // Twenty readings of one vase, all dry (water 10 % down to 0 %), applied side by side.
    let messages: Vec<VaseMessage> = (0..20u32)
        .map(|i| {
            reading(
                &world,
                vase.vase_id,
                i + 1,
                10.0 - f64::from(i) * 0.5,
                18.0 + f64::from(i),
            )
        })
        .collect();
    let applied = futures::future::join_all(
        messages
            .iter()
            .map(|m| vases::apply(&world.app, m, CORRELATION)),
    )
    .await;
    assert!(applied.iter().all(Result::is_ok), "{applied:?}");
    let now = world.bouquet_now(bouquet.bouquet_id).await;
    let events = world.events().await;
    let repriced = count_named(&events, "BouquetRepriced");
    assert!(
        (1..=2).contains(&repriced),
        "one event per step at most: {repriced}"
    );
    assert!(now.price.minor() >= rule().floor(eur("40.00")).minor());
    assert!(now.price.minor() < 4000);
    let open = world.vase_now(vase.vase_id).await.alerts;
    assert_eq!(
        open.iter()
            .filter(|a| a.condition == Condition::WaterLow)
            .count(),
        1,
        "{open:?}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|(name, text)| name == "VaseAlertOpened" && text.contains("water_low"))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_dry_vase_raises_one_alert_the_shop_acknowledges_once_and_a_refill_closes_it() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    // Water hovering at the threshold (25 %) for twenty minutes: one alert.
    for minute in 1..=20u32 {
        let water = if minute % 2 == 0 { 24.0 } else { 26.0 };
        apply(&world, &reading(&world, vase.vase_id, minute, water, 18.0)).await;
    }
    let page = alerts_of(&world, &vendor).await;
    assert_eq!(page.items.len(), 1, "{:?}", page.items);
    let alert = &page.items[0];
    assert_eq!(alert.condition, Condition::WaterLow);
    assert_eq!(alert.reading.map(|r| r.water_level_pct), Some(24.0));
    assert!(alert.is_open());
    // Acknowledged once; a second time is refused; another shop does not find it.
    // With a key: done once, and the same request again is its first answer.
    let record = |a: &bouquet_app::domain::care::VaseAlert| {
        bouquet_app::idempotency::IdempotencyPut::new(
            "ack-1".into(),
            "fingerprint".into(),
            200,
            a.alert_id.clone(),
            None,
            T0,
        )
    };
    let member = vendor_caller(&vendor);
    let acknowledge_with_the_key = || {
        care::acknowledge(
            &world.app,
            &member,
            vendor.vendor_id,
            &alert.alert_id,
            Some(bouquet_app::Idempotency {
                key_hash: "ack-1",
                record: &record,
            }),
            CORRELATION,
            world.now(),
        )
    };
    let acknowledged = done(acknowledge_with_the_key().await.expect("acknowledged"));
    assert_eq!(acknowledged.version, 2);
    assert_matches!(
        acknowledge_with_the_key().await,
        Ok(bouquet_app::Replayable::Replayed(ref r)) if r.body == alert.alert_id
    );
    assert_matches!(
        care::acknowledge(
            &world.app,
            &vendor_caller(&vendor),
            vendor.vendor_id,
            &alert.alert_id,
            None,
            CORRELATION,
            world.now()
        )
        .await,
        Err(CareError::AlreadyAcknowledged)
    );
    let other = world.vendor().await;
    assert_matches!(
        care::acknowledge(
            &world.app,
            &vendor_caller(&other),
            other.vendor_id,
            &alert.alert_id,
            None,
            CORRELATION,
            world.now()
        )
        .await,
        Err(CareError::NotFound("alert"))
    );
    // Refilled at minute 21: clear, but it closes only after ten clear minutes.
    apply(&world, &reading(&world, vase.vase_id, 21, 90.0, 18.0)).await;
    apply(&world, &reading(&world, vase.vase_id, 30, 90.0, 18.0)).await;
    assert_eq!(world.vase_now(vase.vase_id).await.alerts.len(), 1);
    apply(&world, &reading(&world, vase.vase_id, 31, 90.0, 18.0)).await;
    assert!(world.vase_now(vase.vase_id).await.alerts.is_empty());
    let closed = alerts_of(&world, &vendor).await.items;
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].closed_at, Some(T0.plus(MINUTE * 31)));
    assert_eq!(closed[0].version, 3, "opened, acknowledged, closed");
    let events = world.events().await;
    for name in [
        "VaseAlertOpened",
        "VaseAlertAcknowledged",
        "VaseAlertClosed",
    ] {
        assert_eq!(count_named(&events, name), 1, "{name}");
    }
}

#[tokio::test]
async fn an_offline_vase_opens_an_offline_alert_and_its_next_heartbeat_closes_it() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let vase = world.vase_of(&vendor).await;
    let beat = |world: &World| VaseMessage::Heartbeat {
        vase_id: vase.vase_id,
        sent_at: world.now(),
        received_at: world.now(),
    };
    assert_eq!(apply(&world, &beat(&world)).await, Applied::CameOnline);
    world.advance(DEFAULT_OFFLINE_AFTER + MINUTE);
    let sweep = vases::sweep_offline(&world.app, world.now(), DEFAULT_OFFLINE_AFTER, CORRELATION)
        .await
        .expect("swept");
    assert_eq!(sweep.went_offline, 1);
    let open = world.vase_now(vase.vase_id).await.alerts;
    assert_eq!(
        open.iter().map(|a| a.condition).collect::<Vec<_>>(),
        [Condition::Offline]
    );
    world.advance(MINUTE);
    assert_eq!(apply(&world, &beat(&world)).await, Applied::CameOnline);
    assert!(world.vase_now(vase.vase_id).await.alerts.is_empty());
    let alerts = alerts_of(&world, &vendor).await.items;
    assert_eq!(alerts.len(), 1);
    assert!(!alerts[0].is_open());
}

#[tokio::test]
async fn the_rules_are_validated_and_versioned() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let caller = vendor_caller(&vendor);
    let defaults = care::rules(&world.app, &caller, vendor.vendor_id)
        .await
        .expect("read");
    assert_eq!((defaults.version, defaults.markdown.enabled), (0, false));
    let bad = RulesChange {
        markdown: MarkdownRule {
            steps: vec![MarkdownStep {
                below: 80,
                off_basis_points: 9_500,
            }],
            ..rule()
        },
        care: CareThresholds {
            clear_after_minutes: 0,
            ..CareThresholds::default()
        },
    };
    match care::change_rules(
        &world.app,
        &caller,
        vendor.vendor_id,
        bad,
        None,
        CORRELATION,
        world.now(),
    )
    .await
    {
        Err(CareError::Invalid(errors)) => {
            let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
            assert_eq!(
                fields,
                ["markdown.steps[0].offBasisPoints", "care.clearAfterMinutes"]
            );
        }
        other => panic!("{other:?}"),
    }
    set_rules(&world, &vendor, rule()).await;
    // The same rules saved again, at `if_match`.
    let save_at = |if_match: Option<u64>| {
        let change = RulesChange {
            markdown: rule(),
            care: CareThresholds::default(),
        };
        care::change_rules(
            &world.app,
            &caller,
            vendor.vendor_id,
            change,
            if_match,
            CORRELATION,
            world.now(),
        )
    };
    assert_matches!(save_at(None).await, Err(CareError::VersionRequired));
    assert_matches!(save_at(Some(7)).await, Err(CareError::Changed));
    let saved = save_at(Some(1)).await.expect("saved");
    assert_eq!(saved.version, 2);
    let other = world.vendor().await;
    assert_matches!(
        care::rules(&world.app, &vendor_caller(&other), vendor.vendor_id).await,
        Err(CareError::Forbidden(_))
    );
}

#[tokio::test]
async fn a_marked_down_bouquet_sells_at_its_price_and_its_invoice_shows_the_markdown() {
    let (world, _, vase, bouquet) = marked_down_shop().await;
    world.advance(MINUTE);
    apply(&world, &reading(&world, vase.vase_id, 1, 10.0, 18.0)).await;
    let marked = world.bouquet_now(bouquet.bouquet_id).await;
    let order = world.reserved(&customer("ines"), &[&marked]).await;
    assert_eq!(order.lines[0].price, eur("36.00"));
    assert_eq!(order.lines[0].list_price, Some(eur("40.00")));
    world.pay_by_card("ines", order.order_id).await;
    let page = bouquet_app::invoice::page(
        &world.app,
        &customer_caller("ines"),
        order.order_id,
        world.now(),
    )
    .await
    .expect("the invoice");
    assert!(
        page.contains("Freshness markdown on Peonies: listed at 40.00, sold at 36.00 (-4.00)"),
        "{page}"
    );
}
