//! The caller, as API Gateway's JWT authorizer saw it: claims under
//! `requestContext.authorizer.jwt.claims`. The handler never sees the token itself; what the
//! claims mean, and who may do what, is the domain's `Identity`.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

pub use bouquet_domain::identity::{Identity as Caller, Role};

use crate::problem::ApiError;

/// Reads the claims, or `None` on a public route (no authorizer ran). Claims that are present
/// but unusable are a 401: the token was valid but is not one of ours.
pub fn caller_of(request: &Request) -> Result<Option<Caller>, ApiError> {
    let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref() else {
        return Ok(None);
    };
    let Some(claims) = context
        .authorizer
        .as_ref()
        .and_then(|a| a.jwt.as_ref())
        .map(|jwt| &jwt.claims)
    else {
        return Ok(None);
    };
    Caller::from_claims(|name| claims.get(name).map(String::as_str))
        .map(Some)
        .map_err(|reason| {
            tracing::info!(%reason, "token claims refused");
            ApiError::Unauthenticated
        })
}
