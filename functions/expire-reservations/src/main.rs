use bouquet_app::metrics;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let app = bouquet_app::App::taking_payments(&bouquet_app::aws_sdk_config()?).await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        metrics::flushed(request_id, expire_reservations::handler(&app, event))
    }))
    .await
}
