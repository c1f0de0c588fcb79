//! The WebSocket API's `$disconnect`: removes the connection and its subscriptions. API
//! Gateway sends it on a best-effort basis; the items' TTL removes what it misses.

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_app::App;

pub async fn handler(
    app: &App,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, Error> {
    let connection_id = event
        .payload
        .request_context
        .connection_id
        .as_deref()
        .ok_or("no connectionId in the request context")?;
    bouquet_app::live::disconnect(app, connection_id).await?;
    tracing::info!(%connection_id, "disconnected");
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = 200;
    Ok(response)
}
