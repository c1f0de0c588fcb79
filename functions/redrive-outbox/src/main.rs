use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let redrive = redrive_outbox::Redrive::from_env().await?;
    lambda_runtime::run(service_fn(|event| redrive.handle(event))).await
}
