//! The WebSocket API's `ping` and `$default` routes: `{"type":"pong"}`, or for an action
//! the API does not know, `{"type":"error","code":"request.invalid"}`. No AWS calls: the
//! answer is the route response API Gateway sends back on the connection.

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::json;

/// The function: nothing to build per container.
pub struct Ping;

impl Ping {
    pub async fn from_env() -> Result<Self, Error> {
        Ok(Ping)
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
    ) -> Result<ApiGatewayProxyResponse, Error> {
        handler(event).await
    }
}

pub async fn handler(
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, Error> {
    let frame = match event.payload.request_context.route_key.as_deref() {
        Some("ping") => json!({ "type": "pong" }),
        _ => {
            json!({ "type": "error", "code": "request.invalid", "detail": "unknown action; use subscribe, unsubscribe or ping" })
        }
    };
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = 200;
    response.body = Some(Body::Text(frame.to_string()));
    Ok(response)
}
