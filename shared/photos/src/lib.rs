//! Bouquet photos outside the domain: the upload bucket's POST policy, the object storage the
//! photo function reads uploads from and writes sizes to, and the renderer that makes those
//! sizes. Each is a narrow seam: the app's use cases take them as traits, tests pass the
//! in-memory [`MemoryObjects`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bouquet_domain::photo::{PhotoVariant, Refusal};

mod policy;
#[cfg(feature = "render")]
pub mod render;
#[cfg(feature = "s3")]
pub mod s3;

pub use policy::{PostPolicySigner, PresignedPost};

/// How long the edge and browsers keep a size: a year, as its key names its content.
pub const VARIANT_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// One size made of an upload, with the object key it is stored under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedVariant {
    pub variant: PhotoVariant,
    /// The object key in the photo bucket: the variant's path without its leading `/`.
    pub key: String,
    /// JPEG bytes, without any of the upload's metadata.
    pub bytes: Vec<u8>,
}

/// An upload made into the storefront's sizes, smallest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// A digest of the uploaded bytes: the same upload always gives the same keys.
    pub digest: String,
    pub width: u32,
    pub height: u32,
    pub variants: Vec<RenderedVariant>,
}

/// Turns an uploaded file into the storefront's sizes, or says why it cannot.
pub trait Renderer: Send + Sync {
    fn render(&self, bytes: &[u8]) -> Result<Rendered, Refusal>;
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// No answer, throttled, or the storage failed: a later try may succeed.
    #[error("the photo storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The function has no credentials to sign an upload policy with.
    #[error("no credentials to sign the upload policy")]
    Credentials(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What the upload bucket holds under a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    Bytes(Vec<u8>),
    /// Larger than the limit asked for (never read).
    TooLarge(u64),
    /// Nothing: already processed and deleted, or never sent.
    Missing,
}

/// The two buckets as the photo function uses them.
#[async_trait::async_trait]
pub trait PhotoObjects: Send + Sync {
    /// The uploaded file under `key`, read only if it is at most `max_bytes`.
    async fn upload(&self, key: &str, max_bytes: u64) -> Result<Fetched, StorageError>;
    /// Stores one size (idempotent: its key names its content).
    async fn put_variant(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError>;
    /// Removes a processed or refused upload (idempotent).
    async fn delete_upload(&self, key: &str) -> Result<(), StorageError>;
    /// Stores one size of a private photo (a proof of delivery) in the upload bucket, outside
    /// `uploads/`: read only through presigned URLs (idempotent: one key per upload and size).
    async fn put_private(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError>;
}

/// The upload bucket's private photos (proofs of delivery, `delivered/{orderId}/...`), as
/// erasure and redaction remove them.
#[async_trait::async_trait]
pub trait PrivatePhotos: Send + Sync {
    /// Deletes every object under `prefix` (idempotent: none left is done); how many went.
    async fn delete_under(&self, prefix: &str) -> Result<usize, StorageError>;
}

/// Both buckets in memory; told to, it fails every write (a storage outage, in tests).
#[derive(Default)]
pub struct MemoryObjects {
    uploads: Mutex<HashMap<String, Vec<u8>>>,
    variants: Mutex<HashMap<String, Vec<u8>>>,
    failing: AtomicBool,
}

impl MemoryObjects {
    pub fn add_upload(&self, key: &str, bytes: Vec<u8>) {
        self.uploads
            .lock()
            .expect("not poisoned")
            .insert(key.to_owned(), bytes);
    }

    pub fn has_upload(&self, key: &str) -> bool {
        self.uploads.lock().expect("not poisoned").contains_key(key)
    }

    pub fn variant(&self, key: &str) -> Option<Vec<u8>> {
        self.variants
            .lock()
            .expect("not poisoned")
            .get(key)
            .cloned()
    }

    pub fn variant_count(&self) -> usize {
        self.variants.lock().expect("not poisoned").len()
    }

    /// From now on every write fails (`true`) or succeeds again (`false`).
    pub fn fail_writes(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// A write of `bytes` under `key` in one of the buckets (unless writes fail).
    fn put(
        &self,
        bucket: &Mutex<HashMap<String, Vec<u8>>>,
        key: &str,
        bytes: &[u8],
    ) -> Result<(), StorageError> {
        self.check()?;
        bucket
            .lock()
            .expect("not poisoned")
            .insert(key.to_owned(), bytes.to_vec());
        Ok(())
    }

    fn check(&self) -> Result<(), StorageError> {
        if self.failing.load(Ordering::SeqCst) {
            Err(StorageError::Unavailable(
                "the storage is down (test)".into(),
            ))
        } else {
            Ok(())
        }
    }
}

#[async_trait::async_trait]
impl PhotoObjects for MemoryObjects {
    async fn upload(&self, key: &str, max_bytes: u64) -> Result<Fetched, StorageError> {
        Ok(match self.uploads.lock().expect("not poisoned").get(key) {
            None => Fetched::Missing,
            Some(bytes) if bytes.len() as u64 > max_bytes => Fetched::TooLarge(bytes.len() as u64),
            Some(bytes) => Fetched::Bytes(bytes.clone()),
        })
    }

    async fn put_variant(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.put(&self.variants, key, bytes)
    }

    async fn delete_upload(&self, key: &str) -> Result<(), StorageError> {
        self.check()?;
        self.uploads.lock().expect("not poisoned").remove(key);
        Ok(())
    }

    async fn put_private(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.put(&self.uploads, key, bytes)
    }
}

#[async_trait::async_trait]
impl PrivatePhotos for MemoryObjects {
    async fn delete_under(&self, prefix: &str) -> Result<usize, StorageError> {
        self.check()?;
        let mut uploads = self.uploads.lock().expect("not poisoned");
        let before = uploads.len();
        uploads.retain(|key, _| !key.starts_with(prefix));
        Ok(before - uploads.len())
    }
}
