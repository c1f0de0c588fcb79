//! Delivery (issue 30): a vendor's delivery settings and the customer's delivery details on an
//! order (checked against those settings, required before payment, changeable until the
//! vendor accepts). The customer's erasure of their personal data is [`crate::erasure`].
//!
//! DynamoDB calls: the settings are one `GetItem`; giving the details is a consistent
//! `BatchGetItem` of the order and the key, one `GetItem` of its vendor's settings and one
//! `TransactWriteItems` (the order at the version read, `OrderDeliveryChanged`, the
//! idempotency record).

use crate::problem::ApiError;
use bouquet_domain::delivery::{DeliveryRequest, DeliverySettings};
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::{DomainError, FieldError, Order, OrderId, Timestamp, VendorId};
use bouquet_store::{StoreError, VersionedSettings};

use crate::checkout::{self, CheckoutError};
use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error("the caller may not do this")]
    Forbidden(#[from] NotAllowed),
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    /// A change of something that exists needs the version the caller saw.
    #[error("this change needs the version it was made to")]
    VersionRequired,
    #[error("it has changed since that version")]
    Changed,
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Checkout(CheckoutError),
}

impl From<CheckoutError> for DeliveryError {
    fn from(error: CheckoutError) -> Self {
        match error {
            CheckoutError::Changed => DeliveryError::Changed,
            other => DeliveryError::Checkout(other),
        }
    }
}

/// Who reads a shop's delivery settings: anyone (the checkout), or the shop itself (its
/// console).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsReader {
    Public,
    Shop,
}

/// The one view of a shop's delivery settings, for the routes that read and write them:
/// `{vendorId, version, firstDate, ...settings}`; `firstDate` is the first day the shop takes a
/// delivery for at `now`. The shop's contact address is its own (docs/contract.md, "Abuse
/// limits"): the public view says only whether one is set (`contactEmailSet`).
pub fn settings_view(
    vendor_id: VendorId,
    saved: &VersionedSettings,
    reader: SettingsReader,
    now: Timestamp,
) -> Result<serde_json::Value, serde_json::Error> {
    let mut body = serde_json::to_value(&saved.settings)?;
    body["contactEmailSet"] = serde_json::json!(saved.settings.contact_email.is_some());
    if reader == SettingsReader::Public {
        if let Some(fields) = body.as_object_mut() {
            fields.remove("contactEmail");
        }
    }
    body["vendorId"] = serde_json::json!(vendor_id);
    body["version"] = serde_json::json!(saved.version);
    body["firstDate"] = serde_json::json!(saved.settings.first_date(now));
    Ok(body)
}

/// A vendor's delivery settings: what it saved, or (version 0) what a shop that never set
/// them takes ([`DeliverySettings::unset`]).
pub async fn settings(app: &App, vendor_id: VendorId) -> Result<VersionedSettings, DeliveryError> {
    let (settings, exists) = tokio::join!(
        app.store.delivery_settings(vendor_id, false),
        app.store.vendor_exists(vendor_id)
    );
    if !exists? {
        return Err(DeliveryError::NotFound("vendor"));
    }
    Ok(settings?.unwrap_or(VersionedSettings {
        settings: DeliverySettings::unset(),
        version: 0,
    }))
}

/// The settings a shop known to exist delivers by: its own, or the defaults (one `GetItem`).
pub async fn shop_settings(app: &App, vendor_id: VendorId) -> Result<DeliverySettings, StoreError> {
    Ok(app
        .store
        .delivery_settings(vendor_id, false)
        .await?
        .map(|saved| saved.settings)
        .unwrap_or_else(DeliverySettings::unset))
}

/// Its vendor saves `settings` (validated here). Once saved, a change needs `if_match` (the
/// version it was made to); the first save takes none or `0`.
pub async fn change_settings(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    settings: DeliverySettings,
    if_match: Option<u64>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<VersionedSettings, DeliveryError> {
    caller.require_vendor(vendor_id)?;
    let current = app.store.delivery_settings(vendor_id, true).await?;
    // The contact address is not in the public view, so a console may not have it to send
    // back: left out, the saved one is kept; an empty one removes it. A new one must be the
    // saving member's verified address: the shop's mail goes to nobody else.
    let mut settings = settings;
    let mut not_theirs = None;
    settings.contact_email = match settings.contact_email.take() {
        None => current
            .as_ref()
            .and_then(|c| c.settings.contact_email.clone()),
        Some(address) if address.trim().is_empty() => None,
        Some(address) => match caller.own_address(&address) {
            Ok(verified) => Some(verified),
            Err(message) => {
                not_theirs = Some(FieldError::new("contactEmail", message));
                None
            }
        },
    };
    let settings = match (settings.validate(), not_theirs) {
        (Ok(settings), None) => settings,
        (Ok(_), Some(error)) => return Err(DeliveryError::Invalid(vec![error])),
        (Err(mut errors), error) => {
            errors.extend(error);
            return Err(DeliveryError::Invalid(errors));
        }
    };
    let read_version = current.as_ref().map_or(0, |c| c.version);
    let before = current
        .as_ref()
        .map_or_else(DeliverySettings::unset, |c| c.settings.clone());
    match if_match {
        None if read_version > 0 => return Err(DeliveryError::VersionRequired),
        Some(expected) if expected != read_version => return Err(DeliveryError::Changed),
        _ => {}
    }
    let saved = VersionedSettings {
        settings,
        version: read_version + 1,
    };
    let event = DomainEvent::new(
        vendor_id,
        saved.version,
        now,
        correlation_id,
        EventData::DeliverySettingsChanged {
            vendor_id,
            version: saved.version,
        },
    );
    match app
        .store
        .save_delivery_settings(vendor_id, &saved, &before, read_version, &event, now)
        .await
    {
        Ok(()) => Ok(saved),
        Err(StoreError::ConditionFailed(_)) => Err(DeliveryError::Changed),
        Err(other) => Err(other.into()),
    }
}

/// The customer of `order_id` gives or changes its delivery details at the order's version
/// `if_match` (required): checked against the vendor's settings at `now`, each problem a
/// field error; refused once the vendor has accepted (`order.invalid_state`). Another's
/// order is `NotFound`.
#[allow(clippy::too_many_arguments)]
pub async fn set_order_delivery(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    request: &DeliveryRequest,
    if_match: Option<u64>,
    key: Option<Idempotency<'_, Order>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Order>, DeliveryError> {
    let store = &app.store;
    let key_hash = key.as_ref().map(|k| k.key_hash);
    let (order, record) = store.read_order_for_change(order_id, key_hash, now).await?;
    if let Some(record) = record {
        return Ok(Replayable::Replayed(record));
    }
    let order = order
        .filter(|o| o.customer_id == caller.subject)
        .ok_or(DeliveryError::NotFound("order"))?;
    let if_match = if_match.ok_or(DeliveryError::VersionRequired)?;
    if if_match != order.version {
        return Err(DeliveryError::Changed);
    }
    // The order names its shop: it exists, only its settings are read.
    let settings = shop_settings(app, order.vendor_id).await?;
    let delivery = settings
        .check(request, caller, now)
        .map_err(DeliveryError::Invalid)?;
    let pricing = settings.price(&delivery, order.total.currency(), now);
    let mut changed = order.clone();
    changed.set_delivery(delivery, pricing, now)?;
    let record = idempotency::record(key.as_ref(), &changed);
    let event = changed.delivery_event();
    checkout::write_with_event(
        store,
        &order,
        &changed,
        &[],
        event,
        correlation_id,
        record.as_ref(),
        now,
    )
    .await?;
    Ok(Replayable::Done(changed))
}

impl From<DeliveryError> for ApiError {
    fn from(error: DeliveryError) -> Self {
        match error {
            DeliveryError::NotFound(what) => ApiError::NotFound(what),
            DeliveryError::Forbidden(_) => ApiError::forbidden(),
            DeliveryError::Invalid(errors) => ApiError::Invalid(errors),
            DeliveryError::VersionRequired => ApiError::PreconditionRequired,
            DeliveryError::Changed => {
                ApiError::PreconditionFailed("it has changed since that version; fetch it again")
            }
            DeliveryError::Domain(error) => error.into(),
            DeliveryError::Store(error) => error.into(),
            DeliveryError::Checkout(error) => error.into(),
        }
    }
}
