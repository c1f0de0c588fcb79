//! Republishes the events parked on the outbox dead-letter queue ([`bouquet_bus::redrive`]).
//! Its schedule runs it every 5 minutes (a scheduled event asks nothing: all rounds); an
//! operator may also invoke it (`aws lambda invoke`; the payload may set `maxRounds`, rounds of
//! 10 events). It answers with what it did.

use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent};
use serde::Deserialize;
use serde_json::{json, Value};

/// Kept back from the Lambda deadline to answer.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Request {
    max_rounds: Option<usize>,
}

pub struct Redrive {
    pub outbox: bouquet_bus::Outbox,
}

impl Redrive {
    pub async fn from_env() -> Result<Self, Error> {
        let sdk = bouquet_aws::aws_sdk_config()?;
        Ok(Self {
            outbox: bouquet_bus::Outbox::from_env(&sdk)?,
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
            self.outbox.parking.as_ref(),
            self.outbox.sink.as_ref(),
            request.max_rounds.unwrap_or(100),
            deadline,
        )
        .await?;
        bouquet_bus::emf::redrive_run(&report);
        Ok(json!({
            "taken": report.taken,
            "republished": report.republished,
            "stillParked": report.still_parked,
        }))
    }
}
