use bouquet_app::metrics;
use bouquet_app::realtime::ApiGatewayPusher;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::from_sdk(&sdk).await?;
    let pusher = ApiGatewayPusher::from_env(&sdk)?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        metrics::flushed(
            request_id,
            Box::pin(broadcast_events::handler(&app, &pusher, event)),
        )
    }))
    .await
}
