use bouquet_app::realtime::ApiGatewayPusher;
use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let sdk = bouquet_app::aws_sdk_config()?;
    let app = bouquet_app::App::from_sdk(&sdk).await?;
    let pusher = ApiGatewayPusher::from_env(&sdk)?;
    lambda_runtime::run(service_fn(|event| {
        ws_subscribe::handler(&app, &pusher, event)
    }))
    .await
}
