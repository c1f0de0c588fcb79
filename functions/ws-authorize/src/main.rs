use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let verifier = ws_authorize::Verifier::from_env()?;
    lambda_runtime::run(service_fn(|event| ws_authorize::handler(&verifier, event))).await
}
