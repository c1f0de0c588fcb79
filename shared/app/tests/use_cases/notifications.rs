use std::time::Duration;

use serde_json::{json, Value};

use bouquet_app::delivery;
use bouquet_app::domain::delivery::DeliverySettings;
use bouquet_app::domain::Order;
use bouquet_app::mail::{MailError, MemoryMailer};
use bouquet_app::notifications::{notify, Notified, NotifyError};
use bouquet_app::orders::Action;

use crate::support::*;

/// The EventBridge event the bus delivers for `name` of `order`, from its outbox item.
async fn bus_event(world: &World, name: &str, order: &Order) -> Value {
    let (_, detail) = world
        .events()
        .await
        .into_iter()
        .rev()
        .find(|(n, detail)| n == name && detail.contains(&order.order_id.to_string()))
        .unwrap_or_else(|| panic!("no {name} of {}", order.order_id));
    json!({ "detail-type": name, "source": "bouquet.marketplace", "detail": serde_json::from_str::<Value>(&detail).unwrap() })
}

/// What the notifier does with the bus's event `name` of `order`, mailing with `mailer`.
async fn notified_of(
    world: &World,
    mailer: &MemoryMailer,
    name: &str,
    order: &Order,
) -> Result<Notified, NotifyError> {
    let event = bus_event(world, name, order).await;
    notify(&world.app, mailer, "Bouquet", &event).await
}

/// A notifier's count: mails sent, mails sent before (redelivered), recipients without an
/// address.
fn notified(sent: usize, duplicates: usize, no_address: usize) -> Notified {
    Notified {
        sent,
        duplicates,
        no_address,
    }
}

async fn shop_with_contact(world: &World) -> bouquet_app::domain::Vendor {
    let vendor = world.vendor().await;
    let mut settings = DeliverySettings::unset();
    settings.countries = vec!["FR".into()];
    settings.contact_email = Some(verified_email("florist"));
    world.first_settings(&vendor, settings).await;
    vendor
}

#[tokio::test]
async fn a_shops_contact_address_is_one_its_member_verified() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let save = |caller: bouquet_app::domain::identity::Identity, address: &str| {
        let mut settings = DeliverySettings::unset();
        settings.countries = vec!["FR".into()];
        settings.contact_email = Some(address.into());
        let world = &world;
        async move {
            delivery::change_settings(
                &world.app,
                &caller,
                vendor.vendor_id,
                settings,
                None,
                CORRELATION,
                world.now(),
            )
            .await
        }
    };
    for (caller, address, why) in [
        (
            vendor_caller(&vendor),
            "orders@elsewhere.example",
            "another address",
        ),
        (
            bouquet_app::domain::identity::Identity {
                email: None,
                ..vendor_caller(&vendor)
            },
            "florist@example.com",
            "a member without a verified address",
        ),
    ] {
        match save(caller, address).await {
            Err(delivery::DeliveryError::Invalid(errors)) => {
                assert_eq!(errors.len(), 1, "{why}: {errors:?}");
                assert_eq!(errors[0].field, "contactEmail", "{why}");
            }
            other => panic!("{why}: expected a field error, got {other:?}"),
        }
    }
    let saved = save(vendor_caller(&vendor), "Florist@EXAMPLE.com")
        .await
        .expect("the member's own address");
    assert_eq!(
        saved.settings.contact_email.as_deref(),
        Some("florist@example.com"),
        "kept as verified"
    );
}

#[tokio::test]
async fn a_paid_order_mails_the_customer_and_the_shop_once_and_each_step_the_customer() {
    let world = World::new().await;
    let vendor = shop_with_contact(&world).await;
    let bouquet = world.bouquet_of(&vendor).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    world.pay_by_card("ana", order.order_id).await;
    let mailer = MemoryMailer::default();
    let paid = bus_event(&world, "OrderPaid", &order).await;
    let first = notify(&world.app, &mailer, "Bouquet", &paid).await.unwrap();
    assert_eq!(first, notified(2, 0, 0));
    let again = notify(&world.app, &mailer, "Bouquet", &paid).await.unwrap();
    assert_eq!(again, notified(0, 2, 0), "redelivered: nothing twice");
    let sent = mailer.sent();
    let to: Vec<&str> = sent.iter().map(|e| e.to.as_str()).collect();
    assert_eq!(to, ["ana@example.com", "florist@example.com"]);
    assert!(sent[0].subject.contains("is paid"), "{}", sent[0].subject);
    assert!(
        sent[1].text.contains("Camille Martin") && sent[1].text.contains("+33612345678"),
        "the florist learns where and to whom"
    );
    assert!(sent[0].html.starts_with("<!doctype html>"));

    world
        .transition(&vendor_caller(&vendor), order.order_id, Action::Accept)
        .await
        .unwrap();
    let accepted = bus_event(&world, "OrderAccepted", &order).await;
    assert_eq!(
        notify(&world.app, &mailer, "Bouquet", &accepted)
            .await
            .unwrap()
            .sent,
        1
    );
    assert_eq!(mailer.sent().len(), 3);
    // Events no email is for: nothing, not an error.
    let reserved = bus_event(&world, "OrderReserved", &order).await;
    assert_eq!(
        notify(&world.app, &mailer, "Bouquet", &reserved)
            .await
            .unwrap(),
        Notified::default()
    );
}

#[tokio::test]
async fn a_refused_address_fails_its_event_only_and_a_redacted_one_is_not_written_to() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let mailer = MemoryMailer::refusing(&["bounce@example.com"]);
    let mut orders = Vec::new();
    for who in ["bounce", "cy"] {
        let bouquet = world.bouquet_of(&vendor).await;
        let order = world.reserved(&customer(who), &[&bouquet]).await;
        world.pay_by_card(who, order.order_id).await;
        orders.push(order);
    }
    let refused = notified_of(&world, &mailer, "OrderPaid", &orders[0]).await;
    assert_matches!(refused, Err(NotifyError::Mail(MailError::Rejected(_))));
    let other = notified_of(&world, &mailer, "OrderPaid", &orders[1])
        .await
        .unwrap();
    assert_eq!(other, notified(1, 0, 1), "the shop has no contact address");
    assert_eq!(mailer.sent().len(), 1);

    // Delivered, then redacted: the customer's address is gone, and nothing is sent to it.
    world
        .transition(&vendor_caller(&vendor), orders[1].order_id, Action::Fulfil)
        .await
        .unwrap();
    world.advance(Duration::from_secs(31 * 86_400));
    bouquet_app::expiry::sweep(
        &world.app,
        CORRELATION,
        tokio::time::Instant::now() + Duration::from_secs(20),
    )
    .await
    .unwrap();
    let late = notified_of(&world, &mailer, "OrderFulfilled", &orders[1])
        .await
        .unwrap();
    assert_eq!(late, notified(0, 0, 1));
}

/// Issue 53: a care alert mails the shop once, with what the vase read; a redelivery sends
/// nothing twice; a shop without a contact address gets nothing.
#[tokio::test]
async fn a_care_alert_mails_the_shop_once() {
    use bouquet_app::domain::{Reading, VaseMessage};
    let world = World::new().await;
    let vendor = shop_with_contact(&world).await;
    let vase = world.vase_of(&vendor).await;
    let dry = VaseMessage::Telemetry {
        vase_id: vase.vase_id,
        reading: Reading {
            sent_at: world.now(),
            water_level_pct: 12.0,
            temperature_c: 19.5,
            humidity_pct: 60.0,
            light_lux: 800.0,
        },
        received_at: world.now(),
    };
    bouquet_app::vases::apply(&world.app, &dry, CORRELATION)
        .await
        .unwrap();
    let (_, detail) = world
        .events()
        .await
        .into_iter()
        .find(|(n, _)| n == "VaseAlertOpened")
        .expect("an alert opened");
    let event = json!({ "detail-type": "VaseAlertOpened", "source": "bouquet.marketplace", "detail": serde_json::from_str::<Value>(&detail).unwrap() });
    let mailer = MemoryMailer::default();
    assert_eq!(
        notify(&world.app, &mailer, "Bouquet", &event)
            .await
            .unwrap(),
        notified(1, 0, 0)
    );
    assert_eq!(
        notify(&world.app, &mailer, "Bouquet", &event)
            .await
            .unwrap(),
        notified(0, 1, 0),
        "redelivered: nothing twice"
    );
    let sent = mailer.sent();
    assert_eq!(sent[0].to, "florist@example.com");
    assert!(
        sent[0].subject.starts_with("The water is low at "),
        "{}",
        sent[0].subject
    );
    assert!(
        sent[0].text.contains("It read water 12.0 %, 19.5 °C"),
        "{}",
        sent[0].text
    );
    assert!(sent[0].text.contains(&vase.vase_id.to_string()));
    // A shop without a contact address: nobody to tell.
    let quiet = world.vendor().await;
    let mut other = event.clone();
    other["detail"]["data"]["vendorId"] = json!(quiet.vendor_id.to_string());
    other["detail"]["eventId"] = json!("another-event");
    assert_eq!(
        notify(&world.app, &mailer, "Bouquet", &other)
            .await
            .unwrap(),
        notified(0, 0, 1)
    );
}
