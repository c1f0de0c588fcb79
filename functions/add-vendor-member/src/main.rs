use bouquet_directory::cognito::CognitoDirectory;
use bouquet_http::lambda_http::{self, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::from_sdk(&sdk).await?;
    // Empty when the stack trusts an external issuer (the template's JwtIssuer).
    let directory = std::env::var("USER_POOL_ID")
        .ok()
        .filter(|id| !id.is_empty())
        .map(|id| CognitoDirectory::lazy(&sdk, id));
    lambda_http::run(service_fn(|request| {
        add_vendor_member::handler(
            &app,
            directory
                .as_ref()
                .map(|d| d as &dyn bouquet_directory::UserDirectory),
            request,
        )
    }))
    .await
}
