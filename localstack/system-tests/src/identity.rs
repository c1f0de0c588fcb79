//! The template's user pool on the emulator, one per test, and its users signing up and in
//! through the app client as the console does (SignUp, ConfirmSignUp, USER_PASSWORD_AUTH).

use aws_sdk_cognitoidentityprovider::types::{AttributeType, AuthFlowType};
use aws_sdk_cognitoidentityprovider::Client;

use bouquet_template::Template;
use devstack::cognito::LocalUserPool;

pub const PASSWORD: &str = "Correct-horse-battery-9";

/// A user pool of this test's own, created from `template.yaml` (pool, client, groups).
pub struct TestPool {
    pub pool: LocalUserPool,
    pub client: Client,
}

impl TestPool {
    pub async fn new() -> Self {
        let sdk = bouquet_testkit::emulator_sdk_config().await;
        let client = Client::new(&sdk);
        let template = Template::repository().expect("template.yaml");
        let mut names = devstack::provision::Names::new();
        let name = format!("test-{}", ulid::Ulid::new().to_string().to_lowercase());
        devstack::cognito::create_user_pool(&client, &template, &name, &mut names)
            .await
            .expect("the template's user pool can be created");
        let pool = LocalUserPool::from_names(&names).expect("the template has a user pool");
        Self { pool, client }
    }

    /// The Cognito directory on this pool, as `add-vendor-member` builds it.
    pub fn directory(&self) -> bouquet_directory::cognito::CognitoDirectory {
        bouquet_directory::cognito::CognitoDirectory::new(self.client.clone(), &self.pool.id)
    }

    /// Signs `email` up with `attributes` besides the email (the app client's SignUp).
    pub async fn sign_up(&self, email: &str, attributes: &[(&str, &str)]) -> Result<(), String> {
        let mut request = self
            .client
            .sign_up()
            .client_id(&self.pool.client_id)
            .username(email)
            .password(PASSWORD)
            .user_attributes(
                AttributeType::builder()
                    .name("email")
                    .value(email)
                    .build()
                    .unwrap(),
            );
        for (name, value) in attributes {
            request = request.user_attributes(
                AttributeType::builder()
                    .name(*name)
                    .value(*value)
                    .build()
                    .unwrap(),
            );
        }
        request
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_sdk_cognitoidentityprovider::error::DisplayErrorContext(e).to_string())
    }

    /// Confirms the sign-up (the emulator takes any code; Cognito the emailed one).
    pub async fn confirm(&self, email: &str) {
        self.client
            .confirm_sign_up()
            .client_id(&self.pool.client_id)
            .username(email)
            .confirmation_code("123456")
            .send()
            .await
            .expect("confirm sign-up");
    }

    /// Signs in: (ID token, access token).
    pub async fn sign_in(&self, email: &str) -> (String, String) {
        let result = self
            .client
            .initiate_auth()
            .client_id(&self.pool.client_id)
            .auth_flow(AuthFlowType::UserPasswordAuth)
            .auth_parameters("USERNAME", email)
            .auth_parameters("PASSWORD", PASSWORD)
            .send()
            .await
            .expect("sign in")
            .authentication_result
            .expect("tokens");
        (
            result.id_token.expect("an ID token"),
            result.access_token.expect("an access token"),
        )
    }

    /// A user's attributes and groups, as an administrator sees them.
    pub async fn user(&self, email: &str) -> (Vec<(String, String)>, Vec<String>) {
        let user = self
            .client
            .admin_get_user()
            .user_pool_id(&self.pool.id)
            .username(email)
            .send()
            .await
            .expect("the user exists");
        let attributes = user
            .user_attributes()
            .iter()
            .map(|a| {
                (
                    a.name().to_owned(),
                    a.value().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let groups = self
            .client
            .admin_list_groups_for_user()
            .user_pool_id(&self.pool.id)
            .username(email)
            .send()
            .await
            .expect("groups")
            .groups()
            .iter()
            .filter_map(|g| g.group_name().map(str::to_owned))
            .collect();
        (attributes, groups)
    }
}
