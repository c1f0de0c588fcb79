//! Vendor memberships: an administrator makes a user of the directory a member of a shop
//! (`POST /v1/vendors/{vendorId}/members`). The role comes only from the `vendor` group.

use crate::problem::{ApiError, Refusal};
use crate::App;
use bouquet_directory::{DirectoryError, DirectoryUser, UserDirectory};
use bouquet_domain::identity::{Email, VENDOR_GROUP};
use bouquet_domain::{Timestamp, VendorId};
use bouquet_store::{MemberClaim, StoreError};

/// Whether the user had to be invited or existed already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MembershipChange {
    /// A new user, sent an invitation with a temporary password.
    Invited,
    /// An existing user (already a member, or now one).
    Updated,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Membership {
    pub user: DirectoryUser,
    pub vendor_id: VendorId,
    pub change: MembershipChange,
}

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("no such vendor")]
    UnknownVendor,
    #[error("the user already belongs to vendor {0}")]
    OtherVendor(String),
    #[error("the user has not confirmed this email address")]
    Unverified,
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Makes the user with `email` a member of `vendor_id`, inviting them if they have no account.
///
/// Refusals come first and write nothing: no such vendor, a user who has not verified the
/// address (an email alone must not hand a shop to whoever typed it into their account), a
/// member of another shop. Then the email is claimed for this shop in the table (a conditional
/// write: of two shops racing for one user, one wins), and only then is the directory changed:
/// the shop attribute first, the group second, so a call cut off in between grants nothing and
/// a retry finishes it.
pub async fn add_vendor_member(
    app: &App,
    directory: &dyn UserDirectory,
    vendor_id: VendorId,
    email: &Email,
    now: Timestamp,
) -> Result<Membership, MembershipError> {
    let store = &app.store;
    // The shop's standing was the pipeline's (`ShopStanding::ShopInPath`); it must exist.
    if store.vendor(vendor_id, true).await?.is_none() {
        return Err(MembershipError::UnknownVendor);
    }
    let shop = vendor_id.to_string();
    let existing = directory.find(email.as_str()).await?;
    if let Some(user) = &existing {
        if !user.verified {
            return Err(MembershipError::Unverified);
        }
        if let Some(other) = user.vendor_id.as_deref().filter(|v| *v != shop) {
            return Err(MembershipError::OtherVendor(other.to_owned()));
        }
    }
    if let MemberClaim::OtherVendor(other) =
        store.claim_member(email.as_str(), vendor_id, now).await?
    {
        return Err(MembershipError::OtherVendor(other));
    }
    let (mut user, change) = match existing {
        Some(user) => (user, MembershipChange::Updated),
        None => match directory.invite(email.as_str(), &shop).await {
            Ok(user) => (user, MembershipChange::Invited),
            // Invited by this shop's earlier, interrupted call (the claim is this shop's).
            Err(DirectoryError::AlreadyExists) => (
                directory
                    .find(email.as_str())
                    .await?
                    .ok_or_else(|| DirectoryError::Unavailable("the user vanished".into()))?,
                MembershipChange::Updated,
            ),
            Err(error) => return Err(error.into()),
        },
    };
    if user.vendor_id.as_deref() != Some(shop.as_str()) {
        directory.set_vendor(&user.username, &shop).await?;
        user.vendor_id = Some(shop);
    }
    directory.add_to_group(&user.username, VENDOR_GROUP).await?;
    Ok(Membership {
        user,
        vendor_id,
        change,
    })
}

impl From<MembershipError> for ApiError {
    fn from(error: MembershipError) -> Self {
        match error {
            MembershipError::UnknownVendor => ApiError::NotFound("vendor"),
            MembershipError::OtherVendor(vendor) => ApiError::Conflict(Refusal::new(
                "member.other_vendor",
                "Member of another vendor",
                format!("this user already belongs to vendor {vendor}; a user is a member of one shop"),
            )),
            MembershipError::Unverified => ApiError::Conflict(Refusal::new(
                "member.unverified",
                "Member unverified",
                "this user has not confirmed their email address; they must finish signing up (or be invited) first",
            )),
            MembershipError::Directory(DirectoryError::Throttled) => ApiError::busy(),
            error @ MembershipError::Directory(_) => ApiError::internal(error),
            MembershipError::Store(error) => error.into(),
        }
    }
}
