//! Pushing frames to live (WebSocket) connections. [`Pusher`] is the narrow seam the
//! broadcaster uses; [`ApiGatewayPusher`] posts through API Gateway's `@connections`
//! management API (`PostToConnection`), on AWS or on the dev stack's local endpoint; tests
//! wrap it to fail for chosen connections. [`WorkQueue`] carries fan-out work from the
//! broadcaster to its workers (SQS, feature `sqs`).

use aws_sdk_apigatewaymanagement::error::SdkError;
use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionError;
use aws_sdk_apigatewaymanagement::primitives::Blob;
use aws_sdk_apigatewaymanagement::Client;

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// 410: the connection is gone (closed, or never existed); remove it.
    #[error("connection {0} is gone")]
    Gone(String),
    /// 429: API Gateway throttled the call; worth another try after a pause.
    #[error("push to {0} throttled")]
    Throttled(String),
    /// Anything else (the endpoint down, a timeout, a refusal).
    #[error("push to {connection} failed")]
    Failed {
        connection: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Posts one frame to one connection.
#[async_trait::async_trait]
pub trait Pusher: Send + Sync {
    async fn post(&self, connection_id: &str, frame: &[u8]) -> Result<(), PushError>;
}

/// [`Pusher`] on API Gateway's management API.
pub struct ApiGatewayPusher {
    client: Client,
}

#[derive(Debug, thiserror::Error)]
#[error("WEBSOCKET_MANAGEMENT_URL is not set (the WebSocket stage's https://{{api}}.execute-api.{{region}}.amazonaws.com/{{stage}})")]
pub struct EndpointNotSet;

impl ApiGatewayPusher {
    /// The management endpoint is the WebSocket stage's URL (`https://{api}.execute-api.
    /// {region}.amazonaws.com/{stage}`), not a regional service endpoint.
    pub fn new(sdk: &bouquet_aws::SdkConfig, endpoint: &str) -> Self {
        let config = aws_sdk_apigatewaymanagement::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .interceptor(bouquet_aws::XRaySubsegments)
            .build();
        Self {
            client: Client::from_conf(config),
        }
    }

    /// On a client built elsewhere (e.g. with an interceptor); its endpoint must be the
    /// stage's URL.
    pub fn with_client(client: Client) -> Self {
        Self { client }
    }

    /// `WEBSOCKET_MANAGEMENT_URL` from the template's environment.
    pub fn from_env(sdk: &bouquet_aws::SdkConfig) -> Result<Self, EndpointNotSet> {
        let endpoint = std::env::var("WEBSOCKET_MANAGEMENT_URL").map_err(|_| EndpointNotSet)?;
        Ok(Self::new(sdk, &endpoint))
    }
}

#[async_trait::async_trait]
impl Pusher for ApiGatewayPusher {
    async fn post(&self, connection_id: &str, frame: &[u8]) -> Result<(), PushError> {
        match self
            .client
            .post_to_connection()
            .connection_id(connection_id)
            .data(Blob::new(frame))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), PostToConnectionError::GoneException(_)) =>
            {
                Err(PushError::Gone(connection_id.to_owned()))
            }
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), PostToConnectionError::LimitExceededException(_))
                    || e.raw().status().as_u16() == 429 =>
            {
                Err(PushError::Throttled(connection_id.to_owned()))
            }
            Err(error) => Err(PushError::Failed {
                connection: connection_id.to_owned(),
                source: Box::new(error),
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the work queue refused {refused} of {sent} messages")]
pub struct QueueError {
    pub sent: usize,
    pub refused: usize,
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// Where fan-out work goes: `send` to the workers' queue, `park` what failed whole where it can
/// be redriven from (the queue's dead-letter queue). Bodies are JSON documents.
#[async_trait::async_trait]
pub trait WorkQueue: Send + Sync {
    async fn send(&self, bodies: &[String]) -> Result<(), QueueError>;
    /// Sends `body` to the workers' queue, delivered after `delay` (SQS: at most 900 s).
    async fn send_later(&self, body: &str, delay: std::time::Duration) -> Result<(), QueueError>;
    async fn park(&self, bodies: &[String]) -> Result<(), QueueError>;
}

#[cfg(feature = "sqs")]
mod sqs;
#[cfg(feature = "sqs")]
pub use sqs::{SqsWorkQueue, WorkQueueNotSet};
