//! A bouquet's photo (issue 31): the vendor asks for an upload and gets a signed POST policy;
//! the browser sends the file straight to the upload bucket; S3's event (through a queue)
//! reaches [`process_upload`], which makes the sizes and shows them on the bouquet with
//! `BouquetPhotoChanged`, or records why the file was refused. The bouquet keeps its photo
//! until a later upload succeeds.

use crate::problem::ApiError;
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::photo::{
    ImageType, Photo, PhotoSubject, PhotoUpload, PhotoVariant, Refusal, UploadStatus,
    MAX_UPLOAD_BYTES,
};
use bouquet_domain::{BouquetId, DomainError, OrderId, OrderStatus, Timestamp, UploadId};
use bouquet_photos::{
    Fetched, PhotoObjects, PostPolicySigner, PresignedPost, Renderer, StorageError,
};
use bouquet_store::retry::Retry;
use bouquet_store::{PhotoShown, StoreError, Target};

use crate::bouquets::{self, BouquetError};
use crate::idempotency::{self, Idempotency, Replayable};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum PhotoError {
    /// A queued message that is no S3 event notification (or names a key that is not UTF-8
    /// once decoded): retried, then parked whole by the queue's redrive.
    #[error("not an S3 event notification: {0}")]
    NotANotification(String),
    #[error("no such bouquet")]
    NotFound,
    #[error("no such upload for this bouquet")]
    UnknownUpload,
    #[error("the bouquet is another vendor's")]
    Forbidden(#[from] NotAllowed),
    /// The upload's record is pending but its file is not in the bucket: S3 said it was
    /// created, so this is retried (and parked if it persists).
    #[error("the uploaded file {0} is not in the upload bucket")]
    FileMissing(String),
    #[error("the bouquet kept changing; retry shortly")]
    Busy,
    /// No such order, or not the caller's shop's: 404 either way.
    #[error("no such order")]
    OrderNotFound,
    /// The order is not out for delivery or delivered (or its details were redacted).
    #[error("an order {} takes no delivery photo", .0.name())]
    OrderState(OrderStatus),
    #[error(transparent)]
    Bouquet(BouquetError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<BouquetError> for PhotoError {
    fn from(error: BouquetError) -> Self {
        match error {
            BouquetError::NotFound => PhotoError::NotFound,
            BouquetError::Forbidden(not_allowed) => PhotoError::Forbidden(not_allowed),
            BouquetError::Store(error) => PhotoError::Store(error),
            other => PhotoError::Bouquet(other),
        }
    }
}

/// What the browser needs to send one file.
#[derive(Debug)]
pub struct UploadTicket {
    pub upload: PhotoUpload,
    pub post: PresignedPost,
    pub max_bytes: u64,
}

impl UploadTicket {
    /// The ticket as the upload routes answer it (201), a bouquet's or an order's alike.
    pub fn view(&self) -> serde_json::Value {
        serde_json::json!({
            "uploadId": self.upload.upload_id,
            "status": self.upload.status.name(),
            "url": self.post.url,
            "fields": self.post.fields,
            "maxBytes": self.max_bytes,
            "contentType": self.upload.content_type.mime(),
            "expiresAt": self.upload.deadline(),
        })
    }
}

/// An upload's state as the status routes answer it (the subject's id is the route's).
pub fn status_view(upload: &PhotoUpload) -> serde_json::Value {
    let mut body = serde_json::json!({
        "uploadId": upload.upload_id,
        "status": upload.status.name(),
        "requestedAt": upload.requested_at,
    });
    if let UploadStatus::Rejected { refusal } = &upload.status {
        body["refusal"] =
            serde_json::json!({"code": refusal.code(), "message": refusal.to_string()});
    }
    body
}

/// An upload route's body: `{contentType}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadRequest {
    content_type: String,
}

impl UploadRequest {
    /// The image type asked for, or the field's error.
    pub fn image_type(&self) -> Result<ImageType, ApiError> {
        ImageType::parse(&self.content_type)
            .map_err(|e| ApiError::Invalid(vec![bouquet_domain::FieldError::new("contentType", e)]))
    }
}

/// The bouquet's vendor may upload one photo of `content_type` within the upload window. A
/// request retried with its `Idempotency-Key` gets the same upload back.
pub async fn request_upload(
    app: &App,
    signer: &PostPolicySigner,
    caller: &Identity,
    bouquet_id: BouquetId,
    content_type: ImageType,
    key: Option<Idempotency<'_, UploadTicket>>,
    now: Timestamp,
) -> Result<Replayable<UploadTicket>, PhotoError> {
    let bouquet = bouquets::editable(app, caller, bouquet_id).await?;
    let upload = PhotoUpload::new(
        PhotoSubject::Bouquet(bouquet_id),
        bouquet.vendor_id,
        content_type,
        now,
    );
    allow_upload(app, signer, upload, key, now).await
}

/// Signs the upload's POST policy and records it pending (with the request's idempotency
/// record: a retry gets the same upload back).
pub(crate) async fn allow_upload(
    app: &App,
    signer: &PostPolicySigner,
    upload: PhotoUpload,
    key: Option<Idempotency<'_, UploadTicket>>,
    now: Timestamp,
) -> Result<Replayable<UploadTicket>, PhotoError> {
    let content_type = upload.content_type;
    let post = signer
        .sign(
            &upload.object_key(),
            content_type.mime(),
            MAX_UPLOAD_BYTES,
            now,
            upload.deadline(),
        )
        .await?;
    let ticket = UploadTicket {
        upload,
        post,
        max_bytes: MAX_UPLOAD_BYTES,
    };
    let record = idempotency::record(key.as_ref(), &ticket);
    match app
        .store
        .put_photo_upload(&ticket.upload, record.as_ref(), now)
        .await
    {
        Ok(()) => Ok(Replayable::Done(ticket)),
        Err(StoreError::IdempotencyReplay(record)) => Ok(Replayable::Replayed(*record)),
        Err(other) => Err(other.into()),
    }
}

/// How the vendor's upload `upload_id` of `bouquet_id` stands (the console asks until it
/// ends). Another vendor's is unknown to the caller (nothing of it is shown).
pub async fn upload_status(
    app: &App,
    caller: &Identity,
    bouquet_id: BouquetId,
    upload_id: UploadId,
) -> Result<PhotoUpload, PhotoError> {
    upload_of(app, caller, PhotoSubject::Bouquet(bouquet_id), upload_id).await
}

/// The caller's upload `upload_id` of `subject` (a bouquet's photo, or an order's delivery
/// photo); another subject's or another vendor's is unknown.
pub(crate) async fn upload_of(
    app: &App,
    caller: &Identity,
    subject: PhotoSubject,
    upload_id: UploadId,
) -> Result<PhotoUpload, PhotoError> {
    let upload = app
        .store
        .photo_upload(upload_id, false)
        .await?
        .filter(|u| u.subject == subject)
        .ok_or(PhotoError::UnknownUpload)?;
    // Upload ids are not public: another vendor's is 404, as if it did not exist.
    caller
        .require_vendor(upload.vendor_id)
        .map_err(|_| PhotoError::UnknownUpload)?;
    Ok(upload)
}

/// How one S3 event ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Processed {
    /// The bouquet shows the photo.
    Shown(Photo),
    /// The file was not taken; the bouquet keeps the photo it had.
    Rejected(Refusal),
    /// A later upload of the bouquet was shown first.
    Superseded,
    /// This upload had already ended (a redelivered event).
    Duplicate,
    /// A key no upload was allowed for (not one of ours, or its record expired).
    Unknown,
}

/// What one record of an S3 event notification came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    Processed(Processed),
    /// S3's test event, an event other than a creation, or an upload for a bouquet that is
    /// gone (nothing will ever show it).
    Ignored,
}

/// What is read of an S3 event notification: each record's event name and object key. The
/// rest (identities, request ids, sequencers) is not needed, and not every sender fills it.
#[derive(serde::Deserialize)]
struct S3Notification {
    #[serde(rename = "Records", default)]
    records: Vec<S3Record>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct S3Record {
    #[serde(default)]
    event_name: String,
    s3: S3Entity,
}

#[derive(serde::Deserialize)]
struct S3Entity {
    object: S3Object,
}

#[derive(serde::Deserialize)]
struct S3Object {
    key: String,
}

/// Processes one S3 event notification from the photo queue (`body` as S3 sent it): each
/// created object's key goes to [`process_upload`]. A failure of storage or table fails the
/// whole message; its records are safe to process again.
pub async fn receive_notification(
    app: &App,
    objects: &dyn PhotoObjects,
    renderer: &dyn Renderer,
    body: &str,
    correlation_id: &str,
) -> Result<Vec<Received>, PhotoError> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| PhotoError::NotANotification(e.to_string()))?;
    // S3 sends one when the notification is configured; it names no object.
    if value["Event"] == "s3:TestEvent" {
        return Ok(vec![Received::Ignored]);
    }
    let notification: S3Notification =
        serde_json::from_value(value).map_err(|e| PhotoError::NotANotification(e.to_string()))?;
    let mut received = Vec::with_capacity(notification.records.len());
    for record in notification.records {
        if !record.event_name.starts_with("ObjectCreated") {
            received.push(Received::Ignored);
            continue;
        }
        // Keys in S3 events are URL-encoded, spaces as `+`.
        let key = record.s3.object.key.replace('+', " ");
        let key = percent_encoding::percent_decode_str(&key)
            .decode_utf8()
            .map_err(|e| PhotoError::NotANotification(format!("key: {e}")))?;
        let now = app.clock.now();
        match process_upload(app, objects, renderer, &key, correlation_id, now).await {
            Ok(processed) => {
                if let Processed::Rejected(refusal) = &processed {
                    tracing::info!(%key, code = refusal.code(), "upload refused");
                }
                received.push(Received::Processed(processed));
            }
            Err(error @ (PhotoError::NotFound | PhotoError::Forbidden(_))) => {
                tracing::warn!(%key, %error, "upload for a bouquet that is gone");
                received.push(Received::Ignored);
            }
            Err(error) => return Err(error),
        }
    }
    Ok(received)
}

/// Processes the file S3 says arrived under `key` of the upload bucket. Safe to run twice on
/// one key, concurrently too: the sizes' keys name their content, and only one run ends the
/// upload (the others answer [`Processed::Duplicate`]). A failure of storage or table is an
/// error, for the queue to retry and then park.
pub async fn process_upload(
    app: &App,
    objects: &dyn PhotoObjects,
    renderer: &dyn Renderer,
    key: &str,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Processed, PhotoError> {
    let Some(upload_id) = PhotoUpload::id_of_key(key) else {
        tracing::warn!(
            key,
            "an object no upload was allowed for; left to the bucket's expiry"
        );
        return Ok(Processed::Unknown);
    };
    let Some(upload) = app.store.photo_upload(upload_id, true).await? else {
        tracing::warn!(key, "an upload without a record; deleted");
        objects.delete_upload(key).await?;
        return Ok(Processed::Unknown);
    };
    if !upload.is_pending() {
        objects.delete_upload(key).await?;
        return Ok(Processed::Duplicate);
    }
    let rendered = match objects.upload(key, MAX_UPLOAD_BYTES).await? {
        Fetched::Missing => return Err(PhotoError::FileMissing(key.to_owned())),
        Fetched::TooLarge(_) => Err(Refusal::TooLarge {
            limit: MAX_UPLOAD_BYTES,
        }),
        Fetched::Bytes(bytes) => renderer.render(&bytes),
    };
    let rendered = match rendered {
        Ok(rendered) => rendered,
        Err(refusal) => {
            let rejected = PhotoUpload {
                status: UploadStatus::Rejected {
                    refusal: refusal.clone(),
                },
                ..upload
            };
            return match app.store.finish_photo_upload(&rejected, None, now).await {
                Ok(()) => {
                    objects.delete_upload(key).await?;
                    Ok(Processed::Rejected(refusal))
                }
                Err(StoreError::ConditionFailed(_)) => Ok(Processed::Duplicate),
                Err(other) => Err(other.into()),
            };
        }
    };
    let processed = match upload.subject {
        PhotoSubject::Bouquet(bouquet_id) => {
            futures::future::try_join_all(
                rendered
                    .variants
                    .iter()
                    .map(|v| objects.put_variant(&v.key, &v.bytes)),
            )
            .await?;
            let photo = Photo {
                upload_id,
                width: rendered.width,
                height: rendered.height,
                variants: rendered.variants.into_iter().map(|v| v.variant).collect(),
            };
            show(app, upload, bouquet_id, photo, correlation_id, now).await?
        }
        // A proof of delivery's sizes stay private, under their order (read through signed
        // URLs only), never in the public photo bucket.
        PhotoSubject::Delivery(order_id) => {
            let variants: Vec<PhotoVariant> = rendered
                .variants
                .iter()
                .map(|v| PhotoVariant {
                    path: bouquet_domain::photo::delivery_variant_key(
                        order_id,
                        upload_id,
                        v.variant.width,
                    ),
                    ..v.variant.clone()
                })
                .collect();
            futures::future::try_join_all(
                rendered
                    .variants
                    .iter()
                    .zip(&variants)
                    .map(|(v, private)| objects.put_private(&private.path, &v.bytes)),
            )
            .await?;
            let photo = Photo {
                upload_id,
                width: rendered.width,
                height: rendered.height,
                variants,
            };
            show_on_order(app, upload, order_id, photo, correlation_id, now).await?
        }
    };
    objects.delete_upload(key).await?;
    Ok(processed)
}

/// Puts `photo` on the upload's bouquet at the version read (read again after a concurrent
/// change), ending the upload in the same transaction.
async fn show(
    app: &App,
    upload: PhotoUpload,
    bouquet_id: BouquetId,
    photo: Photo,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Processed, PhotoError> {
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let read = app.store.bouquet(bouquet_id, true).await?;
        let mut changed = match read.clone() {
            Some(bouquet) => bouquet,
            None => return Err(PhotoError::NotFound),
        };
        let read_version = changed.version;
        // A file that arrived before its shop's suspension and is processed after: nothing
        // of a suspended shop is shown (nor broadcast on the public channels). The shop is
        // read, not the bouquet's flag: a bouquet listed while the suspension took the others
        // off sale is flagged only by its last sweep.
        let suspended = match crate::shops::require_trading(app, changed.vendor_id).await {
            Ok(_) => false,
            Err(crate::shops::NotTrading::Store(error)) => return Err(error.into()),
            Err(_) => true,
        };
        if suspended || changed.is_suspended() {
            return end_unshown(app, upload, Some(Refusal::ShopSuspended), now).await;
        }
        if !changed.set_photo(photo.clone(), now) {
            return end_unshown(app, upload, None, now).await;
        }
        let event = DomainEvent::new(
            changed.bouquet_id,
            changed.version,
            now,
            correlation_id,
            EventData::BouquetPhotoChanged {
                bouquet_id: changed.bouquet_id,
                vendor_id: changed.vendor_id,
                photo: photo.clone(),
            },
        );
        let shown = PhotoShown::Bouquet {
            read_version,
            changed: &changed,
            event: &event,
        };
        if let Some(ended) = end_shown(app, &upload, shown, &photo, now).await? {
            return Ok(ended);
        }
        // The bouquet moved on (a sale, an edit, a reading): read it again.
    }
    Err(PhotoError::Busy)
}

/// Puts the processed `photo` on its order at the version read (read again after a
/// concurrent change), ending the upload and writing `OrderDeliveryPhotoAttached` in the same
/// transaction. An order that no longer takes one refuses it; a later upload shown first
/// supersedes it.
async fn show_on_order(
    app: &App,
    upload: PhotoUpload,
    order_id: OrderId,
    photo: Photo,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Processed, PhotoError> {
    let mut retry = Retry::optimistic();
    while retry.next().await {
        let order = app
            .store
            .order(order_id)
            .await?
            .ok_or(PhotoError::OrderNotFound)?;
        let mut changed = order.clone();
        match changed.attach_delivery_photo(photo.clone(), now) {
            Err(_) => return end_unshown(app, upload, Some(Refusal::OrderClosed), now).await,
            Ok(false) => return end_unshown(app, upload, None, now).await,
            Ok(true) => {}
        }
        let event = DomainEvent::new(
            order_id,
            changed.version,
            now,
            correlation_id,
            EventData::OrderDeliveryPhotoAttached {
                order_id,
                vendor_id: changed.vendor_id,
                customer_id: changed.customer_id.clone(),
            },
        );
        let shown = PhotoShown::Delivery {
            read_version: order.version,
            changed: &changed,
            event: &event,
        };
        if let Some(ended) = end_shown(app, &upload, shown, &photo, now).await? {
            return Ok(ended);
        }
        // The order moved on (a step, an edit): read it again.
    }
    Err(PhotoError::Busy)
}

/// Ends the upload `ready`, its subject showing `photo` (at the version read, with its event):
/// `None` when the subject moved since it was read (read it again).
async fn end_shown(
    app: &App,
    upload: &PhotoUpload,
    shown: PhotoShown<'_>,
    photo: &Photo,
    now: Timestamp,
) -> Result<Option<Processed>, PhotoError> {
    let ready = PhotoUpload {
        status: UploadStatus::Ready,
        ..upload.clone()
    };
    match app
        .store
        .finish_photo_upload(&ready, Some(shown), now)
        .await
    {
        Ok(()) => Ok(Some(Processed::Shown(photo.clone()))),
        Err(StoreError::ConditionFailed(conflicts)) => Ok(conflicts
            .iter()
            .any(|c| c.target == Target::PhotoUpload)
            .then_some(Processed::Duplicate)),
        Err(other) => Err(other.into()),
    }
}

/// Ends an upload whose photo is not shown: refused for `refusal`, or (`None`) superseded by
/// a later upload shown first. A second run finds it ended: a duplicate.
pub(crate) async fn end_unshown(
    app: &App,
    upload: PhotoUpload,
    refusal: Option<Refusal>,
    now: Timestamp,
) -> Result<Processed, PhotoError> {
    let (status, processed) = match refusal {
        Some(refusal) => (
            UploadStatus::Rejected {
                refusal: refusal.clone(),
            },
            Processed::Rejected(refusal),
        ),
        None => (UploadStatus::Superseded, Processed::Superseded),
    };
    let ended = PhotoUpload { status, ..upload };
    match app.store.finish_photo_upload(&ended, None, now).await {
        Ok(()) => Ok(processed),
        Err(StoreError::ConditionFailed(_)) => Ok(Processed::Duplicate),
        Err(other) => Err(other.into()),
    }
}

impl From<DomainError> for PhotoError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::OrderInvalidState(status) => PhotoError::OrderState(status),
            other => PhotoError::Bouquet(BouquetError::from(other)),
        }
    }
}

impl From<PhotoError> for ApiError {
    fn from(error: PhotoError) -> Self {
        match error {
            PhotoError::NotFound => ApiError::NotFound("bouquet"),
            PhotoError::UnknownUpload => ApiError::NotFound("photo upload"),
            PhotoError::Forbidden(_) => ApiError::forbidden(),
            PhotoError::Busy => ApiError::busy(),
            PhotoError::OrderNotFound => ApiError::NotFound("order"),
            PhotoError::OrderState(status) => DomainError::OrderInvalidState(status).into(),
            PhotoError::Bouquet(error) => error.into(),
            PhotoError::Store(error) => error.into(),
            other @ (PhotoError::FileMissing(_)
            | PhotoError::Storage(_)
            | PhotoError::NotANotification(_)) => ApiError::internal(other),
        }
    }
}
