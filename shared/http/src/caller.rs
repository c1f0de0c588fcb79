//! The caller, as API Gateway's JWT authorizer saw it: claims under
//! `requestContext.authorizer.jwt.claims`. The handler never sees the token itself.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use bouquet_domain::identity::Identity;
pub use bouquet_domain::identity::Role;
use bouquet_domain::{CustomerId, VendorId};

use crate::problem::ApiError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// `sub`: who the caller is. For a customer, also the customer id.
    pub subject: CustomerId,
    pub role: Role,
    /// The vendor a vendor's token acts for.
    pub vendor_id: Option<VendorId>,
}

impl Caller {
    /// Reads the claims, or `None` on a public route (no authorizer ran). Claims that are
    /// present but unusable are a 401: the token was valid but is not one of ours.
    pub fn from_request(request: &Request) -> Result<Option<Caller>, ApiError> {
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
        let identity = Identity::from_claims(|name| claims.get(name).map(String::as_str)).map_err(
            |reason| {
                tracing::info!(%reason, "token claims refused");
                ApiError::Unauthenticated
            },
        )?;
        Ok(Some(Caller {
            subject: identity.subject,
            role: identity.role,
            vendor_id: identity.vendor_id,
        }))
    }

    pub fn require(&self, role: Role) -> Result<&Self, ApiError> {
        if self.role == role {
            Ok(self)
        } else {
            Err(ApiError::Forbidden)
        }
    }

    /// A vendor acting for `vendor_id` (its own shop), else 403.
    pub fn require_vendor(&self, vendor_id: VendorId) -> Result<&Self, ApiError> {
        if self.role == Role::Vendor && self.vendor_id == Some(vendor_id) {
            Ok(self)
        } else {
            Err(ApiError::Forbidden)
        }
    }
}
