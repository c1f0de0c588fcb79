//! IoT Core's part of the local cloud: the template's vase policy and topic rules, created
//! on the emulator (which stores them but runs neither), and run here:
//! - the broker is Eclipse Mosquitto ([`crate::mosquitto`]): TLS with the certificates the
//!   emulator issues, refused when not active and attached, each vase on its own topics;
//! - [`RuleEngine`]: a bridge client subscribed to every rule's topic filter hands each
//!   message to the topic rules' SQL; a result goes to the rule's SQS action, and to its
//!   error action if that send fails.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use bouquet_template::Template;

use crate::iot_rules::RuleSql;
use bouquet_app::domain::{Clock, SystemClock};

use crate::mosquitto::{IotFiles, Mosquitto};
use crate::provision::{made_or_exists, resolve, Names, ProvisionError};

use crate::error::DevError;

fn aws(error: impl std::error::Error + Send + Sync + 'static) -> ProvisionError {
    ProvisionError::Aws(Box::new(error))
}

/// IoT rule names allow letters, digits and underscores only.
pub fn rule_name(stack: &str, logical_id: &str) -> String {
    format!("{stack}_{logical_id}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// One topic rule as the engine runs it.
pub struct LocalRule {
    pub name: String,
    pub sql: RuleSql,
    /// Queue URLs of the rule's SQS actions.
    pub queues: Vec<String>,
    pub error_queue: Option<String>,
}

/// The policy document with the template's intrinsic functions resolved.
fn policy_document(template: &Template, resource: &Value, names: &Names) -> Value {
    fn walk(template: &Template, value: &Value, names: &Names) -> Value {
        match value {
            Value::Object(map)
                if map.contains_key("Fn::Sub")
                    || map.contains_key("Ref")
                    || map.contains_key("Fn::GetAtt") =>
            {
                Value::String(resolve(template, value, names))
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(template, v, names)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| walk(template, v, names)).collect())
            }
            other => other.clone(),
        }
    }
    walk(template, &resource["Properties"]["PolicyDocument"], names)
}

/// Creates the template's `AWS::IoT::Policy` and `AWS::IoT::TopicRule` resources on the
/// emulator (idempotent) and returns the policy documents by local name and the rules.
pub async fn provision(
    template: &Template,
    stack: &str,
    sdk: &aws_config::SdkConfig,
    names: &mut Names,
) -> Result<(HashMap<String, Value>, Vec<LocalRule>), ProvisionError> {
    let iot = aws_sdk_iot::Client::new(sdk);
    let mut policies = HashMap::new();
    let mut rules = Vec::new();
    for (id, resource) in template.resources_of_type("AWS::IoT::Policy") {
        let name = crate::provision::local_name(stack, id);
        let document = policy_document(template, resource, names);
        let created = iot
            .create_policy()
            .policy_name(&name)
            .policy_document(document.to_string())
            .send()
            .await;
        made_or_exists(created, |e| e.is_resource_already_exists_exception())?;
        names.insert(id.to_owned(), name.clone());
        policies.insert(name, document);
    }
    for (id, resource) in template.resources_of_type("AWS::IoT::TopicRule") {
        let payload = &resource["Properties"]["TopicRulePayload"];
        let sql_text = payload["Sql"]
            .as_str()
            .ok_or_else(|| ProvisionError::Shape(format!("{id}: Sql must be a string")))?;
        let sql =
            RuleSql::parse(sql_text).map_err(|e| ProvisionError::Shape(format!("{id}: {e}")))?;
        let queue = |action: &Value| {
            (!action["Sqs"].is_null()).then(|| resolve(template, &action["Sqs"]["QueueUrl"], names))
        };
        let queues: Vec<String> = payload["Actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(queue)
            .collect();
        let error_queue = queue(&payload["ErrorAction"]);
        let name = rule_name(stack, id);
        let mut actions = Vec::new();
        for url in &queues {
            actions.push(sqs_action(url)?);
        }
        let mut request = aws_sdk_iot::types::TopicRulePayload::builder()
            .sql(sql_text)
            .aws_iot_sql_version(payload["AwsIotSqlVersion"].as_str().unwrap_or("2016-03-23"))
            .rule_disabled(payload["RuleDisabled"].as_bool().unwrap_or(false))
            .set_actions(Some(actions));
        if let Some(url) = &error_queue {
            request = request.error_action(sqs_action(url)?);
        }
        let created = iot
            .create_topic_rule()
            .rule_name(&name)
            .topic_rule_payload(request.build().map_err(aws)?)
            .send()
            .await;
        made_or_exists(created, |e| e.is_resource_already_exists_exception())?;
        names.insert(id.to_owned(), name.clone());
        rules.push(LocalRule {
            name,
            sql,
            queues,
            error_queue,
        });
    }
    Ok((policies, rules))
}

fn sqs_action(queue_url: &str) -> Result<aws_sdk_iot::types::Action, ProvisionError> {
    Ok(aws_sdk_iot::types::Action::builder()
        .sqs(
            aws_sdk_iot::types::SqsAction::builder()
                .queue_url(queue_url)
                .role_arn("arn:aws:iam::123456789012:role/local-iot-rules")
                .use_base64(false)
                .build()
                .map_err(aws)?,
        )
        .build())
}

/// A message the broker delivered to the bridge.
#[derive(Clone, Debug)]
pub struct Published {
    pub topic: String,
    pub payload: bytes::Bytes,
    /// When the bridge received it: the rules' `timestamp()`.
    pub received_at_millis: i64,
}

/// Runs the topic rules on what the broker accepted.
pub struct RuleEngine {
    pub rules: Vec<LocalRule>,
    pub sqs: aws_sdk_sqs::Client,
}

impl RuleEngine {
    /// Applies every matching rule to `messages`; returns how many queue sends succeeded.
    /// Results for one queue go out in `SendMessageBatch` calls of up to 10 (IoT Core sends
    /// one by one; batching only spares the emulator, the queue sees the same messages).
    pub async fn dispatch(&self, messages: &[Published]) -> usize {
        let mut sent = 0;
        for rule in &self.rules {
            let results: Vec<(&Published, String)> = messages
                .iter()
                .filter_map(|m| {
                    rule.sql
                        .apply(&m.topic, &m.payload, m.received_at_millis)
                        .map(|result| (m, result.to_string()))
                })
                .collect();
            for queue in &rule.queues {
                for chunk in results.chunks(10) {
                    let failed = self.send_batch(queue, chunk).await;
                    sent += chunk.len() - failed.len();
                    for (message, body, error) in failed {
                        self.error_action(rule, queue, message, body, &error).await;
                    }
                }
            }
        }
        sent
    }

    /// Sends one chunk; returns the messages that were not sent, with why.
    async fn send_batch<'m>(
        &self,
        queue: &str,
        chunk: &'m [(&'m Published, String)],
    ) -> Vec<(&'m Published, &'m str, String)> {
        let entries: Vec<_> = chunk
            .iter()
            .enumerate()
            .filter_map(|(i, (_, body))| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .build()
                    .ok()
            })
            .collect();
        match self
            .sqs
            .send_message_batch()
            .queue_url(queue)
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(output) => output
                .failed
                .iter()
                .filter_map(|f| {
                    let (m, body) = chunk.get(f.id.parse::<usize>().ok()?)?;
                    Some((*m, body.as_str(), f.message.clone().unwrap_or_default()))
                })
                .collect(),
            Err(error) => {
                let error = bouquet_app::store::describe(&error);
                chunk
                    .iter()
                    .map(|(m, body)| (*m, body.as_str(), error.clone()))
                    .collect()
            }
        }
    }

    /// What IoT Core does when a rule's action fails: the error action gets the failure.
    async fn error_action(
        &self,
        rule: &LocalRule,
        queue: &str,
        message: &Published,
        body: &str,
        error: &str,
    ) {
        tracing::warn!(rule = %rule.name, %error, "topic rule action failed; running its error action");
        let Some(error_queue) = &rule.error_queue else {
            return;
        };
        let failure = serde_json::json!({
            "ruleName": rule.name, "topic": message.topic,
            "failures": [{ "failedAction": "SqsAction", "failedResource": queue, "errorMessage": error }],
            "payload": body,
        });
        let result = self
            .sqs
            .send_message()
            .queue_url(error_queue)
            .message_body(failure.to_string())
            .send()
            .await;
        if let Err(error) = result {
            tracing::error!(rule = %rule.name, error = %bouquet_app::store::describe(&error), "topic rule error action failed too; message dropped");
        }
    }

    /// Dispatches what the broker accepted until the channel closes, up to 100 messages at a
    /// time (whatever has arrived meanwhile).
    pub async fn run(
        self: Arc<Self>,
        mut published: tokio::sync::mpsc::UnboundedReceiver<Published>,
    ) {
        let mut batch = Vec::with_capacity(100);
        while published.recv_many(&mut batch, 100).await > 0 {
            let sent = self.dispatch(&batch).await;
            tracing::debug!(messages = batch.len(), sent, "topic rules applied");
            batch.clear();
        }
    }
}

/// A running local IoT Core: Mosquitto (stopped when this is dropped) and its bridge.
pub struct LocalIotCore {
    pub address: std::net::SocketAddr,
    _broker: Mosquitto,
}

/// Provisions the policy and rules, starts Mosquitto on `address` (port 0: a free one) and
/// the bridge that feeds the rule engine, and returns once the bridge is subscribed.
pub async fn start(
    template: &Template,
    stack: &str,
    sdk: &aws_config::SdkConfig,
    names: &mut Names,
    address: std::net::SocketAddr,
) -> Result<LocalIotCore, DevError> {
    let files = IotFiles::from_env()?;
    let (policies, rules) = provision(template, stack, sdk, names)
        .await
        .map_err(DevError::from)?;
    if policies.len() != 1 {
        return Err(DevError::Unsupported(format!(
            "expected one AWS::IoT::Policy in the template, found {}",
            policies.len()
        )));
    }
    let broker = Mosquitto::start(&files, stack, address).await?;
    let filters: Vec<String> = rules
        .iter()
        .map(|rule| rule.sql.topic_filter().to_owned())
        .collect();
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    bridge(&files, broker.address, filters, sender).await?;
    let engine = Arc::new(RuleEngine {
        rules,
        sqs: aws_sdk_sqs::Client::new(sdk),
    });
    tokio::spawn(engine.run(receiver));
    Ok(LocalIotCore {
        address: broker.address,
        _broker: broker,
    })
}

/// Connects the bridge (the emulator's `devstack-bridge` certificate, which the ACL lets read
/// every topic), subscribes to `filters` at every (re)connection, and forwards what arrives.
/// Returns once the first subscription is acknowledged.
async fn bridge(
    files: &IotFiles,
    broker: std::net::SocketAddr,
    filters: Vec<String>,
    published: tokio::sync::mpsc::UnboundedSender<Published>,
) -> Result<(), DevError> {
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let mut options = MqttOptions::new("devstack-bridge", broker.ip().to_string(), broker.port());
    options.set_transport(crate::mosquitto::tls(
        files.read("ca.pem")?,
        Some((files.read("bridge.pem")?, files.read("bridge.key")?)),
    ));
    options.set_keep_alive(std::time::Duration::from_secs(30));
    let (client, mut events) = AsyncClient::new(options, 100);
    let (ready, subscribed) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut ready = Some(ready);
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    for filter in &filters {
                        if let Err(error) = client.try_subscribe(filter, QoS::AtLeastOnce) {
                            tracing::error!(%filter, %error, "the IoT bridge could not subscribe");
                        }
                    }
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(message))) => {
                    let received_at_millis = SystemClock.now().as_millis();
                    let forwarded = published.send(Published {
                        topic: message.topic,
                        payload: message.payload,
                        received_at_millis,
                    });
                    if forwarded.is_err() {
                        return; // The rule engine stopped: so does the bridge.
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "the IoT bridge lost the broker; reconnecting");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
        }
    });
    // It retries every 200 ms until it is in: 30 s is for a machine whose 2 cores run the test
    // suite beside it (10 s was passed once in CI while other tests' IoT writes made every
    // broker reload its CRL and ACL).
    tokio::time::timeout(std::time::Duration::from_secs(30), subscribed)
        .await
        .map_err(|_| DevError::Unexpected("the IoT bridge did not subscribe within 30 s".into()))?
        .map_err(|_| DevError::Unexpected("the IoT bridge stopped before subscribing".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_are_what_iot_accepts() {
        assert_eq!(
            rule_name("bouquet-local", "VaseHeartbeatRule"),
            "bouquet_local_VaseHeartbeatRule"
        );
    }
}
