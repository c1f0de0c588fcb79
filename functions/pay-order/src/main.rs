use bouquet_http::lambda_http::{self, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let app = bouquet_app::App::taking_payments(&bouquet_app::aws_sdk_config()?).await?;
    lambda_http::run(service_fn(|request| pay_order::handler(&app, request))).await
}
