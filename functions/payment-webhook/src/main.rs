use bouquet_http::lambda_http::{self, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let app = bouquet_app::App::from_env().await?;
    let secret = payment_webhook::SigningSecret::from_env().await?;
    lambda_http::run(service_fn(|request| {
        payment_webhook::handler(&app, &secret, request)
    }))
    .await
}
