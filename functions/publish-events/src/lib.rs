//! The outbox publisher, triggered by the table's stream (filtered to inserted outbox items):
//! decode the records ([`bouquet_events::StreamRecord`]), publish them in order
//! ([`bouquet_bus::publish`]), report the ones that failed in `batchItemFailures` so Lambda
//! retries from there and, after `MaximumRetryAttempts`, sends them to the on-failure
//! destination.

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{Error, LambdaEvent};

use bouquet_bus::{emf, EventSink};
use bouquet_events::StreamRecord;

/// What the function holds per container: the bus it publishes to.
pub struct Publisher {
    pub sink: Box<dyn EventSink>,
}

impl Publisher {
    pub async fn from_env() -> Result<Self, Error> {
        let bus_name = std::env::var("EVENT_BUS_NAME").map_err(|_| "EVENT_BUS_NAME is not set")?;
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Ok(Self {
            sink: Box::new(bouquet_bus::EventBridgeSink {
                client: aws_sdk_eventbridge::Client::new(&config),
                bus_name,
            }),
        })
    }

    pub async fn handle(&self, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse, Error> {
        let records = event.payload.records.into_iter().map(StreamRecord::read);
        let (events, poison) = bouquet_bus::outgoing(records);
        let mut report = bouquet_bus::publish(self.sink.as_ref(), events).await;
        report.records_in += poison.len();
        let mut failures = poison;
        failures.extend(report.failed.iter().cloned());
        emf::outbox_batch(&report, failures.len());
        let mut response = DynamoDbEventResponse::default();
        for sequence_number in failures {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(sequence_number);
            response.batch_item_failures.push(failure);
        }
        Ok(response)
    }
}
