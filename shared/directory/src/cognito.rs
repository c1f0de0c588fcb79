//! The Cognito user pool as the directory: Admin* calls on one pool, signed by the function's
//! role (IAM grants exactly these four actions on the pool).

use aws_sdk_cognitoidentityprovider::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_cognitoidentityprovider::types::{AttributeType, DeliveryMediumType, UserStatusType};
use aws_sdk_cognitoidentityprovider::Client;

use crate::{DirectoryError, DirectoryUser, UserDirectory, VENDOR_ATTRIBUTE};

pub struct CognitoDirectory {
    client: bouquet_aws::LazyClient<Client>,
    user_pool_id: String,
}

impl CognitoDirectory {
    pub fn new(client: Client, user_pool_id: impl Into<String>) -> Self {
        Self {
            client: bouquet_aws::LazyClient::new(Box::new(move || client)),
            user_pool_id: user_pool_id.into(),
        }
    }

    /// The pool on the function's SDK configuration, its client made at the first call.
    pub fn lazy(sdk: &bouquet_aws::SdkConfig, user_pool_id: impl Into<String>) -> Self {
        Self {
            client: bouquet_aws::lazy_client!(aws_sdk_cognitoidentityprovider, sdk),
            user_pool_id: user_pool_id.into(),
        }
    }
}

fn classify<E, R>(error: SdkError<E, R>) -> DirectoryError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match error.as_service_error().and_then(|e| e.code()) {
        Some("UsernameExistsException") => DirectoryError::AlreadyExists,
        // Request rate, or the pool's email quota (an invitation is an email).
        Some("TooManyRequestsException" | "LimitExceededException") => DirectoryError::Throttled,
        Some(_) => DirectoryError::Refused(Box::new(error)),
        None => DirectoryError::Unavailable(Box::new(error)),
    }
}

fn attribute(name: &str, value: &str) -> Result<AttributeType, DirectoryError> {
    AttributeType::builder()
        .name(name)
        .value(value)
        .build()
        .map_err(|e| DirectoryError::Refused(Box::new(e)))
}

fn user_of(username: String, attributes: &[AttributeType], confirmed: bool) -> DirectoryUser {
    let get = |name: &str| {
        attributes
            .iter()
            .find(|a| a.name() == name)
            .and_then(|a| a.value())
            .map(str::to_owned)
    };
    DirectoryUser {
        user_id: get("sub").unwrap_or_else(|| username.clone()),
        email: get("email").unwrap_or_default(),
        vendor_id: get(VENDOR_ATTRIBUTE),
        verified: confirmed && get("email_verified").as_deref() == Some("true"),
        username,
    }
}

#[async_trait::async_trait]
impl UserDirectory for CognitoDirectory {
    async fn find(&self, email: &str) -> Result<Option<DirectoryUser>, DirectoryError> {
        let email = email.to_owned();

        // The pool signs users in by email, so the email is a username alias.
        match self
            .client
            .admin_get_user()
            .user_pool_id(&self.user_pool_id)
            .username(&email)
            .send()
            .await
        {
            Ok(found) => {
                // CONFIRMED, or FORCE_CHANGE_PASSWORD: invited by an administrator, who
                // vouched for the address.
                let confirmed = matches!(
                    found.user_status(),
                    Some(UserStatusType::Confirmed | UserStatusType::ForceChangePassword)
                );
                Ok(Some(user_of(
                    found.username().to_owned(),
                    found.user_attributes(),
                    confirmed,
                )))
            }
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_user_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(error) => Err(classify(error)),
        }
    }

    async fn invite(&self, email: &str, vendor_id: &str) -> Result<DirectoryUser, DirectoryError> {
        let (email, vendor_id) = (email.to_owned(), vendor_id.to_owned());

        let created = self
            .client
            .admin_create_user()
            .user_pool_id(&self.user_pool_id)
            .username(&email)
            .user_attributes(attribute("email", &email)?)
            // The administrator vouches for the address the invitation goes to.
            .user_attributes(attribute("email_verified", "true")?)
            .user_attributes(attribute(VENDOR_ATTRIBUTE, &vendor_id)?)
            .desired_delivery_mediums(DeliveryMediumType::Email)
            .send()
            .await
            .map_err(classify)?;
        let user = created.user().ok_or_else(|| {
            DirectoryError::Unavailable("AdminCreateUser returned no user".into())
        })?;
        Ok(user_of(
            user.username().unwrap_or(&email).to_owned(),
            user.attributes(),
            true,
        ))
    }

    async fn set_vendor(&self, username: &str, vendor_id: &str) -> Result<(), DirectoryError> {
        let (username, vendor_id) = (username.to_owned(), vendor_id.to_owned());

        self.client
            .admin_update_user_attributes()
            .user_pool_id(&self.user_pool_id)
            .username(&username)
            .user_attributes(attribute(VENDOR_ATTRIBUTE, &vendor_id)?)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn add_to_group(&self, username: &str, group: &str) -> Result<(), DirectoryError> {
        let (username, group) = (username.to_owned(), group.to_owned());

        self.client
            .admin_add_user_to_group()
            .user_pool_id(&self.user_pool_id)
            .username(&username)
            .group_name(&group)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }
}
