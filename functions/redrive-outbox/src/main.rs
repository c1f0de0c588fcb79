use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let redrive = redrive_outbox::Redrive::from_env().await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<_>| {
        bouquet_metrics::flushed(event.context.request_id.clone(), redrive.handle(event))
    }))
    .await
}
