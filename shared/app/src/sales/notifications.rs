//! Order emails (issue 30), run by an EventBridge consumer of `OrderPaid`, `OrderAccepted`,
//! `OrderOutForDelivery`, `OrderFulfilled`, `OrderDeliveryPhotoAttached` and `OrderRejected`
//! (the rule is in the template), and the shop's care emails (issue 53): one per
//! `VaseAlertOpened` and per `BouquetPastItsBest`.
//! The customer gets a receipt and a message at each step (at the contact address given with
//! the delivery details); the shop gets each new paid order (at its settings' contact address).
//!
//! Events carry no personal data, so the order is read for the details. Each message is
//! deduped by (event, recipient role): recorded after it is sent, checked before, so a
//! redelivered event sends nothing twice and a crash between send and record may send one
//! message twice, never none. A refused message fails the event, which Lambda retries and
//! then parks whole in the failure destination; other events are not held up.

use serde_json::Value;

use bouquet_domain::delivery::{Delivery, REDACTED};
use bouquet_domain::{Order, OrderId};
use bouquet_mail::{render, Email, MailError, Mailer, RenderError, Template, Vars};
use bouquet_store::StoreError;

use crate::App;

/// The dedupe scope of this consumer.
pub const CONSUMER: &str = "order-emails";

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The event lacks what is read: it can never apply.
    #[error("unreadable event: {0}")]
    Unreadable(String),
    #[error(transparent)]
    Mail(#[from] MailError),
    /// A template names a value the order lacks: retrying fails alike.
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one event sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notified {
    pub sent: usize,
    /// Sent before (a redelivery).
    pub duplicates: usize,
    /// No address to send to (none given, or redacted since).
    pub no_address: usize,
}

/// Who gets what for an event: `(role, template)`.
fn messages(name: &str) -> &'static [(&'static str, Template)] {
    match name {
        "VaseAlertOpened" | "BouquetPastItsBest" => &[("shop", Template::CareAlert)],
        "OrderPaid" => &[
            ("customer", Template::Receipt),
            ("shop", Template::NewOrder),
        ],
        "OrderAccepted" => &[("customer", Template::Accepted)],
        "OrderOutForDelivery" => &[("customer", Template::OutForDelivery)],
        "OrderFulfilled" => &[("customer", Template::Delivered)],
        "OrderDeliveryPhotoAttached" => &[("customer", Template::DeliveryPhoto)],
        "OrderRejected" => &[("customer", Template::Rejected)],
        _ => &[],
    }
}

/// What a care event tells the shop (issue 53): the alert's condition, or the bouquet past its
/// best; `None` for every other event.
fn care_notice(name: &str, data: &Value) -> Option<String> {
    match name {
        "VaseAlertOpened" => {
            let condition = data["condition"].as_str().unwrap_or_default();
            let what = bouquet_domain::care::Condition::parse(condition)
                .map_or("a care alert", |c| c.describe());
            let mut what = what.to_owned();
            if let Some(first) = what.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            Some(what)
        }
        "BouquetPastItsBest" => Some(format!(
            "A bouquet is past its best (freshness {}) and left the storefront",
            data["freshness"]
        )),
        _ => None,
    }
}

/// Sends the shop its care email for one event, once (deduped like the order emails).
async fn tell_the_shop(
    app: &App,
    mailer: &dyn Mailer,
    marketplace: &str,
    event_id: &str,
    data: &Value,
    what: String,
) -> Result<Notified, NotifyError> {
    let mut notified = Notified::default();
    let vendor_id = bouquet_domain::VendorId::parse(data["vendorId"].as_str().unwrap_or_default())
        .map_err(|e| NotifyError::Unreadable(format!("vendorId: {e}")))?;
    let (shop, settings) = tokio::join!(
        app.store.vendor_name(vendor_id),
        app.store.delivery_settings(vendor_id, false)
    );
    let shop = shop?.unwrap_or_else(|| "your shop".into());
    let Some(to) = settings?.and_then(|s| s.settings.contact_email) else {
        notified.no_address += 1;
        return Ok(notified);
    };
    let key = format!("{event_id}#shop");
    if app.store.was_processed(CONSUMER, &key).await? {
        notified.duplicates += 1;
        return Ok(notified);
    }
    let reading = &data["reading"];
    let reading = if reading.is_object() {
        format!(
            "It read water {} %, {} °C, humidity {} %, {} lux.",
            reading["waterLevelPct"],
            reading["temperatureC"],
            reading["humidityPct"],
            reading["lightLux"]
        )
    } else {
        String::new()
    };
    let vars = Vars::from([
        ("marketplace", marketplace.to_owned()),
        ("shop", shop),
        (
            "vase",
            data["vaseId"].as_str().unwrap_or_default().to_owned(),
        ),
        ("what", what),
        ("reading", reading),
    ]);
    mailer
        .send(&render(Template::CareAlert, &to, &vars)?)
        .await?;
    app.store
        .commit_once(CONSUMER, &key, bouquet_store::Tx::new(), app.clock.now())
        .await?;
    notified.sent += 1;
    Ok(notified)
}

/// Net, VAT and gross per line, for delivery and in total, one per line of text; orders priced
/// before issue 41 show their total alone.
fn vat_lines(order: &Order) -> String {
    let Some(receipt) = &order.receipt else {
        return format!(
            "{} {} (VAT included)",
            order.total.amount(),
            order.total.currency()
        );
    };
    let currency = order.total.currency();
    let line = |what: &str, rate: Option<u16>, a: &bouquet_domain::pricing::Amounts| {
        let rate = rate
            .map(|bps| format!(" at {}", crate::invoice::vat_rate(bps)))
            .unwrap_or_default();
        format!(
            "{what}: net {} + VAT {}{rate} = {} {currency}",
            a.net.amount(),
            a.vat.amount(),
            a.gross.amount()
        )
    };
    receipt
        .lines
        .iter()
        .chain([&receipt.delivery])
        .map(|l| line(&l.description, Some(l.vat_basis_points), &l.amounts))
        .chain([line("Total", None, &receipt.total)])
        .collect::<Vec<_>>()
        .join("\n")
}

fn vars(
    marketplace: &str,
    shop: &str,
    order: &Order,
    delivery: Option<&Delivery>,
    data: &Value,
) -> Vars {
    let mut vars = Vars::from([
        ("marketplace", marketplace.to_owned()),
        ("shop", shop.to_owned()),
        ("order", order.order_id.to_string()),
        (
            "bouquets",
            order
                .lines
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "total",
            format!("{} {}", order.total.amount(), order.total.currency().code()),
        ),
        ("reason", order.rejection_reason.clone().unwrap_or_default()),
        ("vat", vat_lines(order)),
        // The proof of delivery is private: the email says where it is, never a (short-lived)
        // signed link to it. A photo attached later is its own email.
        (
            "photo",
            if order.delivery_photo.is_some() {
                format!("{shop} took a photo at the door: sign in and open the order to see it.")
            } else {
                String::new()
            },
        ),
        (
            "invoice",
            order
                .invoice_number
                .map(|n| crate::invoice::invoice_label(shop, n))
                .unwrap_or_else(|| "(none yet)".into()),
        ),
        (
            "refund",
            format!(
                "{} {}",
                data["refund"]["amount"].as_str().unwrap_or_default(),
                data["refund"]["currency"].as_str().unwrap_or_default()
            ),
        ),
    ]);
    if let Some(d) = delivery {
        let slot = d
            .slot
            .map(|s| {
                format!(
                    " ({})",
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default();
        vars.extend([
            ("recipient", d.recipient_name.clone()),
            ("phone", d.recipient_phone.clone()),
            (
                "address",
                format!(
                    "{}, {} {}, {}",
                    d.address.street, d.address.postcode, d.address.city, d.address.country
                ),
            ),
            ("date", format!("{}{slot}", d.date)),
            (
                "card",
                d.card_message.clone().unwrap_or_else(|| "(none)".into()),
            ),
        ]);
    }
    vars
}

/// Sends the emails one EventBridge event calls for (none for other events).
pub async fn notify(
    app: &App,
    mailer: &dyn Mailer,
    marketplace: &str,
    event: &Value,
) -> Result<Notified, NotifyError> {
    let unreadable = |what: &str| NotifyError::Unreadable(what.to_owned());
    let name = event["detail-type"]
        .as_str()
        .ok_or_else(|| unreadable("event without detail-type"))?;
    let wanted = messages(name);
    let mut notified = Notified::default();
    if wanted.is_empty() {
        return Ok(notified);
    }
    let detail = &event["detail"];
    let event_id = detail["eventId"]
        .as_str()
        .ok_or_else(|| unreadable("event without detail.eventId"))?;
    if let Some(what) = care_notice(name, &detail["data"]) {
        return tell_the_shop(app, mailer, marketplace, event_id, &detail["data"], what).await;
    }
    let order_id = OrderId::parse(detail["data"]["orderId"].as_str().unwrap_or_default())
        .map_err(|e| NotifyError::Unreadable(format!("orderId: {e}")))?;
    let order = app
        .store
        .order(order_id)
        .await?
        .ok_or_else(|| unreadable("no such order"))?;
    let (shop, settings) = tokio::join!(
        app.store.vendor_name(order.vendor_id),
        app.store.delivery_settings(order.vendor_id, false)
    );
    let shop = shop?.unwrap_or_else(|| "Your florist".into());
    let shop_address = settings?.and_then(|s| s.settings.contact_email);
    let delivery = order.delivery.as_ref();
    for (role, template) in wanted {
        let to = match *role {
            "customer" => delivery.and_then(|d| d.contact_email.clone()),
            _ => shop_address.clone(),
        }
        .filter(|a| a != REDACTED);
        let Some(to) = to else {
            notified.no_address += 1;
            continue;
        };
        let key = format!("{event_id}#{role}");
        if app.store.was_processed(CONSUMER, &key).await? {
            notified.duplicates += 1;
            continue;
        }
        let email: Email = render(
            *template,
            &to,
            &vars(marketplace, &shop, &order, delivery, &detail["data"]),
        )?;
        mailer.send(&email).await?;
        app.store
            .commit_once(CONSUMER, &key, bouquet_store::Tx::new(), app.clock.now())
            .await?;
        notified.sent += 1;
    }
    Ok(notified)
}
