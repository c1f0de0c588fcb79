//! Bearer tokens validated as API Gateway's JWT authorizer validates them: signature, `iss`,
//! `aud`, `exp` and `nbf`, no leeway. The claims come out as API Gateway hands them to a
//! function (every value a string, a list as `[a b]`), so what reads them reads one shape.
//!
//! Keys: a JWKS (the user pool's), fetched once and again only for a key id it does not know
//! (Cognito rotates keys); or, in the dev stack only, an HS256 secret for its minted tokens.
//! A verifier trusts one or more issuers; the token's own `iss` picks which.

use std::collections::HashMap;
use std::sync::Arc;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::sync::RwLock;

/// Claims as API Gateway passes them (`requestContext.authorizer.jwt.claims`).
pub type Claims = HashMap<String, String>;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{0} is not a URL")]
    Url(String),
    #[error(transparent)]
    Client(#[from] bouquet_https::ClientError),
}

/// Why a token was refused, with the error that said so as the source.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the token does not validate")]
    Invalid(#[source] BoxError),
    #[error("the token's issuer {0:?} is not trusted")]
    Issuer(String),
    #[error("the signing keys could not be fetched")]
    Keys(#[source] BoxError),
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

type HttpClient = bouquet_https::Client<Empty<Bytes>>;

enum Keys {
    Secret(DecodingKey),
    Jwks(Box<Jwks>),
}

struct Jwks {
    url: hyper::Uri,
    client: HttpClient,
    cached: RwLock<Option<Arc<JwkSet>>>,
    /// When the set was last fetched: one fetch at a time, and a key id the set lacked is not
    /// fetched for again until [`REFETCH_AFTER`] (a token with a made-up `kid` would otherwise
    /// make every connect fetch the JWKS).
    fetched: tokio::sync::Mutex<Option<std::time::Instant>>,
}

/// One issuer the verifier accepts tokens from.
pub struct Trust {
    issuer: String,
    audience: String,
    keys: Keys,
}

impl Trust {
    /// Tokens of `issuer` for `audience`, signed by a key of the JWKS at `jwks_url` (RS256).
    /// `https`, or `http` to a loopback address (the emulator's JWKS).
    pub fn jwks(issuer: &str, audience: &str, jwks_url: &str) -> Result<Self, ConfigError> {
        let url: hyper::Uri = jwks_url
            .parse()
            .map_err(|_| ConfigError::Url(jwks_url.to_owned()))?;
        let client = bouquet_https::client_for(&url)?;
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            keys: Keys::Jwks(Box::new(Jwks {
                url,
                client,
                cached: RwLock::new(None),
                fetched: tokio::sync::Mutex::new(None),
            })),
        })
    }

    /// The dev stack's minted tokens: HS256 with a shared secret. Never deployed.
    pub fn secret(issuer: &str, audience: &str, secret: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            keys: Keys::Secret(DecodingKey::from_secret(secret.as_bytes())),
        }
    }
}

/// Validates tokens of the issuers it trusts.
pub struct Verifier {
    trusts: Vec<Trust>,
}

impl Verifier {
    pub fn new(trusts: Vec<Trust>) -> Self {
        Self { trusts }
    }

    /// Deployed: `JWT_ISSUER`, `JWT_AUDIENCE` and `JWKS_URL`. The dev stack also sets
    /// `LOCAL_JWT_SECRET`, `LOCAL_JWT_ISSUER` and `LOCAL_JWT_AUDIENCE` for its minted tokens.
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &'static str| std::env::var(name).map_err(|_| ConfigError::Missing(name));
        let mut trusts = Vec::new();
        if let Ok(secret) = std::env::var("LOCAL_JWT_SECRET") {
            trusts.push(Trust::secret(
                &var("LOCAL_JWT_ISSUER")?,
                &var("LOCAL_JWT_AUDIENCE")?,
                &secret,
            ));
        }
        if std::env::var("JWKS_URL").is_ok() || trusts.is_empty() {
            trusts.push(Trust::jwks(
                &var("JWT_ISSUER")?,
                &var("JWT_AUDIENCE")?,
                &var("JWKS_URL")?,
            )?);
        }
        Ok(Self::new(trusts))
    }

    /// The claims of `token`, if it validates.
    pub async fn verify(&self, token: &str) -> Result<Claims, Refused> {
        // The unverified `iss` only picks the key; the signature and `iss` are then checked.
        let unverified = jsonwebtoken::dangerous::insecure_decode::<HashMap<String, Value>>(token)
            .map_err(|e| Refused::Invalid(e.into()))?;
        let issuer = unverified
            .claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let trust = self
            .trusts
            .iter()
            .find(|t| t.issuer == issuer)
            .ok_or_else(|| Refused::Issuer(issuer.to_owned()))?;
        let header = decode_header(token).map_err(|e| Refused::Invalid(e.into()))?;
        let (key, algorithm) = match &trust.keys {
            Keys::Secret(key) => (key.clone(), Algorithm::HS256),
            Keys::Jwks(jwks) => {
                let kid = header
                    .kid
                    .ok_or_else(|| Refused::Invalid("no kid in the header".into()))?;
                (jwks.key(&kid).await?, Algorithm::RS256)
            }
        };
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&trust.issuer]);
        validation.set_audience(&[&trust.audience]);
        validation.leeway = 0;
        // API Gateway refuses a token that is not valid yet.
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = decode::<HashMap<String, Value>>(token, &key, &validation)
            .map_err(|e| Refused::Invalid(e.into()))?
            .claims;
        Ok(claims
            .into_iter()
            .map(|(name, value)| (name, as_api_gateway_renders(value)))
            .collect())
    }
}

/// A claim's value as API Gateway's HTTP API passes it: strings as they are, a list as
/// `[a b]`, anything else as JSON text.
pub fn as_api_gateway_renders(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Array(items) => {
            let items: Vec<String> = items.into_iter().map(as_api_gateway_renders).collect();
            format!("[{}]", items.join(" "))
        }
        other => other.to_string(),
    }
}

/// How long a JWKS that lacked a key id is trusted to still lack it.
pub const REFETCH_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

impl Jwks {
    async fn key(&self, kid: &str) -> Result<DecodingKey, Refused> {
        let find = |set: &JwkSet| set.find(kid).map(DecodingKey::from_jwk);
        if let Some(set) = self.cached.read().await.as_ref() {
            if let Some(key) = find(set) {
                return key.map_err(|e| Refused::Invalid(e.into()));
            }
        }
        // Not cached, or a key id it does not know (a rotation): fetch once more, one fetch at a
        // time, and not again for an unknown key id within `REFETCH_AFTER`.
        let mut fetched = self.fetched.lock().await;
        if let Some(set) = self.cached.read().await.as_ref() {
            if let Some(key) = find(set) {
                return key.map_err(|e| Refused::Invalid(e.into()));
            }
            if fetched.is_some_and(|at| at.elapsed() < REFETCH_AFTER) {
                return Err(Refused::Invalid(format!("unknown key id {kid}").into()));
            }
        }
        *fetched = Some(std::time::Instant::now());
        let response = self
            .client
            .get(self.url.clone())
            .await
            .map_err(|e| Refused::Keys(e.into()))?;
        if !response.status().is_success() {
            return Err(Refused::Keys(
                format!("{} from {}", response.status(), self.url).into(),
            ));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| Refused::Keys(e.into()))?
            .to_bytes();
        let set: Arc<JwkSet> =
            Arc::new(serde_json::from_slice(&body).map_err(|e| Refused::Keys(e.into()))?);
        *self.cached.write().await = Some(set.clone());
        find(&set)
            .ok_or_else(|| Refused::Invalid(format!("unknown key id {kid}").into()))?
            .map_err(|e| Refused::Invalid(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;

    use super::*;

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn token(secret: &str, claims: Value) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    fn verifier() -> Verifier {
        Verifier::new(vec![Trust::secret("local", "api", "s3cret")])
    }

    #[tokio::test]
    async fn passes_claims_as_api_gateway_renders_them() {
        let claims = verifier()
            .verify(&token(
                "s3cret",
                json!({"sub": "u", "iss": "local", "aud": "api", "exp": now() + 60,
                       "cognito:groups": ["vendor", "admin"], "email_verified": true}),
            ))
            .await
            .unwrap();
        assert_eq!(claims["cognito:groups"], "[vendor admin]");
        assert_eq!(claims["email_verified"], "true");
        assert_eq!(claims["sub"], "u");
    }

    #[tokio::test]
    async fn refuses_what_api_gateway_refuses() {
        let v = verifier();
        let base = json!({"sub": "u", "iss": "local", "aud": "api", "exp": now() + 60});
        let with = |field: &str, value: Value| {
            let mut claims = base.clone();
            claims[field] = value;
            claims
        };
        assert!(v.verify(&token("s3cret", base.clone())).await.is_ok());
        for (why, claims, secret) in [
            ("wrong key", base.clone(), "other"),
            ("expired", with("exp", json!(now() - 5)), "s3cret"),
            ("not valid yet", with("nbf", json!(now() + 60)), "s3cret"),
            ("other audience", with("aud", json!("web")), "s3cret"),
        ] {
            assert!(v.verify(&token(secret, claims)).await.is_err(), "{why}");
        }
        assert!(matches!(
            v.verify(&token("s3cret", with("iss", json!("elsewhere"))))
                .await,
            Err(Refused::Issuer(_))
        ));
        assert!(v.verify("not.a.token").await.is_err());
    }

    /// A JWKS endpoint on loopback that counts its requests and serves an empty key set.
    async fn counting_jwks() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let body = r#"{"keys":[]}"#;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        (url, hits)
    }

    /// A token naming key `kid` of the issuer `pool` (its signature is never reached).
    fn unknown_key_token(kid: &str) -> String {
        use base64::Engine;
        let part = |v: Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
        };
        format!(
            "{}.{}.c2lnbmF0dXJl",
            part(json!({ "alg": "RS256", "typ": "JWT", "kid": kid })),
            part(json!({ "sub": "u", "iss": "pool", "aud": "api", "exp": now() + 60 }))
        )
    }

    #[tokio::test]
    async fn an_unknown_key_id_fetches_the_jwks_once_not_every_time() {
        let (url, hits) = counting_jwks().await;
        let v = Verifier::new(vec![Trust::jwks("pool", "api", &url).unwrap()]);
        // Twenty made-up key ids, some at once: the set is fetched once (it was not cached)
        // and, lacking them, not again within `REFETCH_AFTER`.
        let tokens: Vec<String> = (0..20)
            .map(|i| unknown_key_token(&format!("made-up-{i}")))
            .collect();
        let mut refused = futures::future::join_all(tokens[..10].iter().map(|t| v.verify(t))).await;
        for token in &tokens[10..] {
            refused.push(v.verify(token).await);
        }
        assert!(
            refused
                .iter()
                .all(|r| matches!(r, Err(Refused::Invalid(_)))),
            "{refused:?}"
        );
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
