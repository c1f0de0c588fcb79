//! The WebSocket API's `$connect`, after the authorizer admitted the caller: stores the
//! connection and who holds it (from the authorizer's context).

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_app::App;

pub async fn handler(
    app: &App,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, Error> {
    let context = &event.payload.request_context;
    let connection_id = context
        .connection_id
        .as_deref()
        .ok_or("no connectionId in the request context")?;
    let viewer = bouquet_app::live::viewer_of(&context.authorizer.fields);
    bouquet_app::live::connect(app, connection_id, &viewer, app.clock.now()).await?;
    tracing::info!(%connection_id, ?viewer, "connected");
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = 200;
    Ok(response)
}
