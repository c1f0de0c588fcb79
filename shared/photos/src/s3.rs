//! The two buckets on Amazon S3: uploads are read (`HeadObject`'s size first, through
//! `GetObject`'s `Content-Length`) and deleted; sizes are written with a year's cache lifetime.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;

use crate::{Fetched, PhotoObjects, PrivatePhotos, StorageError, VARIANT_CACHE_CONTROL};

pub struct S3Objects {
    client: Client,
    upload_bucket: String,
    photo_bucket: String,
}

impl S3Objects {
    pub fn new(
        sdk: &bouquet_aws::SdkConfig,
        upload_bucket: impl Into<String>,
        photo_bucket: impl Into<String>,
    ) -> Self {
        Self::with_client(client(sdk), upload_bucket, photo_bucket)
    }

    /// Over a client configured elsewhere (a test's).
    pub fn with_client(
        client: Client,
        upload_bucket: impl Into<String>,
        photo_bucket: impl Into<String>,
    ) -> Self {
        Self {
            client,
            upload_bucket: upload_bucket.into(),
            photo_bucket: photo_bucket.into(),
        }
    }
}

/// An S3 client on `sdk`, each operation an X-Ray subsegment. With an endpoint URL (the local
/// emulator) buckets are addressed by path: `http://127.0.0.1:4566/{bucket}/{key}`.
pub fn client(sdk: &bouquet_aws::SdkConfig) -> Client {
    Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .interceptor(bouquet_aws::XRaySubsegments)
            .force_path_style(sdk.endpoint_url().is_some())
            .build(),
    )
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::Unavailable(Box::new(error))
}

#[async_trait::async_trait]
impl PhotoObjects for S3Objects {
    async fn upload(&self, key: &str, max_bytes: u64) -> Result<Fetched, StorageError> {
        let object = match self
            .client
            .get_object()
            .bucket(&self.upload_bucket)
            .key(key)
            .send()
            .await
        {
            Ok(object) => object,
            Err(SdkError::ServiceError(e)) if e.err().is_no_such_key() => {
                return Ok(Fetched::Missing)
            }
            Err(error) => return Err(unavailable(error)),
        };
        let size = object.content_length().unwrap_or(0).max(0) as u64;
        if size > max_bytes {
            // The body is dropped unread: the connection closes.
            return Ok(Fetched::TooLarge(size));
        }
        let bytes = object.body.collect().await.map_err(unavailable)?;
        Ok(Fetched::Bytes(bytes.into_bytes().to_vec()))
    }

    async fn put_variant(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.client
            .put_object()
            .bucket(&self.photo_bucket)
            .key(key)
            .content_type("image/jpeg")
            .cache_control(VARIANT_CACHE_CONTROL)
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn delete_upload(&self, key: &str) -> Result<(), StorageError> {
        self.client
            .delete_object()
            .bucket(&self.upload_bucket)
            .key(key)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn put_private(&self, key: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.client
            .put_object()
            .bucket(&self.upload_bucket)
            .key(key)
            .content_type("image/jpeg")
            // Personal data: no shared cache keeps it.
            .cache_control("private, max-age=900")
            .body(ByteStream::from(bytes.to_vec()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl PrivatePhotos for S3Objects {
    /// `ListObjectsV2` under the prefix, then `DeleteObjects` of each page (up to 1,000 keys
    /// a call, as S3 takes them): a proof of delivery is a handful of sizes.
    async fn delete_under(&self, prefix: &str) -> Result<usize, StorageError> {
        use aws_sdk_s3::types::{Delete, ObjectIdentifier};

        let mut deleted = 0;
        loop {
            let listed = self
                .client
                .list_objects_v2()
                .bucket(&self.upload_bucket)
                .prefix(prefix)
                .send()
                .await
                .map_err(unavailable)?;
            let keys: Vec<ObjectIdentifier> = listed
                .contents()
                .iter()
                .filter_map(|object| object.key())
                .filter_map(|key| ObjectIdentifier::builder().key(key).build().ok())
                .collect();
            if keys.is_empty() {
                return Ok(deleted);
            }
            let count = keys.len();
            let delete = Delete::builder()
                .set_objects(Some(keys))
                .quiet(true)
                .build()
                .map_err(unavailable)?;
            let answer = self
                .client
                .delete_objects()
                .bucket(&self.upload_bucket)
                .delete(delete)
                .send()
                .await
                .map_err(unavailable)?;
            if let Some(failed) = answer.errors().first() {
                return Err(StorageError::Unavailable(
                    format!(
                        "DeleteObjects left {}: {}",
                        failed.key().unwrap_or_default(),
                        failed.message().unwrap_or_default()
                    )
                    .into(),
                ));
            }
            deleted += count;
        }
    }
}
