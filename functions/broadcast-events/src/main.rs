use bouquet_app::realtime::ApiGatewayPusher;
use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let app = bouquet_app::App::from_env().await?;
    let pusher = ApiGatewayPusher::from_env(&bouquet_app::aws_sdk_config().await)?;
    lambda_runtime::run(service_fn(|event| {
        broadcast_events::handler(&app, &pusher, event)
    }))
    .await
}
