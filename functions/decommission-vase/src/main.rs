use bouquet_http::lambda_http::{self, service_fn, Error};
use bouquet_iot::Registrar;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::from_sdk(&sdk).await?;
    let registrar = Registrar::aws(&sdk)?;
    lambda_http::run(service_fn(|request| {
        decommission_vase::handler(&app, &registrar, request)
    }))
    .await
}
