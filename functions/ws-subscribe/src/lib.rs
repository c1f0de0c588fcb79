//! The WebSocket API's `subscribe` and `unsubscribe` routes:
//! `{"action":"subscribe","channels":[...]}`. Each channel is checked against who holds the
//! connection (`bouquet_domain::channels`); the answer is the route response
//! `{"type":"subscribed","channels":[...]}` (or `unsubscribed`), and each refused channel
//! gets its own `{"type":"error","code":...,"channel":...}` frame, pushed on the connection.

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use lambda_runtime::{Error, LambdaEvent};
use serde::Deserialize;
use serde_json::{json, Value};

use bouquet_app::live::{self, LiveError};
use bouquet_app::App;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    #[allow(dead_code)]
    action: String,
    channels: Vec<String>,
}

fn answer(frame: Value) -> ApiGatewayProxyResponse {
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = 200;
    response.body = Some(Body::Text(frame.to_string()));
    response
}

/// Past the connection's messages a minute (`MAX_LIVE_MESSAGES_PER_MINUTE`).
fn too_fast() -> ApiGatewayProxyResponse {
    answer(
        json!({ "type": "error", "code": "rate.limited", "detail": LiveError::TooFast.to_string() }),
    )
}

fn invalid(detail: &str) -> ApiGatewayProxyResponse {
    answer(json!({ "type": "error", "code": "request.invalid", "detail": detail }))
}

pub async fn handler(
    app: &App,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, Error> {
    let request = &event.payload;
    let context = &request.request_context;
    let connection_id = context
        .connection_id
        .as_deref()
        .ok_or("no connectionId in the request context")?;
    let viewer = live::viewer_of(&context.authorizer.fields);
    let Ok(message) = serde_json::from_str::<Message>(request.body.as_deref().unwrap_or("")) else {
        return Ok(invalid(
            "expected {\"action\":\"subscribe\",\"channels\":[\"catalogue\", ...]}",
        ));
    };
    if context.route_key.as_deref() == Some("unsubscribe") {
        return Ok(
            match live::unsubscribe(
                app,
                connection_id,
                &viewer,
                &message.channels,
                app.clock.now(),
            )
            .await
            {
                Ok(channels) => answer(json!({ "type": "unsubscribed", "channels": channels })),
                Err(LiveError::TooFast) => too_fast(),
                Err(LiveError::ConnectionGone) => invalid("the connection is gone"),
                Err(LiveError::TooManyChannels) => invalid(&LiveError::TooManyChannels.to_string()),
                Err(LiveError::Store(error)) => return Err(error.into()),
            },
        );
    }
    let outcome = match live::subscribe(
        app,
        connection_id,
        &viewer,
        &message.channels,
        live::token_expiry_of(&context.authorizer.fields),
        app.clock.now(),
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(LiveError::TooManyChannels) => {
            return Ok(invalid(&LiveError::TooManyChannels.to_string()))
        }
        Err(LiveError::ConnectionGone) => return Ok(invalid("the connection is gone")),
        Err(LiveError::TooFast) => return Ok(too_fast()),
        Err(LiveError::Store(error)) => return Err(error.into()),
    };
    let pusher = app.ports.pusher().await?;
    let refusals = outcome.refused.iter().map(|(channel, refusal)| async move {
        let frame = json!({ "type": "error", "code": refusal.code(), "channel": channel });
        if let Err(error) = pusher
            .post(connection_id, frame.to_string().as_bytes())
            .await
        {
            tracing::warn!(error = %bouquet_app::aws::describe(&error), "refusal not delivered");
        }
    });
    futures::future::join_all(refusals).await;
    Ok(answer(
        json!({ "type": "subscribed", "channels": outcome.subscribed }),
    ))
}
