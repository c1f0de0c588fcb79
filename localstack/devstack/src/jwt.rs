//! The local JWT authorizer. The dev stack mints HS256 tokens signed with `LOCAL_JWT_SECRET`
//! (issuer `bouquet-local`, audience `bouquet-api`) and also trusts the local user pool's.
//! API Gateway passes a valid token's claims to the function as strings under
//! `requestContext.authorizer.jwt.claims`.

use std::collections::HashMap;

use bouquet_authn::Trust;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use crate::cognito::LocalUserPool;

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
    /// With `email_verified`, as a Cognito ID token carries a confirmed sign-up's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    // Cognito's own name for it, not camelCase.
    #[serde(
        rename = "email_verified",
        skip_serializing_if = "std::ops::Not::not",
        default
    )]
    email_verified: bool,
    iss: String,
    aud: String,
    iat: i64,
    exp: i64,
}

fn now_seconds() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Mints a token for `role` that is valid for `ttl_seconds`, with no email: mail is sent
/// for nobody it signs in.
pub fn mint(
    secret: &str,
    role: &str,
    sub: &str,
    vendor_id: Option<&str>,
    ttl_seconds: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    mint_verified(secret, role, sub, vendor_id, None, ttl_seconds)
}

/// Mints a token as [`mint`] does, carrying `email` as verified: the dev stack stands in for
/// the sign-up that confirmed it.
pub fn mint_verified(
    secret: &str,
    role: &str,
    sub: &str,
    vendor_id: Option<&str>,
    email: Option<&str>,
    ttl_seconds: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    let now = now_seconds();
    let claims = Claims {
        sub: sub.to_owned(),
        role: role.to_owned(),
        vendor_id: vendor_id.map(str::to_owned),
        email: email.map(str::to_owned),
        email_verified: email.is_some(),
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

/// What the dev stack's API trusts: its minted tokens and, when the template has one, the
/// local user pool's (RS256, keys from the emulator's JWKS), as the deployed authorizer trusts
/// the pool's.
pub fn verifier(secret: &str, pool: Option<&LocalUserPool>) -> bouquet_authn::Verifier {
    let mut trusts = vec![Trust::secret(ISSUER, AUDIENCE, secret)];
    if let Some(pool) = pool {
        match Trust::jwks(&pool.issuer, &pool.client_id, &pool.jwks_url) {
            Ok(trust) => trusts.push(trust),
            Err(error) => tracing::error!(%error, "the local user pool's tokens will be refused"),
        }
    }
    bouquet_authn::Verifier::new(trusts)
}

/// The claims of `Authorization: Bearer <token>`, as API Gateway passes them; `None` for
/// anything missing, malformed, forged, expired or not valid yet.
pub async fn verify(
    verifier: &bouquet_authn::Verifier,
    authorization: Option<&str>,
) -> Option<HashMap<String, String>> {
    let token = authorization?.strip_prefix("Bearer ")?.trim();
    match verifier.verify(token).await {
        Ok(claims) => Some(claims),
        Err(refused) => {
            tracing::debug!(%refused, "token refused");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `token` verified as it comes in an `Authorization: Bearer` header.
    async fn bearer(
        verifier: &bouquet_authn::Verifier,
        token: &str,
    ) -> Option<HashMap<String, String>> {
        verify(verifier, Some(&format!("Bearer {token}"))).await
    }

    #[tokio::test]
    async fn accepts_its_own_tokens_and_nothing_else() {
        let verifier = verifier("s3cret", None);
        let token = mint(
            "s3cret",
            "vendor",
            "v-user",
            Some("01JF0000000000000000000000"),
            60,
        )
        .unwrap();
        let claims = bearer(&verifier, &token).await.unwrap();
        assert_eq!(claims["role"], "vendor");
        assert_eq!(claims["vendorId"], "01JF0000000000000000000000");
        assert!(!claims.contains_key("email") && !claims.contains_key("email_verified"));
        let verified = mint_verified(
            "s3cret",
            "customer",
            "ana",
            None,
            Some("ana@example.com"),
            60,
        )
        .unwrap();
        let claims = bearer(&verifier, &verified).await.unwrap();
        assert_eq!(
            (claims["email"].as_str(), claims["email_verified"].as_str()),
            ("ana@example.com", "true"),
            "as the authorizer passes a Cognito ID token's: {claims:?}"
        );
        let other = super::verifier("other", None);
        assert!(bearer(&other, &token).await.is_none(), "wrong key");
        assert!(
            verify(&verifier, Some(&token)).await.is_none(),
            "no Bearer prefix"
        );
        assert!(verify(&verifier, None).await.is_none());
        let expired = mint("s3cret", "customer", "c", None, -5).unwrap();
        assert!(bearer(&verifier, &expired).await.is_none(), "expired");
    }
}
