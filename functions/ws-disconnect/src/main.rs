use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let app = bouquet_app::App::from_env().await?;
    lambda_runtime::run(service_fn(|event| ws_disconnect::handler(&app, event))).await
}
