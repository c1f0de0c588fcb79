//! Proof of delivery (issue 42): the shop of an order out for delivery or delivered uploads a
//! photo of the bouquets at the door, through the same signed upload and processing as a
//! bouquet's photo ([`crate::photos`]). Its sizes stay in the private upload bucket under the
//! order; the order keeps their keys, and its readers (the customer, the shop, an
//! administrator: whoever may read the order) get signed URLs that expire in
//! [`SIGNED_FOR`]. It is personal data: redacting the order's delivery details drops it, after
//! which no URL can be signed for it.

use std::time::Duration;

use serde::Serialize;

use bouquet_domain::identity::Identity;
use bouquet_domain::photo::{ImageType, PhotoSubject, PhotoUpload};
use bouquet_domain::{Order, OrderId, Timestamp};
use bouquet_photos::{PostPolicySigner, StorageError};

use crate::idempotency::{Idempotency, Replayable};
use crate::photos::{self, PhotoError, UploadTicket};
use crate::App;

/// How long a signed URL of a delivery photo reads it.
pub const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);

/// The order's shop may upload one delivery photo of `content_type` within the upload window
/// (an `Idempotency-Key` retry gets the same upload). Anyone else gets `OrderNotFound`.
pub async fn request_upload(
    app: &App,
    signer: &PostPolicySigner,
    caller: &Identity,
    order_id: OrderId,
    content_type: ImageType,
    key: Option<Idempotency<'_, UploadTicket>>,
    now: Timestamp,
) -> Result<Replayable<UploadTicket>, PhotoError> {
    let order = crate::orders::readable(app, caller, order_id)
        .await?
        .ok_or(PhotoError::OrderNotFound)?;
    // Its customer and administrators may read the order, not photograph its delivery.
    caller.require_vendor(order.vendor_id)?;
    if !order.takes_delivery_photo() {
        return Err(PhotoError::OrderState(order.status));
    }
    let upload = PhotoUpload::new(
        PhotoSubject::Delivery(order_id),
        order.vendor_id,
        content_type,
        now,
    );
    photos::allow_upload(app, signer, upload, key, now).await
}

/// How the shop's upload `upload_id` of `order_id`'s delivery photo stands (the console asks
/// until it ends). Anyone else's, or another order's, is unknown to the caller.
pub async fn upload_status(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    upload_id: bouquet_domain::UploadId,
) -> Result<PhotoUpload, PhotoError> {
    photos::upload_of(app, caller, PhotoSubject::Delivery(order_id), upload_id).await
}

/// A delivery photo as its readers get it: the largest size through a URL signed for
/// [`SIGNED_FOR`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedPhoto {
    pub url: String,
    pub width: u32,
    pub height: u32,
    pub expires_at: Timestamp,
}

/// The order's delivery photo, signed for a reader the caller already checked; `None`
/// without one (or once redacted).
pub async fn signed_photo(
    signer: &PostPolicySigner,
    order: &Order,
    now: Timestamp,
) -> Result<Option<SignedPhoto>, StorageError> {
    let Some(largest) = order
        .delivery_photo
        .as_ref()
        .and_then(|photo| photo.variants.last())
    else {
        return Ok(None);
    };
    let url = signer.presign_get(&largest.path, now, SIGNED_FOR).await?;
    Ok(Some(SignedPhoto {
        url,
        width: largest.width,
        height: largest.height,
        expires_at: now.plus(SIGNED_FOR),
    }))
}
