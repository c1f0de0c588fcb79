//! The WebSocket API's `$connect` authorizer (Lambda, REQUEST type: WebSocket APIs have no
//! JWT authorizer). Browsers cannot set headers on a WebSocket, so the token comes as
//! `?token=<JWT>`. It is validated as the HTTP API's JWT authorizer does (signature, `iss`,
//! `aud`, `exp`, `nbf`); the caller's role and shop go to the connection as the authorizer's
//! context. No token is an anonymous connection (public channels only); a token that does not
//! validate is refused: the `Unauthorized` error, which API Gateway answers with 401.
//!
//! Validation is `bouquet-authn`'s (the user pool's JWKS; locally also the dev stack's minted
//! tokens), the reading of the claims the domain's `Identity`.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::iam::IamPolicyStatement;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

use bouquet_app::domain::channels::Viewer;
pub use bouquet_authn::{Trust, Verifier};

#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error(transparent)]
    Token(#[from] bouquet_authn::Refused),
    #[error("the token's claims are not a caller of this API: {0}")]
    Claims(#[from] bouquet_app::domain::identity::UnusableClaims),
}

/// Who holds a token: the viewer, when the token expires (`exp`, epoch seconds: private
/// channels stop there) and its subject (`sub`: connections are counted per user).
struct Holder {
    viewer: Viewer,
    exp: Option<String>,
    sub: Option<String>,
}

async fn holder(verifier: &Verifier, token: &str) -> Result<Holder, Refused> {
    let claims = verifier.verify(token).await?;
    let viewer = Viewer::from_claims(|name| claims.get(name).map(String::as_str))?;
    Ok(Holder {
        viewer,
        exp: claims.get("exp").cloned(),
        sub: claims.get("sub").cloned(),
    })
}

/// The function: the token verifier, built once per container.
pub struct Authorizer(Verifier);

impl Authorizer {
    pub async fn from_env() -> Result<Self, Error> {
        Ok(Self(Verifier::from_env()?))
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<ApiGatewayCustomAuthorizerRequestTypeRequest>,
    ) -> Result<ApiGatewayCustomAuthorizerResponse, Error> {
        handler(&self.0, event).await
    }
}

/// Allows the connection with who holds it as the context, or refuses with `Unauthorized`.
pub async fn handler(
    verifier: &Verifier,
    event: LambdaEvent<ApiGatewayCustomAuthorizerRequestTypeRequest>,
) -> Result<ApiGatewayCustomAuthorizerResponse, Error> {
    let request = &event.payload;
    let Holder { viewer, exp, sub } = match request.query_string_parameters.first("token") {
        None | Some("") => Holder {
            viewer: Viewer::Anonymous,
            exp: None,
            sub: None,
        },
        Some(token) => match holder(verifier, token).await {
            Ok(holder) => holder,
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
    response.context = Value::Object(bouquet_app::live::context_of(
        &viewer,
        exp.as_deref(),
        sub.as_deref(),
    ));
    Ok(response)
}
