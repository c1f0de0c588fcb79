//! What scheduled functions share: the correlation id of a run.

use lambda_http::LambdaEvent;
use serde_json::Value;

/// The scheduled event's own id (EventBridge's, stable for the run), else the invocation's.
pub fn correlation_id(event: &LambdaEvent<Value>) -> String {
    event.payload["id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| event.context.request_id.clone())
}
