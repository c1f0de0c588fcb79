//! What scheduled functions share: the correlation id of a run.

use serde_json::Value;

/// The scheduled event's own id (EventBridge's, stable for the run), else the invocation's.
pub fn correlation_id(event: &Value, request_id: &str) -> String {
    event["id"]
        .as_str()
        .map_or_else(|| request_id.to_owned(), str::to_owned)
}
