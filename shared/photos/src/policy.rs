//! The upload bucket's POST policy: what lets a browser send one file straight to S3 (an HTML
//! form upload, <https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTForms.html>).
//! The policy names the bucket, the key, the content type and the size range, and expires; S3
//! refuses a file that breaks any of them. It is signed with SigV4 by the function's own
//! credentials (no S3 call: the SDK presigns GET and PUT, not POST).

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use base64::Engine;
use serde::Serialize;
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

use bouquet_domain::Timestamp;

use crate::StorageError;

/// Where and how the browser sends the file: a `multipart/form-data` POST to `url` with
/// `fields` first, in any order, and the file last, as the form field `file`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PresignedPost {
    pub url: String,
    pub fields: BTreeMap<String, String>,
}

/// Signs upload policies for one bucket.
#[derive(Clone, Debug)]
pub struct PostPolicySigner {
    credentials: SharedCredentialsProvider,
    region: String,
    bucket: String,
    /// What the browser posts to: the bucket's regional endpoint
    /// (`https://{bucket}.s3.{region}.amazonaws.com`), or the dev stack's.
    url: String,
}

fn time_of(at: Timestamp) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(at.as_millis()) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

impl PostPolicySigner {
    /// With the credentials and region of the function's SDK configuration.
    pub fn from_sdk(
        sdk: &bouquet_aws::SdkConfig,
        bucket: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Self, StorageError> {
        let credentials = sdk
            .credentials_provider()
            .ok_or_else(|| StorageError::Credentials("the SDK has no credentials".into()))?;
        let region = sdk
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| StorageError::Credentials("the SDK has no region".into()))?;
        Ok(Self {
            credentials,
            region,
            bucket: bucket.into(),
            url: url.into(),
        })
    }

    /// With fixed credentials (tests).
    pub fn with_credentials(
        credentials: Credentials,
        region: impl Into<String>,
        bucket: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        Self {
            credentials: SharedCredentialsProvider::new(credentials),
            region: region.into(),
            bucket: bucket.into(),
            url: url.into(),
        }
    }

    /// A policy for one file under `key` of `content_type`, 1 to `max_bytes` bytes, sent
    /// before `expires`.
    pub async fn sign(
        &self,
        key: &str,
        content_type: &str,
        max_bytes: u64,
        now: Timestamp,
        expires: Timestamp,
    ) -> Result<PresignedPost, StorageError> {
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| StorageError::Credentials(Box::new(e)))?;
        let signed_at = time_of(now);
        let date = signed_at
            .format(format_description!("[year][month][day]"))
            .expect("a date formats");
        let amz_date = signed_at
            .format(format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .expect("a time formats");
        let credential = format!(
            "{}/{date}/{}/s3/aws4_request",
            credentials.access_key_id(),
            self.region
        );
        let mut fields = BTreeMap::from([
            ("key".to_owned(), key.to_owned()),
            ("Content-Type".to_owned(), content_type.to_owned()),
            ("x-amz-algorithm".to_owned(), "AWS4-HMAC-SHA256".to_owned()),
            ("x-amz-credential".to_owned(), credential),
            ("x-amz-date".to_owned(), amz_date),
        ]);
        if let Some(token) = credentials.session_token() {
            fields.insert("x-amz-security-token".to_owned(), token.to_owned());
        }
        let mut conditions = vec![
            json!({"bucket": self.bucket}),
            json!(["content-length-range", 1, max_bytes]),
        ];
        conditions.extend(fields.iter().map(|(name, value)| json!({ name: value })));
        let expiration = time_of(expires)
            .replace_nanosecond(0)
            .expect("zero nanoseconds")
            .format(&Rfc3339)
            .expect("a time formats");
        let policy = json!({"expiration": expiration, "conditions": conditions});
        let policy = base64::engine::general_purpose::STANDARD.encode(policy.to_string());
        let signing_time = UNIX_EPOCH + Duration::from_millis(now.as_millis().max(0) as u64);
        let signing_key = aws_sigv4::sign::v4::generate_signing_key(
            credentials.secret_access_key(),
            signing_time,
            &self.region,
            "s3",
        );
        let signature = aws_sigv4::sign::v4::calculate_signature(signing_key, policy.as_bytes());
        fields.insert("policy".to_owned(), policy);
        fields.insert("x-amz-signature".to_owned(), signature);
        Ok(PresignedPost {
            url: self.url.clone(),
            fields,
        })
    }

    /// A URL that reads the object `key` of the bucket until `now + valid_for` (a SigV4
    /// presigned GET; no S3 call). It works only while the signing role may read the key,
    /// and never past the role's session.
    pub async fn presign_get(
        &self,
        key: &str,
        now: Timestamp,
        valid_for: Duration,
    ) -> Result<String, StorageError> {
        use aws_sigv4::http_request::{
            sign, PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation,
            SigningSettings, UriPathNormalizationMode,
        };
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| StorageError::Credentials(Box::new(e)))?;
        let identity = credentials.into();
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(valid_for);
        // S3 signs the path as sent: encoded once, never normalised.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(UNIX_EPOCH + Duration::from_millis(now.as_millis().max(0) as u64))
            .settings(settings)
            .build()
            .map_err(|e| StorageError::Credentials(Box::new(e)))?
            .into();
        let url = format!("{}/{}", self.url.trim_end_matches('/'), key);
        let request = SignableRequest::new(
            "GET",
            &url,
            std::iter::empty(),
            SignableBody::UnsignedPayload,
        )
        .map_err(|e| StorageError::Credentials(Box::new(e)))?;
        let (instructions, _) = sign(request, &params)
            .map_err(|e| StorageError::Credentials(Box::new(e)))?
            .into_parts();
        let query: Vec<String> = instructions
            .params()
            .iter()
            .map(|(name, value)| {
                format!(
                    "{name}={}",
                    percent_encoding::utf8_percent_encode(value, QUERY_VALUE)
                )
            })
            .collect();
        Ok(format!("{url}?{}", query.join("&")))
    }
}

/// What a query value keeps unencoded: RFC 3986's unreserved characters, as SigV4 does.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> PostPolicySigner {
        PostPolicySigner::with_credentials(
            Credentials::new("AKIDEXAMPLE", "secret", Some("token".into()), None, "test"),
            "eu-west-1",
            "uploads-bucket",
            "https://uploads-bucket.s3.eu-west-1.amazonaws.com",
        )
    }

    #[tokio::test]
    async fn a_presigned_read_names_the_key_its_lifetime_and_a_signature() {
        let now = Timestamp::from_millis(1_796_228_211_000);
        let url = signer()
            .presign_get("delivered/01J/640.jpg", now, Duration::from_secs(900))
            .await
            .unwrap();
        assert!(
            url.starts_with(
                "https://uploads-bucket.s3.eu-west-1.amazonaws.com/delivered/01J/640.jpg?"
            ),
            "{url}"
        );
        for part in [
            "X-Amz-Algorithm=AWS4-HMAC-SHA256",
            "X-Amz-Credential=AKIDEXAMPLE%2F20261202%2Feu-west-1%2Fs3%2Faws4_request",
            "X-Amz-Expires=900",
            "X-Amz-Security-Token=token",
            "X-Amz-Signature=",
        ] {
            assert!(url.contains(part), "{part} in {url}");
        }
        let again = signer()
            .presign_get("delivered/01J/640.jpg", now, Duration::from_secs(900))
            .await
            .unwrap();
        assert_eq!(url, again, "the same request signs the same");
    }

    #[tokio::test]
    async fn the_policy_names_the_key_the_type_the_size_and_the_deadline() {
        let now = Timestamp::from_millis(1_796_228_211_000);
        let expires = Timestamp::from_millis(1_796_228_811_000);
        let post = signer()
            .sign("uploads/01J", "image/png", 5_242_880, now, expires)
            .await
            .unwrap();
        assert_eq!(post.fields["key"], "uploads/01J");
        assert_eq!(post.fields["Content-Type"], "image/png");
        assert_eq!(post.fields["x-amz-security-token"], "token");
        assert_eq!(
            post.fields["x-amz-credential"],
            "AKIDEXAMPLE/20261202/eu-west-1/s3/aws4_request"
        );
        assert_eq!(post.fields["x-amz-date"], "20261202T161651Z");
        let policy = base64::engine::general_purpose::STANDARD
            .decode(&post.fields["policy"])
            .unwrap();
        let policy: serde_json::Value = serde_json::from_slice(&policy).unwrap();
        assert_eq!(policy["expiration"], "2026-12-02T16:26:51Z");
        let conditions = policy["conditions"].as_array().unwrap();
        assert!(conditions.contains(&json!({"bucket": "uploads-bucket"})));
        assert!(conditions.contains(&json!(["content-length-range", 1, 5_242_880])));
        assert!(conditions.contains(&json!({"key": "uploads/01J"})));
        assert!(conditions.contains(&json!({"Content-Type": "image/png"})));
        let signature = &post.fields["x-amz-signature"];
        assert_eq!(signature.len(), 64);
        let other = signer()
            .sign("uploads/01K", "image/png", 5_242_880, now, expires)
            .await
            .unwrap();
        assert_ne!(&other.fields["x-amz-signature"], signature);
    }
}
