//! Onboarding a vendor and listing its bouquets: each one conditional write with its event
//! and idempotency record.

use crate::problem::ApiError;
use bouquet_domain::bouquet::NewBouquet;
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::{Bouquet, FieldError, Timestamp, Vendor, VendorId};
use bouquet_store::{StoreError, Target};

use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error("no such vendor")]
    UnknownVendor,
    #[error("the shop is suspended")]
    VendorSuspended,
    #[error("the listing was refused on {0:?}, which it does not write")]
    UnexpectedConflict(Target),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<Vec<FieldError>> for ListingError {
    fn from(errors: Vec<FieldError>) -> Self {
        ListingError::Invalid(errors)
    }
}

/// An administrator onboards a vendor named `name` (`VendorOnboarded`).
pub async fn onboard_vendor(
    app: &App,
    name: &str,
    key: Option<Idempotency<'_, Vendor>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Vendor>, ListingError> {
    let vendor = Vendor::onboard(name, now)?;
    let event = DomainEvent::new(
        vendor.vendor_id,
        vendor.version,
        now,
        correlation_id,
        EventData::VendorOnboarded {
            vendor_id: vendor.vendor_id,
            name: vendor.name.clone(),
        },
    );
    let record = idempotency::record(key.as_ref(), &vendor);
    match app
        .store
        .create_vendor(&vendor, &event, record.as_ref(), now)
        .await
    {
        Ok(()) => Ok(Replayable::Done(vendor)),
        Err(StoreError::IdempotencyReplay(record)) => Ok(Replayable::Replayed(*record)),
        Err(other) => Err(other.into()),
    }
}

/// `vendor_id` lists a bouquet, `available` (`BouquetListed`); the vendor must exist and own
/// the vase it names.
pub async fn list_bouquet(
    app: &App,
    vendor_id: VendorId,
    new: NewBouquet,
    key: Option<Idempotency<'_, Bouquet>>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Replayable<Bouquet>, ListingError> {
    let bouquet = Bouquet::list(vendor_id, new, now);
    let event = DomainEvent::new(
        bouquet.bouquet_id,
        bouquet.version,
        now,
        correlation_id,
        EventData::BouquetListed {
            bouquet_id: bouquet.bouquet_id,
            vendor_id,
            name: bouquet.name.clone(),
            price: bouquet.price,
            vase_id: bouquet.vase_id,
        },
    );
    let record = idempotency::record(key.as_ref(), &bouquet);
    match app
        .store
        .create_bouquet(&bouquet, &event, record.as_ref(), now)
        .await
    {
        Ok(()) => Ok(Replayable::Done(bouquet)),
        Err(StoreError::ConditionFailed(conflicts)) => {
            let conflict = conflicts.into_iter().next();
            // The shop's item came back with the failed check: it exists, so it is suspended.
            let vendor_found = conflict.as_ref().is_some_and(|c| c.item.is_some());
            let target = conflict.map(|c| c.target).unwrap_or(Target::Event);
            Err(match target {
                Target::Vendor(_) if vendor_found => ListingError::VendorSuspended,
                Target::Vendor(_) => ListingError::UnknownVendor,
                Target::Vase(_) => ListingError::Invalid(vec![FieldError::new(
                    "vaseId",
                    "is not a vase of this vendor",
                )]),
                other => ListingError::UnexpectedConflict(other),
            })
        }
        Err(StoreError::IdempotencyReplay(record)) => Ok(Replayable::Replayed(*record)),
        Err(other) => Err(other.into()),
    }
}

impl From<ListingError> for ApiError {
    fn from(error: ListingError) -> Self {
        match error {
            ListingError::Invalid(errors) => ApiError::Invalid(errors),
            ListingError::UnknownVendor => ApiError::NotFound("vendor"),
            ListingError::VendorSuspended => crate::shops::suspended(),
            ListingError::Store(error) => error.into(),
            error @ ListingError::UnexpectedConflict(_) => ApiError::internal(error),
        }
    }
}
