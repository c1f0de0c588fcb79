//! DynamoDB Stream → function, as Lambda's event-source mapping does it, from the
//! template's `DynamoDB` event: shard iterators from `StartingPosition`, batches of
//! `BatchSize`, `FilterCriteria` patterns (records that do not match are skipped, as Lambda
//! does), `ReportBatchItemFailures` (the next batch resumes at the lowest failed sequence
//! number), `BisectBatchOnFunctionError` (a batch whose invocation fails is split in two and
//! the halves are retried in order; splitting does not use up retry attempts),
//! `MaximumRetryAttempts`, then the on-failure SQS destination gets a record of the failing
//! batch and the mapping moves past it.

use std::collections::HashMap;

use aws_lambda_events::event::dynamodb::{
    EventRecord as LambdaEventRecord, StreamRecord as LambdaStreamRecord,
};
use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use serde_json::{json, Value};

use crate::error::{aws, DevError};
use crate::lambda::{Invoke, InvokeError, Resolver};

pub struct StreamMapping {
    pub function: String,
    pub stream_arn: String,
    pub batch_size: i32,
    pub trim_horizon: bool,
    pub filters: Vec<Value>,
    pub max_retries: i64,
    pub bisect_on_error: bool,
    pub on_failure_queue_url: Option<String>,
    /// The function, given a stream event; it answers `{"batchItemFailures": [...]}`.
    pub invoke: Invoke,
    streams: aws_sdk_dynamodbstreams::Client,
    sqs: aws_sdk_sqs::Client,
    /// Per shard: the last sequence number done with (delivered, skipped or given up on).
    checkpoints: HashMap<String, String>,
    /// Failed attempts of the batch starting at a sequence number.
    retries: HashMap<String, i64>,
    /// Per shard, after a bisection: the sizes of the batches still to invoke, the next last.
    splits: HashMap<String, Vec<usize>>,
}

/// Counts of one poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PollReport {
    pub records: usize,
    pub delivered: usize,
    pub filtered_out: usize,
    pub failed_batches: usize,
    pub bisected: usize,
    pub sent_to_on_failure: usize,
    /// Batches throttled: tried again at the next poll, from the same record.
    pub throttled: usize,
}

impl StreamMapping {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        function: String,
        stream_arn: String,
        event: &Value,
        on_failure_queue_url: Option<String>,
        invoke: Invoke,
        streams: aws_sdk_dynamodbstreams::Client,
        sqs: aws_sdk_sqs::Client,
    ) -> Self {
        let p = &event["Properties"];
        let filters = p["FilterCriteria"]["Filters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                f["Pattern"]
                    .as_str()
                    .and_then(|text| serde_json::from_str(text).ok())
            })
            .collect();
        Self {
            function,
            stream_arn,
            batch_size: p["BatchSize"].as_i64().unwrap_or(100) as i32,
            trim_horizon: p["StartingPosition"].as_str() != Some("LATEST"),
            filters,
            max_retries: p["MaximumRetryAttempts"].as_i64().unwrap_or(-1),
            bisect_on_error: p["BisectBatchOnFunctionError"].as_bool().unwrap_or(false),
            on_failure_queue_url,
            invoke,
            streams,
            sqs,
            checkpoints: HashMap::new(),
            retries: HashMap::new(),
            splits: HashMap::new(),
        }
    }

    /// Reads every shard once and delivers what is there; returns what happened.
    pub async fn poll(&mut self) -> Result<PollReport, DevError> {
        let mut report = PollReport::default();
        let description = self
            .streams
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .map_err(aws)?;
        let shards: Vec<String> = description
            .stream_description()
            .map(|d| {
                d.shards()
                    .iter()
                    .filter_map(|s| s.shard_id().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for shard in shards {
            loop {
                let mut request = self
                    .streams
                    .get_shard_iterator()
                    .stream_arn(&self.stream_arn)
                    .shard_id(&shard);
                request = match self.checkpoints.get(&shard) {
                    Some(sequence) => request
                        .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                        .sequence_number(sequence),
                    None if self.trim_horizon => {
                        request.shard_iterator_type(ShardIteratorType::TrimHorizon)
                    }
                    None => request.shard_iterator_type(ShardIteratorType::Latest),
                };
                let iterator = request.send().await.map_err(aws)?.shard_iterator;
                let Some(iterator) = iterator else { break };
                let output = self
                    .streams
                    .get_records()
                    .shard_iterator(iterator)
                    .limit(self.batch_size)
                    .send()
                    .await
                    .map_err(aws)?;
                let records: Vec<Value> = output.records().iter().map(record_json).collect();
                if records.is_empty() {
                    break;
                }
                report.records += records.len();
                let last = records
                    .last()
                    .map(sequence_number)
                    .unwrap_or_default()
                    .to_owned();
                let mut matching: Vec<Value> = records
                    .iter()
                    .filter(|r| {
                        self.filters.is_empty() || self.filters.iter().any(|p| matches(p, r))
                    })
                    .cloned()
                    .collect();
                report.filtered_out += records.len() - matching.len();
                if matching.is_empty() {
                    self.checkpoints.insert(shard.clone(), last);
                    continue;
                }
                // A bisected batch is invoked half by half; done with a half means done up to
                // its last record, not the whole read.
                let split = self.splits.get(&shard).and_then(|s| s.last().copied());
                let last = match split {
                    Some(size) if size < matching.len() => {
                        matching.truncate(size);
                        sequence_number(&matching[size - 1]).to_owned()
                    }
                    _ => last,
                };
                let first = sequence_number(&matching[0]).to_owned();
                let outcome = (self.invoke)(json!({ "Records": matching })).await;
                if matches!(outcome, Err(InvokeError::Throttled)) {
                    // Lambda retries a throttled batch as it is: no attempt used, no split.
                    report.throttled += 1;
                    break;
                }
                let lowest_failed = match &outcome {
                    Ok(response) => response["batchItemFailures"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|f| f["itemIdentifier"].as_str())
                        .min_by(|a, b| sequence_order(a, b))
                        .map(str::to_owned),
                    // A function error fails the whole batch.
                    Err(_) => Some(first.clone()),
                };
                if outcome.is_err() && self.bisect_on_error && matching.len() > 1 {
                    // Split in two and retry the halves in order, first half next.
                    let first_half = matching.len().div_ceil(2);
                    let stack = self.splits.entry(shard.clone()).or_default();
                    if split.is_some() {
                        stack.pop();
                    }
                    stack.extend([matching.len() - first_half, first_half]);
                    report.failed_batches += 1;
                    report.bisected += 1;
                    break;
                }
                match lowest_failed {
                    // At least once: a batch that succeeded is delivered again when the
                    // checkpoint is lost (a fault the soak injects).
                    None if crate::faults::roll(crate::faults::Fault::StreamBatchRedelivered) => {
                        report.delivered += matching.len();
                    }
                    None => {
                        report.delivered += matching.len();
                        self.checkpoints.insert(shard.clone(), last);
                        self.done_with_split(&shard, split.is_some());
                    }
                    Some(failed) => {
                        report.failed_batches += 1;
                        let delivered_before = matching
                            .iter()
                            .take_while(|r| sequence_order(sequence_number(r), &failed).is_lt())
                            .count();
                        report.delivered += delivered_before;
                        // Resume at the failed record: checkpoint the one before it.
                        let before = records
                            .iter()
                            .take_while(|r| sequence_order(sequence_number(r), &failed).is_lt())
                            .last();
                        if let Some(record) = before {
                            self.checkpoints
                                .insert(shard.clone(), sequence_number(record).to_owned());
                        }
                        let attempts = self.retries.entry(failed.clone()).or_default();
                        *attempts += 1;
                        if self.max_retries >= 0 && *attempts > self.max_retries {
                            // Retries exhausted: the on-failure destination is told, and the
                            // mapping moves past what failed so the records behind it flow. A
                            // function error gives up its whole (after bisecting, one-record)
                            // batch; a reported failure only the failing record.
                            let end = if outcome.is_err() {
                                last.clone()
                            } else {
                                failed.clone()
                            };
                            self.give_up(&shard, &failed, &end, &outcome).await?;
                            report.sent_to_on_failure += 1;
                            self.checkpoints.insert(shard.clone(), end);
                            self.done_with_split(&shard, split.is_some());
                        } else if let Some(size) = split {
                            // The records before the failed one are done; the rest of this
                            // half is retried.
                            if let Some(top) =
                                self.splits.get_mut(&shard).and_then(|s| s.last_mut())
                            {
                                *top = size - delivered_before;
                            }
                        }
                        // Lambda retries later; one attempt per poll.
                        break;
                    }
                }
            }
        }
        Ok(report)
    }

    /// A batch of a bisection is done with: the next size on the shard's stack is next.
    fn done_with_split(&mut self, shard: &str, was_split: bool) {
        if was_split {
            if let Some(stack) = self.splits.get_mut(shard) {
                stack.pop();
                if stack.is_empty() {
                    self.splits.remove(shard);
                }
            }
        }
    }

    /// The on-failure destination gets what Lambda sends: which records of which shard.
    async fn give_up(
        &self,
        shard: &str,
        start: &str,
        end: &str,
        outcome: &Result<Value, InvokeError>,
    ) -> Result<(), DevError> {
        let Some(queue) = &self.on_failure_queue_url else {
            return Ok(());
        };
        let body = json!({
            "requestContext": { "condition": "RetryAttemptsExhausted", "functionArn": format!("arn:aws:lambda:local:123456789012:function:{}", self.function) },
            "responseContext": { "response": outcome.as_ref().map(Value::to_string).unwrap_or_else(|e| e.to_string()) },
            "DDBStreamBatchInfo": { "shardId": shard, "startSequenceNumber": start, "endSequenceNumber": end, "streamArn": self.stream_arn },
        });
        self.sqs
            .send_message()
            .queue_url(queue)
            .message_body(body.to_string())
            .send()
            .await
            .map_err(aws)?;
        Ok(())
    }
}

/// Starts a polling task for every `DynamoDB` event of the template; returns their names.
pub fn start_all(
    template: &bouquet_template::Template,
    names: &crate::provision::Names,
    functions: &dyn Resolver,
    sdk: &aws_config::SdkConfig,
) -> Result<Vec<String>, DevError> {
    let mut started = Vec::new();
    for (function, event) in template
        .events_of_type("DynamoDB")
        .map_err(DevError::from)?
    {
        let invoke = functions.require(&function.binary)?;
        let stream = crate::provision::resolve(template, &event["Properties"]["Stream"], names);
        let on_failure = match &event["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]
        {
            Value::Null => None,
            destination => {
                // The destination is a queue ARN; the queue's URL is what SQS calls take.
                let arn = crate::provision::resolve(template, destination, names);
                crate::provision::queue_url_of_arn(names, &arn)
            }
        };
        // Lambda polls a stream's shards four times a second, and waits up to the batching
        // window to fill a batch.
        let window = std::time::Duration::from_secs(
            event["Properties"]["MaximumBatchingWindowInSeconds"]
                .as_u64()
                .unwrap_or(0),
        )
        .max(std::time::Duration::from_millis(250));
        let mut mapping = StreamMapping::new(
            function.binary.clone(),
            stream.clone(),
            &event,
            on_failure,
            invoke,
            aws_sdk_dynamodbstreams::Client::new(sdk),
            aws_sdk_sqs::Client::new(sdk),
        );
        let name = function.binary.clone();
        tokio::spawn(async move {
            loop {
                match mapping.poll().await {
                    Ok(report) if report.records > 0 => {
                        tracing::info!(function = %name, ?report, "stream batch")
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(function = %name, %error, "stream poll failed"),
                }
                tokio::time::sleep(window).await;
            }
        });
        started.push(format!("{} <- {stream}", function.binary));
    }
    Ok(started)
}

/// A stream record's sequence number (empty when absent).
/// Sequence numbers compared as the numbers they are: AWS's are decimal strings of varying
/// length (21 to 40 digits), so as strings "9" would come after "10".
fn sequence_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn sequence_number(record: &Value) -> &str {
    record["dynamodb"]["SequenceNumber"]
        .as_str()
        .unwrap_or_default()
}

/// Lambda's DynamoDB stream record JSON for an SDK record.
/// A stream record as Lambda delivers it, built from `aws_lambda_events`' own type so a
/// drift from what the functions read is a compile error.
fn record_json(record: &aws_sdk_dynamodbstreams::types::Record) -> Value {
    let change = record.dynamodb();
    let image = |map: Option<&HashMap<String, AttributeValue>>| {
        serde_dynamo::Item::from(map.cloned().unwrap_or_default())
    };
    let mut stream_record = LambdaStreamRecord::default();
    stream_record.keys = image(change.and_then(|c| c.keys()));
    stream_record.new_image = image(change.and_then(|c| c.new_image()));
    stream_record.old_image = image(change.and_then(|c| c.old_image()));
    stream_record.sequence_number = change.and_then(|c| c.sequence_number()).map(str::to_owned);
    stream_record.size_bytes = change.and_then(|c| c.size_bytes()).unwrap_or_default();
    stream_record.stream_view_type = change
        .and_then(|c| c.stream_view_type())
        .and_then(|v| serde_json::from_value(json!(v.as_str())).ok());
    if let Some(at) = change
        .and_then(|c| c.approximate_creation_date_time())
        .and_then(|t| chrono::DateTime::from_timestamp(t.secs(), t.subsec_nanos()))
    {
        stream_record.approximate_creation_date_time = at;
    }
    let mut event_record = LambdaEventRecord::default();
    event_record.aws_region = record.aws_region().unwrap_or("eu-west-1").to_owned();
    event_record.change = stream_record;
    event_record.event_id = record.event_id().unwrap_or_default().to_owned();
    event_record.event_name = record
        .event_name()
        .map(|n| n.as_str().to_owned())
        .unwrap_or_default();
    event_record.event_source = Some("aws:dynamodb".into());
    event_record.event_version = Some(record.event_version().unwrap_or("1.1").to_owned());
    event_record.event_source_arn =
        Some("arn:aws:dynamodb:local:123456789012:table/local/stream/local".into());
    serde_json::to_value(event_record).unwrap_or_default()
}

/// Lambda filter patterns (the subset the template uses): an array lists accepted values, an
/// object matches the same key of the record recursively.
pub fn matches(pattern: &Value, record: &Value) -> bool {
    match pattern {
        Value::Object(fields) => fields
            .iter()
            .all(|(key, expected)| matches(expected, &record[key])),
        Value::Array(accepted) => accepted.iter().any(|a| a == record),
        other => other == record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_patterns_select_inserted_event_items() {
        let pattern: Value = serde_json::from_str(
            r#"{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["event"]}}}}"#,
        )
        .unwrap();
        let event = json!({ "eventName": "INSERT", "dynamodb": { "NewImage": { "entity": { "S": "event" } } } });
        assert!(matches(&pattern, &event));
        assert!(!matches(
            &pattern,
            &json!({ "eventName": "MODIFY", "dynamodb": { "NewImage": { "entity": { "S": "event" } } } })
        ));
        assert!(!matches(
            &pattern,
            &json!({ "eventName": "INSERT", "dynamodb": { "NewImage": { "entity": { "S": "order" } } } })
        ));
        assert!(!matches(
            &pattern,
            &json!({ "eventName": "REMOVE", "dynamodb": {} })
        ));
    }

    #[test]
    fn sequence_numbers_compare_as_numbers_whatever_their_length() {
        use std::cmp::Ordering::*;
        assert_eq!(sequence_order("9", "10"), Less);
        assert_eq!(
            sequence_order("100000000000000000009", "99999999999999999999"),
            Greater
        );
        assert_eq!(sequence_order("000123", "123"), Equal);
        assert_eq!(
            sequence_order(
                "49590338271490256608559692538361571095921575989136588898",
                "49590338271490256608559692540925702759324208523137515618"
            ),
            Less
        );
        let mut failed = ["12", "9", "100"];
        failed.sort_by(|a, b| sequence_order(a, b));
        assert_eq!(failed, ["9", "12", "100"]);
    }
}
