//! The outbox publisher, triggered by the table's stream (filtered to inserted outbox items):
//! decode the records ([`bouquet_events::StreamRecord`]), publish them in order with retries
//! inside the invocation's deadline ([`bouquet_bus::publish`]), park whole on the outbox
//! dead-letter queue what still failed ([`bouquet_bus::park_failed`]), and report in
//! `batchItemFailures` only what could be neither published nor parked, so Lambda retries it
//! and finally hands it to the on-failure destination.

use std::time::Duration;

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use lambda_runtime::{Error, LambdaEvent};

use bouquet_bus::emf;
use bouquet_events::StreamRecord;
use bouquet_runtime::batch::Settled;

/// Kept back from the Lambda deadline for parking and answering.
const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

/// What the function holds per container: the bus it publishes to and where it parks.
pub struct Publisher {
    pub outbox: bouquet_bus::Outbox,
}

impl Publisher {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_aws::aws_sdk_config()?;
        Ok(Self {
            outbox: bouquet_bus::Outbox::from_env(&sdk)?,
        })
    }

    pub async fn handle(&self, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse, Error> {
        let deadline = bouquet_retry::deadline(
            event.context.deadline,
            DEADLINE_MARGIN,
            Duration::from_secs(30),
        );
        let received = event.payload.records.len();
        let records = event.payload.records.into_iter().map(StreamRecord::read);
        let (events, poison) = bouquet_bus::outgoing(records);
        let mut report = bouquet_bus::publish(self.outbox.sink.as_ref(), &events, deadline).await;
        bouquet_bus::park_failed(self.outbox.parking.as_ref(), &events, &mut report).await;
        report.records_in += poison.len();
        let mut failures = poison;
        failures.extend(report.failed.iter().cloned());
        emf::outbox_batch(&report, failures.len());
        // The records publish in order as one batch, not one by one: the runner's answer only.
        Ok(Settled::<()>::retrying(received, failures).stream_response())
    }
}
