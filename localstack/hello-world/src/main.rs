//! A hello world on `lambda_runtime`, as its own examples write one (with the same JSON log
//! subscriber every function of the project starts): what a cold start costs before any
//! configuration or AWS client.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

async fn hello(_event: LambdaEvent<Value>) -> Result<Value, Error> {
    Ok(json!({ "statusCode": 200, "body": "hello" }))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    lambda_runtime::run(service_fn(hello)).await
}
