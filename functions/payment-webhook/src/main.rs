use bouquet_http::lambda_http::{self, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    // One SDK configuration for the app's clients and the signing secret's parameter.
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::taking_payments(&sdk).await?;
    let secret = payment_webhook::SigningSecret::from_env(&sdk)?;
    lambda_http::run(service_fn(|request| {
        payment_webhook::handler(&app, &secret, request)
    }))
    .await
}
