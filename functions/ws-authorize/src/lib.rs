//! The WebSocket API's `$connect` authorizer (Lambda, REQUEST type: WebSocket APIs have no
//! JWT authorizer). Browsers cannot set headers on a WebSocket, so the token comes as
//! `?token=<JWT>`. It is validated as the HTTP API's JWT authorizer does (signature, `iss`,
//! `aud`, `exp`, `nbf`); the caller's role and shop go to the connection as the authorizer's
//! context. No token is an anonymous connection (public channels only); a token that does not
//! validate is refused: the `Unauthorized` error, which API Gateway answers with 401.
//!
//! Keys: deployed, the user pool's JWKS (`JWKS_URL`), fetched once per container and again
//! only for a key id it does not know (Cognito rotates keys); locally, the dev stack's HS256
//! key (`LOCAL_JWT_SECRET`, which the template never sets).

use std::collections::HashMap;
use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerResponse,
};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;
use tokio::sync::RwLock;

use aws_lambda_events::iam::IamPolicyStatement;
use bouquet_app::domain::channels::Viewer;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("TLS roots: {0}")]
    Tls(String),
}

#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the token does not validate: {0}")]
    Invalid(String),
    #[error("the token's claims are not a caller of this API")]
    Claims,
    #[error("the signing keys could not be fetched: {0}")]
    Keys(String),
}

type HttpsClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

enum Keys {
    Local(DecodingKey),
    Jwks(Box<Jwks>),
}

struct Jwks {
    url: hyper::Uri,
    client: HttpsClient,
    cached: RwLock<Option<Arc<JwkSet>>>,
}

/// Validates tokens as the HTTP API does.
pub struct Verifier {
    issuer: String,
    audience: String,
    keys: Keys,
}

impl Verifier {
    /// `JWT_ISSUER`, `JWT_AUDIENCE`, and `LOCAL_JWT_SECRET` (dev stack) or `JWKS_URL`.
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &'static str| std::env::var(name).map_err(|_| ConfigError::Missing(name));
        let keys = match std::env::var("LOCAL_JWT_SECRET") {
            Ok(secret) => Keys::Local(DecodingKey::from_secret(secret.as_bytes())),
            Err(_) => {
                let url = var("JWKS_URL")?
                    .parse()
                    .map_err(|_| ConfigError::Missing("JWKS_URL (a URL)"))?;
                let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
                let connector = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_provider_and_native_roots(provider)
                    .map_err(|e| ConfigError::Tls(e.to_string()))?
                    .https_only()
                    .enable_http1()
                    .build();
                let client = hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build(connector);
                Keys::Jwks(Box::new(Jwks {
                    url,
                    client,
                    cached: RwLock::new(None),
                }))
            }
        };
        Ok(Self {
            issuer: var("JWT_ISSUER")?,
            audience: var("JWT_AUDIENCE")?,
            keys,
        })
    }

    /// Validates the dev stack's HS256 tokens (`secret`), as `LOCAL_JWT_SECRET` does.
    pub fn local(secret: &str, issuer: &str, audience: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            keys: Keys::Local(DecodingKey::from_secret(secret.as_bytes())),
        }
    }

    /// The viewer a token stands for.
    pub async fn verify(&self, token: &str) -> Result<Viewer, Refused> {
        let header = decode_header(token).map_err(|e| Refused::Invalid(e.to_string()))?;
        let (key, algorithm) = match &self.keys {
            Keys::Local(key) => (key.clone(), Algorithm::HS256),
            Keys::Jwks(_) => {
                let kid = header
                    .kid
                    .ok_or_else(|| Refused::Invalid("no kid in the header".into()))?;
                (self.jwk(&kid).await?, Algorithm::RS256)
            }
        };
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = decode::<HashMap<String, Value>>(token, &key, &validation)
            .map_err(|e| Refused::Invalid(e.to_string()))?
            .claims;
        let text: HashMap<String, String> = claims
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        Viewer::from_claims(|name| text.get(name).map(String::as_str)).map_err(|_| Refused::Claims)
    }

    async fn jwk(&self, kid: &str) -> Result<DecodingKey, Refused> {
        let Keys::Jwks(jwks) = &self.keys else {
            unreachable!("only the JWKS mode looks keys up");
        };
        let Jwks {
            url,
            client,
            cached,
        } = jwks.as_ref();
        let find = |set: &JwkSet| set.find(kid).map(DecodingKey::from_jwk);
        if let Some(set) = cached.read().await.as_ref() {
            if let Some(key) = find(set) {
                return key.map_err(|e| Refused::Invalid(e.to_string()));
            }
        }
        // Not cached, or a key id it does not know (a rotation): fetch once more.
        let response = client
            .get(url.clone())
            .await
            .map_err(|e| Refused::Keys(e.to_string()))?;
        if !response.status().is_success() {
            return Err(Refused::Keys(format!("{} from {url}", response.status())));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| Refused::Keys(e.to_string()))?
            .to_bytes();
        let set: Arc<JwkSet> =
            Arc::new(serde_json::from_slice(&body).map_err(|e| Refused::Keys(e.to_string()))?);
        *cached.write().await = Some(set.clone());
        find(&set)
            .ok_or_else(|| Refused::Invalid(format!("unknown key id {kid}")))?
            .map_err(|e| Refused::Invalid(e.to_string()))
    }
}

/// Allows the connection with who holds it as the context, or refuses with `Unauthorized`.
pub async fn handler(
    verifier: &Verifier,
    event: LambdaEvent<ApiGatewayCustomAuthorizerRequestTypeRequest>,
) -> Result<ApiGatewayCustomAuthorizerResponse, Error> {
    let request = &event.payload;
    let viewer = match request.query_string_parameters.first("token") {
        None | Some("") => Viewer::Anonymous,
        Some(token) => match verifier.verify(token).await {
            Ok(viewer) => viewer,
            Err(refused) => {
                tracing::info!(%refused, "connection refused");
                // The exact message API Gateway turns into 401.
                return Err("Unauthorized".into());
            }
        },
    };
    let mut statement = IamPolicyStatement::default();
    statement.action = vec!["execute-api:Invoke".into()];
    statement.effect = aws_lambda_events::iam::IamPolicyEffect::Allow;
    statement.resource = vec![request.method_arn.clone().unwrap_or_else(|| "*".into())];
    let mut policy = ApiGatewayCustomAuthorizerPolicy::default();
    policy.version = Some("2012-10-17".into());
    policy.statement = vec![statement];
    let mut response = ApiGatewayCustomAuthorizerResponse::default();
    response.principal_id = Some(match &viewer {
        Viewer::Anonymous => "anonymous".to_owned(),
        Viewer::Customer(id) => id.to_string(),
        Viewer::Vendor(id) => format!("vendor:{id}"),
        Viewer::Admin => "admin".to_owned(),
    });
    response.policy_document = policy;
    response.context = Value::Object(bouquet_app::live::context_of(&viewer));
    Ok(response)
}
