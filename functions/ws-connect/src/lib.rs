//! The WebSocket API's `$connect`, after the authorizer admitted the caller: stores the
//! connection and who holds it (from the authorizer's context).

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_app::live::{self, Admitted};
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
    let viewer = live::viewer_of(&context.authorizer.fields);
    let user = context
        .authorizer
        .fields
        .get("user")
        .and_then(serde_json::Value::as_str);
    let limit = live::limit_for(
        &viewer,
        user,
        context.identity.source_ip.as_deref(),
        &app.config,
    );
    let admitted =
        live::connect(app, connection_id, &viewer, limit.as_ref(), app.clock.now()).await?;
    let mut response = ApiGatewayProxyResponse::default();
    if admitted == Admitted::Full {
        // A non-2xx answer of `$connect` refuses the upgrade with that status.
        tracing::info!(%connection_id, limit = ?limit.map(|l| l.key), "connection refused: too many");
        response.status_code = 429;
        response.body = Some(aws_lambda_events::encodings::Body::Text(
            r#"{"message":"Too many connections"}"#.into(),
        ));
        return Ok(response);
    }
    tracing::info!(%connection_id, ?viewer, "connected");
    response.status_code = 200;
    Ok(response)
}
