//! A bouquet's photo: what a vendor may upload, an upload's lifecycle, and the sizes the
//! storefront serves.
//!
//! A vendor asks for an upload (a [`PhotoUpload`], pending); the browser sends the file straight
//! to the upload bucket under [`PhotoUpload::object_key`]; the photo function decodes it, makes
//! the [`variant_sizes`] and records a [`Photo`] on the bouquet, or refuses it with a
//! [`Refusal`]. A later upload replaces an earlier one, never the other way round (upload ids
//! are ULIDs, ordered by when the vendor asked).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::{BouquetId, OrderId, UploadId, VendorId};

/// The largest file a vendor may upload (the upload policy's `content-length-range`).
pub const MAX_UPLOAD_BYTES: u64 = 5 * 1024 * 1024;
/// The largest bitmap the photo function decodes: 24 megapixels (6000 × 4000), about 96 MB as
/// RGBA. A small file can declare a huge bitmap (a "decompression bomb"); its header is read
/// first and such a file is refused before any pixel is decoded.
pub const MAX_PIXELS: u64 = 24_000_000;
/// The widths the storefront asks for (`srcset`): a phone's card, a desktop card, a detail page.
pub const VARIANT_WIDTHS: [u32; 3] = [320, 640, 1280];
/// How long an upload's policy lets the browser send the file.
pub const UPLOAD_WINDOW: Duration = Duration::from_secs(10 * 60);
/// How long a finished upload's record is kept (its status for the console, then TTL).
pub const UPLOAD_RECORD_DAYS: u64 = 2;

/// The file types a vendor may upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageType {
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/webp")]
    Webp,
}

/// Why a content type is not one a vendor may upload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be image/jpeg, image/png or image/webp")]
pub struct UnsupportedType;

impl ImageType {
    pub fn parse(mime: &str) -> Result<Self, UnsupportedType> {
        match mime.trim().to_ascii_lowercase().as_str() {
            "image/jpeg" | "image/jpg" => Ok(ImageType::Jpeg),
            "image/png" => Ok(ImageType::Png),
            "image/webp" => Ok(ImageType::Webp),
            _ => Err(UnsupportedType),
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageType::Jpeg => "image/jpeg",
            ImageType::Png => "image/png",
            ImageType::Webp => "image/webp",
        }
    }
}

/// Why an uploaded file was not made a photo. Each has a stable `code` (the console's wording
/// keys on it) and says what to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Refusal {
    #[error("the file is not a JPEG, PNG or WebP image")]
    NotAnImage,
    #[error("the file is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the image is {width} × {height} pixels; at most {limit} pixels are taken")]
    TooManyPixels { width: u32, height: u32, limit: u64 },
    #[error("the image could not be read: it is damaged or cut short")]
    Unreadable,
    /// The shop was suspended before the photo was processed: a suspended shop shows nothing.
    #[error("the shop is suspended: its photos are not taken until it is reinstated")]
    ShopSuspended,
    /// A delivery photo of an order that no longer takes one (its details redacted, or it
    /// ended otherwise meanwhile).
    #[error("the order takes no delivery photo any more")]
    OrderClosed,
}

impl Refusal {
    /// The code of the refusal (`photo.{code}`), as the API shows it.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotAnImage => "photo.not_an_image",
            Refusal::TooLarge { .. } => "photo.too_large",
            Refusal::TooManyPixels { .. } => "photo.too_many_pixels",
            Refusal::Unreadable => "photo.unreadable",
            Refusal::ShopSuspended => "photo.shop_suspended",
            Refusal::OrderClosed => "photo.order_closed",
        }
    }
}

/// Checks a decoded image's declared size before its pixels are decoded.
pub fn check_dimensions(width: u32, height: u32) -> Result<(), Refusal> {
    if width == 0 || height == 0 {
        return Err(Refusal::Unreadable);
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(Refusal::TooManyPixels {
            width,
            height,
            limit: MAX_PIXELS,
        });
    }
    Ok(())
}

/// The sizes made of an image `width` × `height`: each of [`VARIANT_WIDTHS`] the image is at
/// least as wide as, keeping its aspect ratio; an image narrower than the smallest gives one
/// variant at its own size (never enlarged).
pub fn variant_sizes(width: u32, height: u32) -> Vec<(u32, u32)> {
    let scaled = |w: u32| {
        let h = (u64::from(height) * u64::from(w) + u64::from(width) / 2) / u64::from(width);
        (w, h.max(1) as u32)
    };
    let sizes: Vec<(u32, u32)> = VARIANT_WIDTHS
        .iter()
        .copied()
        .filter(|w| *w <= width)
        .map(scaled)
        .collect();
    if sizes.is_empty() {
        vec![(width, height)]
    } else {
        sizes
    }
}

/// Where a delivery photo's size is kept: in the private upload bucket, under its order
/// (outside `uploads/`, so neither processed again nor expired with the uploads).
pub fn delivery_variant_key(order_id: OrderId, upload_id: UploadId, width: u32) -> String {
    format!("{}{upload_id}/{width}.jpg", delivery_prefix(order_id))
}

/// Every delivery photo of an order is under this: what its redaction removes.
pub fn delivery_prefix(order_id: OrderId) -> String {
    format!("delivered/{order_id}/")
}

/// Where a variant is served: content-addressed (`digest` is of the uploaded bytes), so a
/// path never changes meaning and the edge caches it for a year.
pub fn variant_path(digest: &str, width: u32) -> String {
    format!("/photos/{digest}/{width}.jpg")
}

/// One size of a photo, as the storefront's `srcset` names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhotoVariant {
    pub width: u32,
    pub height: u32,
    /// A path on the console's origin (`/photos/...`).
    pub path: String,
}

/// A bouquet's photo: its variants, smallest first, and the upload it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Photo {
    pub upload_id: UploadId,
    /// The processed image's size (the largest variant's), for the storefront's aspect ratio.
    pub width: u32,
    pub height: u32,
    pub variants: Vec<PhotoVariant>,
}

impl Photo {
    /// Whether this photo should replace `current`: only a later upload does.
    pub fn replaces(&self, current: Option<&Photo>) -> bool {
        current.is_none_or(|c| c.upload_id < self.upload_id)
    }
}

/// Where an upload stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum UploadStatus {
    /// Allowed; the file may not have arrived yet.
    Pending,
    /// Made into the bouquet's photo.
    Ready,
    /// Refused; the bouquet keeps the photo it had.
    Rejected { refusal: Refusal },
    /// Processed, but a later upload of the same bouquet was already its photo.
    Superseded,
}

impl UploadStatus {
    pub fn name(&self) -> &'static str {
        match self {
            UploadStatus::Pending => "pending",
            UploadStatus::Ready => "ready",
            UploadStatus::Rejected { .. } => "rejected",
            UploadStatus::Superseded => "superseded",
        }
    }
}

/// What a photo is of: a bouquet (public sizes, shown on the storefront) or an order's
/// delivery (private sizes, proof of delivery, shown through signed URLs to its readers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhotoSubject {
    Bouquet(BouquetId),
    Delivery(OrderId),
}

/// An upload a vendor was allowed: of what, of which type, until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhotoUpload {
    pub upload_id: UploadId,
    pub subject: PhotoSubject,
    pub vendor_id: VendorId,
    pub content_type: ImageType,
    pub status: UploadStatus,
    pub requested_at: Timestamp,
}

const UPLOAD_PREFIX: &str = "uploads/";

impl PhotoUpload {
    pub fn new(
        subject: PhotoSubject,
        vendor_id: VendorId,
        content_type: ImageType,
        now: Timestamp,
    ) -> Self {
        Self {
            upload_id: UploadId::generate(),
            subject,
            vendor_id,
            content_type,
            status: UploadStatus::Pending,
            requested_at: now,
        }
    }

    /// Until when the browser may send the file.
    pub fn deadline(&self) -> Timestamp {
        self.requested_at.plus(UPLOAD_WINDOW)
    }

    /// The file's key in the upload bucket.
    pub fn object_key(&self) -> String {
        format!("{UPLOAD_PREFIX}{}", self.upload_id)
    }

    /// The upload an object key of the upload bucket belongs to; `None` for any other key.
    pub fn id_of_key(key: &str) -> Option<UploadId> {
        UploadId::parse(key.strip_prefix(UPLOAD_PREFIX)?).ok()
    }

    pub fn is_pending(&self) -> bool {
        self.status == UploadStatus::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_three_web_formats_are_taken() {
        assert_eq!(ImageType::parse("image/jpeg"), Ok(ImageType::Jpeg));
        assert_eq!(ImageType::parse(" Image/PNG "), Ok(ImageType::Png));
        assert_eq!(ImageType::parse("image/webp").unwrap().mime(), "image/webp");
        for other in ["image/gif", "image/svg+xml", "text/html", "", "image/heic"] {
            assert_eq!(ImageType::parse(other), Err(UnsupportedType), "{other}");
        }
    }

    #[test]
    fn variants_never_enlarge_and_keep_the_aspect_ratio() {
        assert_eq!(
            variant_sizes(4000, 3000),
            [(320, 240), (640, 480), (1280, 960)]
        );
        assert_eq!(variant_sizes(800, 1000), [(320, 400), (640, 800)]);
        assert_eq!(variant_sizes(200, 100), [(200, 100)]);
        assert_eq!(variant_sizes(1000, 1), [(320, 1), (640, 1)]);
        assert_eq!(variant_path("ab12", 640), "/photos/ab12/640.jpg");
    }

    #[test]
    fn a_bitmap_larger_than_the_limit_is_refused_before_decoding() {
        assert_eq!(check_dimensions(6000, 4000), Ok(()));
        assert_eq!(
            check_dimensions(60_000, 60_000),
            Err(Refusal::TooManyPixels {
                width: 60_000,
                height: 60_000,
                limit: MAX_PIXELS
            })
        );
        assert_eq!(check_dimensions(0, 10), Err(Refusal::Unreadable));
    }

    #[test]
    fn a_later_upload_replaces_an_earlier_one_never_the_reverse() {
        let photo = |id: UploadId| Photo {
            upload_id: id,
            width: 1,
            height: 1,
            variants: Vec::new(),
        };
        let first = photo(UploadId::parse("01JAAAAAAAAAAAAAAAAAAAAAAA").unwrap());
        let second = photo(UploadId::parse("01JBBBBBBBBBBBBBBBBBBBBBBB").unwrap());
        assert!(first.replaces(None));
        assert!(second.replaces(Some(&first)));
        assert!(!first.replaces(Some(&second)));
        assert!(!first.replaces(Some(&first)), "a duplicate changes nothing");
    }

    #[test]
    fn upload_keys_name_their_upload_and_nothing_else() {
        let upload = PhotoUpload::new(
            PhotoSubject::Bouquet(BouquetId::generate()),
            VendorId::generate(),
            ImageType::Png,
            Timestamp::from_millis(0),
        );
        assert_eq!(
            PhotoUpload::id_of_key(&upload.object_key()),
            Some(upload.upload_id)
        );
        assert_eq!(PhotoUpload::id_of_key("photos/abc/320.jpg"), None);
        assert_eq!(PhotoUpload::id_of_key("uploads/not-an-id"), None);
        assert_eq!(upload.deadline().as_millis(), 600_000);
        assert_eq!(
            serde_json::to_value(Refusal::TooLarge { limit: 5 }).unwrap(),
            serde_json::json!({"code": "too_large", "limit": 5})
        );
    }
}
