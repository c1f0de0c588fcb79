//! Photo uploads: the record of an upload a vendor was allowed, and its end (the bouquet's new
//! photo with its event, or a refusal), each a conditional write on the upload still pending.

use serde::{Deserialize, Serialize};

use bouquet_domain::events::DomainEvent;
use bouquet_domain::photo::{
    ImageType, PhotoSubject, PhotoUpload, Refusal, UploadStatus, UPLOAD_RECORD_DAYS,
};
use bouquet_domain::{Bouquet, BouquetId, Order, OrderId, Timestamp, UploadId, VendorId};

use crate::bouquets::bouquet_key;
use crate::error::{StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::to_item;
use crate::keys;
use crate::store::Store;
use crate::tx::{Expr, Tx};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhotoUploadItem {
    pk: String,
    sk: String,
    entity: String,
    upload_id: String,
    /// What it is a photo of: a bouquet, or an order's delivery (one of the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bouquet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    order_id: Option<String>,
    vendor_id: String,
    content_type: ImageType,
    /// `pending`, `ready`, `rejected`, `superseded`.
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refusal: Option<Refusal>,
    requested_at: i64,
    /// TTL (epoch seconds): the record outlives the upload window by a day or two, for the
    /// console to read how its upload ended.
    expires_at: i64,
}

crate::items::stored!(PhotoUploadItem => PhotoUpload);

fn upload_key(upload_id: UploadId) -> crate::items::Item {
    keys::key(
        keys::photo_upload_pk(&upload_id.to_string()),
        keys::PHOTO_UPLOAD_SK,
    )
}

fn expires_at(upload: &PhotoUpload) -> i64 {
    upload.requested_at.as_millis() / 1000 + (UPLOAD_RECORD_DAYS * 86_400) as i64
}

impl PhotoUploadItem {
    fn from_domain(upload: &PhotoUpload) -> Self {
        let id = upload.upload_id.to_string();
        Self {
            pk: keys::photo_upload_pk(&id),
            sk: keys::PHOTO_UPLOAD_SK.into(),
            entity: "photoUpload".into(),
            upload_id: id,
            bouquet_id: match upload.subject {
                PhotoSubject::Bouquet(id) => Some(id.to_string()),
                PhotoSubject::Delivery(_) => None,
            },
            order_id: match upload.subject {
                PhotoSubject::Delivery(id) => Some(id.to_string()),
                PhotoSubject::Bouquet(_) => None,
            },
            vendor_id: upload.vendor_id.to_string(),
            content_type: upload.content_type,
            status: upload.status.name().into(),
            refusal: match &upload.status {
                UploadStatus::Rejected { refusal } => Some(refusal.clone()),
                _ => None,
            },
            requested_at: upload.requested_at.as_millis(),
            expires_at: expires_at(upload),
        }
    }

    fn into_domain(self) -> Result<PhotoUpload, StoreError> {
        let status = match (self.status.as_str(), self.refusal) {
            ("pending", _) => UploadStatus::Pending,
            ("ready", _) => UploadStatus::Ready,
            ("superseded", _) => UploadStatus::Superseded,
            ("rejected", Some(refusal)) => UploadStatus::Rejected { refusal },
            (other, _) => {
                return Err(StoreError::corrupt(format!(
                    "photo upload status {other:?}"
                )))
            }
        };
        Ok(PhotoUpload {
            upload_id: UploadId::parse(&self.upload_id).map_err(StoreError::corrupt)?,
            subject: match (self.bouquet_id.as_deref(), self.order_id.as_deref()) {
                (Some(bouquet), None) => {
                    PhotoSubject::Bouquet(BouquetId::parse(bouquet).map_err(StoreError::corrupt)?)
                }
                (None, Some(order)) => {
                    PhotoSubject::Delivery(OrderId::parse(order).map_err(StoreError::corrupt)?)
                }
                _ => return Err(StoreError::corrupt("a photo upload of no one thing")),
            },
            vendor_id: VendorId::parse(&self.vendor_id).map_err(StoreError::corrupt)?,
            content_type: self.content_type,
            status,
            requested_at: Timestamp::from_millis(self.requested_at),
        })
    }
}

/// The photo's subject as read (its version) and as it is with the photo, with its event.
pub enum PhotoShown<'a> {
    Bouquet {
        read_version: u64,
        changed: &'a Bouquet,
        event: &'a DomainEvent,
    },
    Delivery {
        read_version: u64,
        changed: &'a Order,
        event: &'a DomainEvent,
    },
}

impl Store {
    /// Records an upload the vendor was allowed (pending), with the request's idempotency
    /// record.
    pub async fn put_photo_upload(
        &self,
        upload: &PhotoUpload,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        tx.put_new(
            Target::PhotoUpload,
            &self.table,
            to_item(&PhotoUploadItem::from_domain(upload))?,
        )?;
        tx.commit(self).await
    }

    /// One upload's record; `consistent` when a conditional write will follow.
    pub async fn photo_upload(
        &self,
        upload_id: UploadId,
        consistent: bool,
    ) -> Result<Option<PhotoUpload>, StoreError> {
        self.get_stored::<PhotoUploadItem>(upload_key(upload_id), consistent)
            .await
    }

    /// Ends a pending upload as `finished` says; with `shown`, the bouquet takes the photo (on
    /// the version read) and its event is put, all in one transaction. A condition failure
    /// names the upload (already finished: a duplicate) or the bouquet (changed since read).
    pub async fn finish_photo_upload(
        &self,
        finished: &PhotoUpload,
        shown: Option<PhotoShown<'_>>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        let item = PhotoUploadItem::from_domain(finished);
        let refusal = item
            .refusal
            .as_ref()
            .map(serde_dynamo::to_attribute_value)
            .transpose()
            .map_err(StoreError::corrupt)?;
        let update = match refusal {
            Some(refusal) => {
                Expr::new("SET #status = :status, refusal = :refusal").value(":refusal", refusal)
            }
            None => Expr::new("SET #status = :status"),
        }
        .name("#status", "status")
        .s(":status", item.status);
        tx.update(
            Target::PhotoUpload,
            &self.table,
            upload_key(finished.upload_id),
            update,
            Expr::new("#status = :pending").s(":pending", "pending"),
        )?;
        if let Some(shown) = shown {
            // The subject's photo attribute, at the version read, with its event.
            let (target, key, attribute, photo, version, read_version, event) = match shown {
                PhotoShown::Bouquet {
                    read_version,
                    changed,
                    event,
                } => (
                    Target::Bouquet(changed.bouquet_id),
                    bouquet_key(&changed.bouquet_id.to_string()),
                    "photo",
                    serde_dynamo::to_attribute_value(&changed.photo),
                    changed.version,
                    read_version,
                    event,
                ),
                PhotoShown::Delivery {
                    read_version,
                    changed,
                    event,
                } => (
                    Target::Order(changed.order_id),
                    keys::key(
                        keys::order_pk(&changed.order_id.to_string()),
                        keys::ORDER_SK,
                    ),
                    "deliveryPhoto",
                    serde_dynamo::to_attribute_value(&changed.delivery_photo),
                    changed.version,
                    read_version,
                    event,
                ),
            };
            tx.update(
                target,
                &self.table,
                key,
                Expr::new("SET #photo = :photo, version = :version, updatedAt = :now")
                    .name("#photo", attribute)
                    .value(":photo", photo.map_err(StoreError::corrupt)?)
                    .n(":version", version)
                    .n(":now", now.as_millis()),
                Expr::at_version(read_version),
            )?;
            tx.event(&self.table, event)?;
        }
        tx.commit(self).await
    }
}
