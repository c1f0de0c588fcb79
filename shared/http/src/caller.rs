//! The caller, as API Gateway's JWT authorizer saw it: claims under
//! `requestContext.authorizer.jwt.claims`. The handler never sees the token itself.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use bouquet_domain::{CustomerId, VendorId};

use crate::problem::ApiError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Customer,
    Vendor,
    Admin,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// `sub`: who the caller is. For a customer, also the customer id.
    pub subject: CustomerId,
    pub role: Role,
    /// `vendorId`: the vendor a vendor's token acts for.
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
        // Cognito prefixes custom attributes with `custom:`.
        let claim = |name: &str| {
            claims
                .get(name)
                .or_else(|| claims.get(&format!("custom:{name}")))
                .map(String::as_str)
        };
        let subject = claim("sub")
            .and_then(|s| CustomerId::parse(s).ok())
            .ok_or(ApiError::Unauthenticated)?;
        let role = match claim("role") {
            Some("customer") => Role::Customer,
            Some("vendor") => Role::Vendor,
            Some("admin") => Role::Admin,
            _ => return Err(ApiError::Unauthenticated),
        };
        let vendor_id = match (role, claim("vendorId")) {
            (Role::Vendor, Some(id)) => {
                Some(VendorId::parse(id).map_err(|_| ApiError::Unauthenticated)?)
            }
            (Role::Vendor, None) => return Err(ApiError::Unauthenticated),
            _ => None,
        };
        Ok(Some(Caller {
            subject,
            role,
            vendor_id,
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
