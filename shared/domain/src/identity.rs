//! Who a token stands for. Tokens come in two shapes and this is the one place that reads
//! them, for the HTTP pipeline and for the WebSocket authorizer alike:
//!
//! - a Cognito ID token: `sub`, `cognito:groups` (`vendor`, `admin`; no group is a customer),
//!   `custom:vendorId` and `token_use: id`. Groups and `custom:vendorId` are written only by an
//!   administrator (the app client cannot write the attribute), so nobody grants themselves a
//!   role or a shop;
//! - the dev stack's minted token: `sub`, `role`, `vendorId`.
//!
//! Claims arrive as strings: API Gateway's JWT authorizer renders a list claim as
//! `[vendor admin]`, a decoded token as JSON (`["vendor","admin"]`); both are read.
//! `custom:role` is not read: roles come only from groups (or the local minter).

use crate::ids::{CustomerId, VendorId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Customer,
    Vendor,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Customer => "customer",
            Role::Vendor => "vendor",
            Role::Admin => "admin",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        match text {
            "customer" => Some(Role::Customer),
            "vendor" => Some(Role::Vendor),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// The Cognito group that makes a user a vendor's member (with `custom:vendorId`).
pub const VENDOR_GROUP: &str = "vendor";
/// The Cognito group of the marketplace's administrators.
pub const ADMIN_GROUP: &str = "admin";

/// The caller a valid token stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// `sub`: who the caller is. For a customer, also the customer id.
    pub subject: CustomerId,
    pub role: Role,
    /// The shop a vendor acts for; `None` for every other role.
    pub vendor_id: Option<VendorId>,
    /// The address the identity provider verified (`email` with `email_verified: true`), in
    /// the form `text::email` gives; the only address mail may be sent to for this caller.
    pub email: Option<String>,
}

/// The caller may not do this (403).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the caller may not do this")]
pub struct NotAllowed;

impl Identity {
    /// The caller, if its role is `role`.
    pub fn require(&self, role: Role) -> Result<&Self, NotAllowed> {
        if self.role == role {
            Ok(self)
        } else {
            Err(NotAllowed)
        }
    }

    /// Whether the caller may know of a dealing between `customer` and `vendor` (an order,
    /// its review): its customer, the shop's members and administrators. Anyone else is told
    /// it does not exist (404), whatever they asked to do with it.
    pub fn may_read(&self, customer: &CustomerId, vendor: VendorId) -> bool {
        match self.role {
            Role::Customer => self.subject == *customer,
            Role::Vendor => self.vendor_id == Some(vendor),
            Role::Admin => true,
        }
    }

    /// The caller, if it is a vendor acting for `vendor_id` (its own shop).
    pub fn require_vendor(&self, vendor_id: VendorId) -> Result<&Self, NotAllowed> {
        if self.role == Role::Vendor && self.vendor_id == Some(vendor_id) {
            Ok(self)
        } else {
            Err(NotAllowed)
        }
    }
}

/// The claims are present but are not a caller of this API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnusableClaims {
    #[error("no usable sub claim")]
    Subject,
    #[error("token_use is {0:?}; the API takes ID tokens")]
    TokenUse(String),
    #[error("role {0:?} is not customer, vendor or admin")]
    Role(String),
    #[error("a vendor's token has no usable vendorId")]
    VendorId,
}

/// The groups of a `cognito:groups` claim: `[a b]` (API Gateway), `["a","b"]` (JSON) or `a`.
pub fn groups(claim: &str) -> Vec<&str> {
    let inner = claim.trim();
    let inner = inner
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(inner);
    inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|g| g.trim_matches('"'))
        .filter(|g| !g.is_empty())
        .collect()
}

impl Identity {
    /// Reads the claims (`claim(name)` is the claim's string form, as API Gateway passes it).
    pub fn from_claims<'a>(
        claim: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Identity, UnusableClaims> {
        let subject = claim("sub")
            .and_then(|s| CustomerId::parse(s).ok())
            .ok_or(UnusableClaims::Subject)?;
        // An access token has no custom attributes; one token shape keeps one rule.
        if let Some(token_use) = claim("token_use") {
            if token_use != "id" {
                return Err(UnusableClaims::TokenUse(token_use.to_owned()));
            }
        }
        let role = match (claim("cognito:groups"), claim("role")) {
            (Some(list), _) => groups(list)
                .into_iter()
                .filter_map(|g| match g {
                    ADMIN_GROUP => Some(Role::Admin),
                    VENDOR_GROUP => Some(Role::Vendor),
                    _ => None,
                })
                .max()
                .unwrap_or(Role::Customer),
            (None, Some(role)) => {
                Role::parse(role).ok_or_else(|| UnusableClaims::Role(role.into()))?
            }
            // A user of the pool in no group: a customer who signed up.
            (None, None) => Role::Customer,
        };
        let vendor_id = match role {
            Role::Vendor => Some(
                claim("custom:vendorId")
                    .or_else(|| claim("vendorId"))
                    .and_then(|id| VendorId::parse(id).ok())
                    .ok_or(UnusableClaims::VendorId)?,
            ),
            _ => None,
        };
        // An address nobody proved is theirs is not one: mail would go to a stranger.
        let email = claim("email")
            .filter(|_| claim("email_verified") == Some("true"))
            .and_then(|address| crate::text::email(address).ok());
        Ok(Identity {
            subject,
            role,
            vendor_id,
            email,
        })
    }

    /// `text` as an address the marketplace may mail for this caller: well formed and the
    /// address their sign-in verified (compared without case).
    pub fn own_address(&self, text: &str) -> Result<String, &'static str> {
        let address = crate::text::email(text)?;
        match &self.email {
            Some(verified) if verified.eq_ignore_ascii_case(&address) => Ok(verified.clone()),
            Some(_) => Err("must be the verified email address you signed in with"),
            None => Err("sign in with a verified email address to receive mail"),
        }
    }
}

/// An email address as a sign-in name, in the form every mail system and Cognito accept:
/// `local@domain.tld` with a local part of letters, digits and `._%+-`, dot-separated domain
/// labels of letters, digits and `-`, a top-level domain of two or more letters, at most 254
/// characters (trimmed). The domain is lowercased (it is case-insensitive); the local part is
/// kept as written. Rarer addresses RFC 5322 allows (quoted local parts, `{`, `!`...) are
/// refused rather than failing later at the directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Email(String);

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be an email address such as flo@example.com")]
pub struct InvalidEmail;

impl Email {
    pub fn parse(text: &str) -> Result<Email, InvalidEmail> {
        let text = text.trim();
        let (local, domain) = text.split_once('@').ok_or(InvalidEmail)?;
        let local_ok = !local.is_empty()
            && local
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._%+-".contains(&b));
        let labels: Vec<&str> = domain.split('.').collect();
        let labels_ok = labels.len() >= 2
            && labels.iter().all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        let tld_ok = labels
            .last()
            .is_some_and(|t| t.len() >= 2 && t.bytes().all(|b| b.is_ascii_alphabetic()));
        if text.len() > 254 || !local_ok || !labels_ok || !tld_ok {
            return Err(InvalidEmail);
        }
        Ok(Email(format!("{local}@{}", domain.to_lowercase())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const SHOP: &str = "01JF0000000000000000000000";

    fn read(pairs: &[(&str, &str)]) -> Result<Identity, UnusableClaims> {
        let claims: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Identity::from_claims(|name| claims.get(name).map(String::as_str))
    }

    fn vendor() -> Identity {
        Identity {
            subject: CustomerId::parse("5b1c").unwrap(),
            role: Role::Vendor,
            vendor_id: Some(VendorId::parse(SHOP).unwrap()),
            email: None,
        }
    }

    #[test]
    fn only_a_verified_email_is_the_callers_and_only_it_takes_mail() {
        let verified = read(&[
            ("sub", "c-1"),
            ("email", "Ana@Example.COM"),
            ("email_verified", "true"),
        ])
        .unwrap();
        assert_eq!(verified.email.as_deref(), Some("Ana@example.com"));
        assert_eq!(
            verified.own_address(" ana@example.com ").unwrap(),
            "Ana@example.com"
        );
        assert!(verified.own_address("eve@example.com").is_err());
        assert!(verified.own_address("not an address").is_err());
        for unproven in [
            read(&[("sub", "c-1"), ("email", "ana@example.com")]),
            read(&[
                ("sub", "c-1"),
                ("email", "ana@example.com"),
                ("email_verified", "false"),
            ]),
        ] {
            let unproven = unproven.unwrap();
            assert_eq!(unproven.email, None);
            assert!(unproven.own_address("ana@example.com").is_err());
        }
    }

    #[test]
    fn a_cognito_id_token_and_a_minted_token_read_the_same() {
        let cognito = read(&[
            ("sub", "5b1c"),
            ("token_use", "id"),
            ("cognito:groups", "[vendor]"),
            ("custom:vendorId", SHOP),
            ("email", "flo@example.com"),
        ]);
        let minted = read(&[("sub", "5b1c"), ("role", "vendor"), ("vendorId", SHOP)]);
        assert_eq!(cognito, Ok(vendor()));
        assert_eq!(minted, Ok(vendor()));
    }

    #[test]
    fn every_rendering_of_the_groups_claim_reads_the_same() {
        for list in [
            "[vendor]",
            "[\"vendor\"]",
            "vendor",
            "[customers vendor]",
            "[\"a\",\"vendor\"]",
        ] {
            let claims = [
                ("sub", "5b1c"),
                ("cognito:groups", list),
                ("custom:vendorId", SHOP),
            ];
            assert_eq!(read(&claims), Ok(vendor()), "{list}");
        }
        assert_eq!(groups("[vendor admin]"), vec!["vendor", "admin"]);
        assert_eq!(groups("[]"), Vec::<&str>::new());
    }

    #[test]
    fn a_user_in_no_group_is_a_customer_and_admin_outranks_vendor() {
        let customer = read(&[
            ("sub", "c-1"),
            ("token_use", "id"),
            ("email", "c@example.com"),
        ])
        .unwrap();
        assert_eq!((customer.role, customer.vendor_id), (Role::Customer, None));
        let admin = read(&[("sub", "a-1"), ("cognito:groups", "[vendor admin]")]).unwrap();
        assert_eq!((admin.role, admin.vendor_id), (Role::Admin, None));
        let other = read(&[("sub", "c-2"), ("cognito:groups", "[beta-testers]")]).unwrap();
        assert_eq!(other.role, Role::Customer);
    }

    #[test]
    fn claims_a_user_could_write_grant_nothing() {
        // custom:role is never read; a shop without the group is not a vendor.
        let forged = read(&[
            ("sub", "c-1"),
            ("token_use", "id"),
            ("custom:role", "admin"),
            ("custom:vendorId", SHOP),
        ])
        .unwrap();
        assert_eq!((forged.role, forged.vendor_id), (Role::Customer, None));
        // Groups win over a role claim.
        let both = read(&[("sub", "c-1"), ("cognito:groups", "[]"), ("role", "admin")]).unwrap();
        assert_eq!(both.role, Role::Customer);
    }

    #[test]
    fn emails_are_checked_and_their_domain_lowercased() {
        assert_eq!(
            Email::parse(" Flo@Example.COM ").unwrap().as_str(),
            "Flo@example.com"
        );
        for bad in [
            "",
            "flo",
            "@example.com",
            "flo@",
            "flo@example",
            "flo@@example.com",
            "flo @example.com",
            "flo@example..com",
            "flo@.com",
        ] {
            assert_eq!(Email::parse(bad), Err(InvalidEmail), "{bad:?}");
        }
        let long = format!("{}@example.com", "a".repeat(243));
        assert_eq!(long.len(), 255);
        assert_eq!(Email::parse(&long), Err(InvalidEmail));
        assert!(Email::parse(&long[1..]).is_ok());
    }

    proptest::proptest! {
        /// What parses is a canonical address: parsing it again gives itself, it has one `@`,
        /// and its domain is lowercase.
        #[test]
        fn a_parsed_email_is_canonical(text in "[ a-zA-Z0-9._%+{@-]{0,12}@?[a-zA-Z0-9.-]{0,12}") {
            if let Ok(email) = Email::parse(&text) {
                proptest::prop_assert_eq!(Email::parse(email.as_str()), Ok(email.clone()));
                proptest::prop_assert_eq!(email.as_str().matches('@').count(), 1);
                let domain = email.as_str().split('@').nth(1).unwrap();
                proptest::prop_assert_eq!(domain.to_lowercase(), domain);
            }
        }
    }

    #[test]
    fn unusable_claims_are_refused_with_their_reason() {
        assert_eq!(read(&[("role", "customer")]), Err(UnusableClaims::Subject));
        assert_eq!(
            read(&[("sub", "c"), ("token_use", "access")]),
            Err(UnusableClaims::TokenUse("access".into()))
        );
        assert_eq!(
            read(&[("sub", "c"), ("role", "root")]),
            Err(UnusableClaims::Role("root".into()))
        );
        assert_eq!(
            read(&[("sub", "v"), ("cognito:groups", "[vendor]")]),
            Err(UnusableClaims::VendorId)
        );
        assert_eq!(
            read(&[("sub", "v"), ("role", "vendor"), ("vendorId", "not-a-ulid")]),
            Err(UnusableClaims::VendorId)
        );
    }
}
