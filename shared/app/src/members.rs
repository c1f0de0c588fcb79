//! Vendor memberships: an administrator makes a user of the directory a member of a shop
//! (`POST /v1/vendors/{vendorId}/members`). The shop goes into the user's `custom:vendorId`
//! first and the `vendor` group second, so an interrupted call grants nothing and a retry
//! finishes it: the role comes only from the group.

use bouquet_directory::{DirectoryError, DirectoryUser, UserDirectory};
use bouquet_domain::identity::{Email, VENDOR_GROUP};
use bouquet_domain::VendorId;
use bouquet_store::{Store, StoreError};

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
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Makes the user with `email` a member of `vendor_id`, inviting them if they have no account.
pub async fn add_vendor_member(
    store: &Store,
    directory: &dyn UserDirectory,
    vendor_id: VendorId,
    email: &Email,
) -> Result<Membership, MembershipError> {
    if !store.vendor_exists(vendor_id).await? {
        return Err(MembershipError::UnknownVendor);
    }
    let shop = vendor_id.to_string();
    let (user, change) = match directory.find(email.as_str()).await? {
        Some(user) => (user, MembershipChange::Updated),
        None => match directory.invite(email.as_str(), &shop).await {
            Ok(user) => (user, MembershipChange::Invited),
            // Another call invited them in between: carry on with that account.
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
    let user = member_of(directory, user, &shop).await?;
    directory.add_to_group(&user.username, VENDOR_GROUP).await?;
    Ok(Membership {
        user,
        vendor_id,
        change,
    })
}

/// The user with their shop set to `shop`; a member of another shop stays there (moving a
/// vendor's staff between shops is a decision this route does not take).
async fn member_of(
    directory: &dyn UserDirectory,
    mut user: DirectoryUser,
    shop: &str,
) -> Result<DirectoryUser, MembershipError> {
    match user.vendor_id.as_deref() {
        Some(current) if current == shop => Ok(user),
        Some(other) => Err(MembershipError::OtherVendor(other.to_owned())),
        None => {
            directory.set_vendor(&user.username, shop).await?;
            user.vendor_id = Some(shop.to_owned());
            Ok(user)
        }
    }
}
