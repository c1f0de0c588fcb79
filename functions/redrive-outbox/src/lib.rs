//! Republishes the events parked on the outbox dead-letter queue ([`bouquet_bus::redrive`]).
//! An operator invokes it once the bus is healthy (`aws lambda invoke`; the payload may set
//! `maxRounds`, rounds of 10 events); it answers with what it did.

use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent};
use serde::Deserialize;
use serde_json::{json, Value};

use bouquet_bus::{EventSink, ParkingLot};

/// Kept back from the Lambda deadline to answer.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Request {
    max_rounds: Option<usize>,
}

pub struct Redrive {
    pub sink: Box<dyn EventSink>,
    pub parking: Box<dyn ParkingLot>,
}

impl Redrive {
    pub async fn from_env() -> Result<Self, Error> {
        let bus_name = std::env::var("EVENT_BUS_NAME").map_err(|_| "EVENT_BUS_NAME is not set")?;
        let queue_url = std::env::var("OUTBOX_DEAD_LETTER_QUEUE_URL")
            .map_err(|_| "OUTBOX_DEAD_LETTER_QUEUE_URL is not set")?;
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Ok(Self {
            sink: Box::new(bouquet_bus::EventBridgeSink {
                client: aws_sdk_eventbridge::Client::new(&config),
                bus_name,
            }),
            parking: Box::new(bouquet_bus::SqsParkingLot {
                client: aws_sdk_sqs::Client::new(&config),
                queue_url,
            }),
        })
    }

    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, Error> {
        let request: Request = serde_json::from_value(event.payload).unwrap_or_default();
        let deadline = bouquet_retry::deadline(
            event.context.deadline,
            DEADLINE_MARGIN,
            Duration::from_secs(60),
        );
        let report = bouquet_bus::redrive(
            self.parking.as_ref(),
            self.sink.as_ref(),
            request.max_rounds.unwrap_or(100),
            deadline,
        )
        .await?;
        tracing::info!(?report, "outbox redrive");
        Ok(json!({
            "taken": report.taken,
            "republished": report.republished,
            "stillParked": report.still_parked,
        }))
    }
}
