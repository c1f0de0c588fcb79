use bouquet_iot::Registrar;
use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::from_sdk(&sdk).await?;
    let registrar = Registrar::aws(&sdk)?;
    lambda_runtime::run(service_fn(|event| {
        reconcile_vase_things::handler(&app, &registrar, event)
    }))
    .await
}
