use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let publisher = publish_events::Publisher::from_env().await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<_>| {
        bouquet_metrics::flushed(event.context.request_id.clone(), publisher.handle(event))
    }))
    .await
}
