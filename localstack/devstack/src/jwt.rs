//! The local JWT authorizer: HS256 tokens signed with `LOCAL_JWT_SECRET`, issuer
//! `bouquet-local`, audience `bouquet-api`, expiry checked. API Gateway passes a valid token's
//! claims to the function as strings under `requestContext.authorizer.jwt.claims`.

use std::collections::HashMap;

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const ISSUER: &str = "bouquet-local";
pub const AUDIENCE: &str = "bouquet-api";
/// Used when `LOCAL_JWT_SECRET` is not set. Local only: never a deployed secret.
pub const DEFAULT_SECRET: &str = "bouquet-local-development-secret";

pub fn secret_from_env() -> String {
    std::env::var("LOCAL_JWT_SECRET").unwrap_or_else(|_| DEFAULT_SECRET.to_owned())
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Claims {
    sub: String,
    role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    vendor_id: Option<String>,
    iss: String,
    aud: String,
    iat: i64,
    exp: i64,
}

fn now_seconds() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Mints a token for `role` that is valid for `ttl_seconds`.
pub fn mint(
    secret: &str,
    role: &str,
    sub: &str,
    vendor_id: Option<&str>,
    ttl_seconds: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = now_seconds();
    let claims = Claims {
        sub: sub.to_owned(),
        role: role.to_owned(),
        vendor_id: vendor_id.map(str::to_owned),
        iss: ISSUER.into(),
        aud: AUDIENCE.into(),
        iat: now,
        exp: now + ttl_seconds,
    };
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
}

/// Verifies `Authorization: Bearer <token>` and returns the claims as API Gateway passes
/// them (every value a string). `None` for anything missing, malformed, forged, expired or
/// not valid yet (`nbf` in the future).
pub fn verify(secret: &str, authorization: Option<&str>) -> Option<HashMap<String, String>> {
    let token = authorization?.strip_prefix("Bearer ")?.trim();
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&[AUDIENCE]);
    validation.leeway = 0;
    // API Gateway refuses a token that is not valid yet.
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = decode::<HashMap<String, Value>>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .ok()?;
    Some(
        data.claims
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_its_own_tokens_and_nothing_else() {
        let token = mint(
            "s3cret",
            "vendor",
            "v-user",
            Some("01JF0000000000000000000000"),
            60,
        )
        .unwrap();
        let claims = verify("s3cret", Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(claims["role"], "vendor");
        assert_eq!(claims["vendorId"], "01JF0000000000000000000000");
        assert!(
            verify("other", Some(&format!("Bearer {token}"))).is_none(),
            "wrong key"
        );
        assert!(verify("s3cret", Some(&token)).is_none(), "no Bearer prefix");
        assert!(verify("s3cret", None).is_none());
        let expired = mint("s3cret", "customer", "c", None, -5).unwrap();
        assert!(
            verify("s3cret", Some(&format!("Bearer {expired}"))).is_none(),
            "expired"
        );
    }

    #[test]
    fn refuses_a_token_that_is_not_valid_yet() {
        let now = now_seconds();
        let token = |nbf: i64| {
            let claims = serde_json::json!({
                "sub": "c", "role": "customer", "iss": ISSUER, "aud": AUDIENCE,
                "iat": now, "exp": now + 600, "nbf": nbf,
            });
            let token = encode(
                &Header::new(Algorithm::HS256),
                &claims,
                &EncodingKey::from_secret(b"s3cret"),
            )
            .unwrap();
            verify("s3cret", Some(&format!("Bearer {token}")))
        };
        assert!(token(now + 60).is_none(), "nbf a minute ahead");
        assert!(token(now - 1).is_some(), "nbf passed");
    }
}
