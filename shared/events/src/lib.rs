//! The outbox item, the one shape of a domain event on its way out (docs/architecture.md,
//! invariant 5). The store puts it in the same transaction as the change it announces; the
//! table's stream carries it to the publisher, which sends its `detail` to EventBridge as it
//! is; consumers read that same detail. One type, so writer and reader cannot drift.

use std::time::Duration;

use aws_lambda_events::event::dynamodb::EventRecord;
use serde::{Deserialize, Serialize};

use bouquet_domain::events::DomainEvent;

/// The `source` of every published event.
pub const SOURCE: &str = "bouquet.marketplace";
/// The `entity` attribute of outbox items (the stream filter selects on it).
pub const ENTITY: &str = "event";
/// Where the Lambda runtime puts the invocation's X-Ray trace header.
pub const TRACE_ENV: &str = "_X_AMZN_TRACE_ID";
/// Outbox items are deleted by TTL a week after they were written.
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// One domain event as an item of the table, and as the publisher sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub pk: String,
    pub sk: String,
    pub entity: String,
    pub event_id: String,
    /// The EventBridge `detail-type`.
    pub event_name: String,
    pub aggregate_id: String,
    pub aggregate_version: u64,
    /// Milliseconds since the epoch: the EventBridge `Time`.
    pub occurred_at: i64,
    pub correlation_id: String,
    /// The EventBridge detail, exactly as it is published.
    pub detail: String,
    /// TTL, in epoch seconds.
    pub expires_at: i64,
    /// The X-Ray trace of the invocation that wrote the event (Lambda's `_X_AMZN_TRACE_ID`),
    /// given to EventBridge with the event so its consumers join that trace: the stream
    /// itself carries no trace context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_header: Option<String>,
}

impl OutboxItem {
    /// The item of `event`. Events of one aggregate share a partition key and sort by
    /// version, so the stream keeps them in order.
    pub fn new(event: &DomainEvent) -> Result<Self, serde_json::Error> {
        Ok(Self {
            pk: format!("OUTBOX#{}", event.aggregate_id),
            sk: format!("EVENT#{:020}#{}", event.aggregate_version, event.event_id),
            entity: ENTITY.to_owned(),
            event_id: event.event_id.to_string(),
            event_name: event.name().to_owned(),
            aggregate_id: event.aggregate_id.clone(),
            aggregate_version: event.aggregate_version,
            occurred_at: event.occurred_at.as_millis(),
            correlation_id: event.correlation_id.clone(),
            detail: serde_json::to_string(event)?,
            expires_at: event.occurred_at.plus(RETENTION).as_epoch_seconds(),
            trace_header: std::env::var(TRACE_ENV)
                .ok()
                .filter(|header| !header.is_empty()),
        })
    }

    /// What EventBridge counts against its 256 KB limit (detail, detail-type, source, time).
    pub fn published_size(&self) -> usize {
        self.detail.len() + self.event_name.len() + SOURCE.len() + 14
    }
}

/// A stream record, read.
#[derive(Debug)]
pub enum StreamRecord {
    /// An outbox item, with the record's sequence number.
    Event {
        sequence_number: String,
        /// Boxed: an item is several times the size of the other variants.
        item: Box<OutboxItem>,
    },
    /// Another kind of item (the stream filter lets only events through; kept for safety).
    Other,
    /// A record that can never be published: it has to be reported, not dropped.
    Unreadable {
        sequence_number: String,
        error: RecordError,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the record has no sequence number")]
    NoSequenceNumber,
    #[error("the new image is not an outbox item: {0}")]
    NotAnItem(#[from] serde_dynamo::Error),
}

impl StreamRecord {
    /// Reads one DynamoDB Streams record (NEW_IMAGE or NEW_AND_OLD_IMAGES).
    pub fn read(record: EventRecord) -> Self {
        let Some(sequence_number) = record.change.sequence_number else {
            return StreamRecord::Unreadable {
                sequence_number: String::new(),
                error: RecordError::NoSequenceNumber,
            };
        };
        let entity = record.change.new_image.get("entity").cloned();
        if !matches!(entity, Some(serde_dynamo::AttributeValue::S(ref e)) if e == ENTITY) {
            return StreamRecord::Other;
        }
        match serde_dynamo::from_item::<_, OutboxItem>(record.change.new_image) {
            Ok(item) => StreamRecord::Event {
                sequence_number,
                item: Box::new(item),
            },
            Err(error) => StreamRecord::Unreadable {
                sequence_number,
                error: error.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bouquet_domain::events::EventData;
    use bouquet_domain::{Timestamp, VendorId};

    fn event() -> DomainEvent {
        let vendor_id = VendorId::generate();
        DomainEvent::new(
            vendor_id,
            1,
            Timestamp::from_millis(1_796_228_211_000),
            "corr-1",
            EventData::VendorOnboarded {
                vendor_id,
                name: "Fleur".into(),
            },
        )
    }

    #[test]
    fn what_the_store_writes_the_publisher_reads_back_unchanged() {
        let item = OutboxItem::new(&event()).unwrap();
        let image =
            serde_json::to_value(serde_dynamo::to_item::<_, serde_dynamo::Item>(&item).unwrap())
                .unwrap();
        let record: EventRecord = serde_json::from_value(serde_json::json!({
            "eventID": "1", "eventName": "INSERT", "eventSource": "aws:dynamodb",
            "awsRegion": "eu-west-1",
            "dynamodb": { "SequenceNumber": "000000000000000000001", "NewImage": image,
                          "StreamViewType": "NEW_AND_OLD_IMAGES", "SizeBytes": 10 }
        }))
        .unwrap();
        match StreamRecord::read(record) {
            StreamRecord::Event {
                sequence_number,
                item: read,
            } => {
                assert_eq!(sequence_number, "000000000000000000001");
                assert_eq!(*read, item);
            }
            other => panic!("expected an event, got {other:?}"),
        }
        assert!(item.sk.starts_with("EVENT#00000000000000000001#"));
        assert_eq!(item.event_name, "VendorOnboarded");
    }

    #[test]
    fn the_writers_trace_header_travels_with_the_item_and_is_absent_when_untraced() {
        let mut item = OutboxItem::new(&event()).unwrap();
        item.trace_header = None;
        let untraced = serde_dynamo::to_item::<_, serde_dynamo::Item>(&item).unwrap();
        assert!(!untraced.contains_key("traceHeader"));
        item.trace_header = Some(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into(),
        );
        let traced: serde_dynamo::Item = serde_dynamo::to_item(&item).unwrap();
        let read: OutboxItem = serde_dynamo::from_item(traced).unwrap();
        assert_eq!(read.trace_header, item.trace_header);
    }
}
