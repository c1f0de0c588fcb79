//! IoT Core's part of the local cloud: the template's vase policy and topic rules, created
//! on the emulator (which stores them but runs neither), and enforced here:
//! - [`ThingAuthorizer`]: a client may connect only with the client id of a registered thing
//!   (the emulator's thing registry), and may publish and subscribe only where the policy
//!   allows, with `${iot:Connection.Thing.ThingName}` replaced by its client id. Locally
//!   there is no TLS, so the certificate check of AWS is stood in for by the registry check.
//! - [`RuleEngine`]: every accepted publish is matched against the topic rules' SQL; a
//!   result goes to the rule's SQS action, and to its error action if that send fails.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use bouquet_template::Template;

use crate::iot_rules::RuleSql;
use crate::mqtt::{Authorizer, Permissions, Published};
use crate::provision::{resolve, Names, ProvisionError};

use crate::error::DevError;

const THING_NAME_VARIABLE: &str = "${iot:Connection.Thing.ThingName}";

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
        match iot
            .create_policy()
            .policy_name(&name)
            .policy_document(document.to_string())
            .send()
            .await
        {
            Ok(_) => {}
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_already_exists_exception()) => {}
            Err(error) => return Err(aws(error)),
        }
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
        match created {
            Ok(_) => {}
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_already_exists_exception()) => {}
            Err(error) => return Err(aws(error)),
        }
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

/// Topic filters a policy allows for `action` (`iot:Publish` → `topic/`, `iot:Subscribe`
/// → `topicfilter/`), for the client `client_id`.
pub fn allowed_filters(document: &Value, action: &str, client_id: &str) -> Vec<String> {
    let prefix = if action == "iot:Subscribe" {
        ":topicfilter/"
    } else {
        ":topic/"
    };
    let as_list = |value: &Value| -> Vec<String> {
        match value {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    document["Statement"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["Effect"] == "Allow" && as_list(&s["Action"]).iter().any(|a| a == action))
        .flat_map(|s| as_list(&s["Resource"]))
        .filter_map(|resource| {
            resource
                .split_once(prefix)
                .map(|(_, filter)| filter.replace(THING_NAME_VARIABLE, client_id))
        })
        .collect()
}

/// Whether the policy's `iot:Connect` allows `client_id`.
pub fn may_connect(document: &Value, client_id: &str) -> bool {
    document["Statement"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["Effect"] == "Allow" && s["Action"] == "iot:Connect")
        .filter_map(|s| s["Resource"].as_str())
        .filter_map(|r| {
            r.split_once(":client/")
                .map(|(_, c)| c.replace(THING_NAME_VARIABLE, client_id))
        })
        .any(|allowed| allowed == client_id || allowed == "*")
}

/// Accepts registered things, with the vase policy's permissions.
pub struct ThingAuthorizer {
    pub iot: aws_sdk_iot::Client,
    pub policy: Value,
}

impl Authorizer for ThingAuthorizer {
    fn connect<'a>(&'a self, client_id: &'a str) -> BoxFuture<'a, Option<Permissions>> {
        async move {
            if !may_connect(&self.policy, client_id) {
                return None;
            }
            match self.iot.describe_thing().thing_name(client_id).send().await {
                Ok(_) => Some(Permissions {
                    publish: allowed_filters(&self.policy, "iot:Publish", client_id),
                    subscribe: allowed_filters(&self.policy, "iot:Subscribe", client_id),
                }),
                Err(error) => {
                    tracing::info!(%client_id, error = %bouquet_app::store::describe(&error), "MQTT connect refused: not a registered thing");
                    None
                }
            }
        }
        .boxed()
    }
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
            "ruleName": rule.name, "topic": message.topic, "clientId": message.client_id,
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

/// A running local IoT Core: the broker's address.
pub struct LocalIotCore {
    pub address: std::net::SocketAddr,
}

/// Provisions the policy and rules and starts the broker and the rule engine on `address`.
pub async fn start(
    template: &Template,
    stack: &str,
    sdk: &aws_config::SdkConfig,
    names: &mut Names,
    address: std::net::SocketAddr,
) -> Result<LocalIotCore, DevError> {
    let (policies, rules) = provision(template, stack, sdk, names)
        .await
        .map_err(DevError::from)?;
    let policy = match policies.len() {
        1 => policies.into_values().next().unwrap_or_default(),
        n => {
            return Err(DevError::Unsupported(format!(
                "expected one AWS::IoT::Policy in the template, found {n}"
            )))
        }
    };
    let broker = crate::mqtt::Broker::bind(address)
        .await
        .map_err(DevError::Io)?;
    let address = broker.local_addr();
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let authorizer = Arc::new(ThingAuthorizer {
        iot: aws_sdk_iot::Client::new(sdk),
        policy,
    });
    tokio::spawn(broker.serve(authorizer, sender));
    let engine = Arc::new(RuleEngine {
        rules,
        sqs: aws_sdk_sqs::Client::new(sdk),
    });
    tokio::spawn(engine.run(receiver));
    Ok(LocalIotCore { address })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> Value {
        json!({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "iot:Connect", "Resource": "arn:aws:iot:eu-west-1:123456789012:client/${iot:Connection.Thing.ThingName}"},
            {"Effect": "Allow", "Action": "iot:Publish", "Resource": [
                "arn:aws:iot:eu-west-1:123456789012:topic/vases/${iot:Connection.Thing.ThingName}/heartbeat",
                "arn:aws:iot:eu-west-1:123456789012:topic/vases/${iot:Connection.Thing.ThingName}/telemetry"]},
            {"Effect": "Allow", "Action": "iot:Subscribe", "Resource": "arn:aws:iot:eu-west-1:123456789012:topicfilter/vases/${iot:Connection.Thing.ThingName}/commands"}
        ]})
    }

    #[test]
    fn the_policy_gives_each_vase_its_own_topics() {
        assert_eq!(
            allowed_filters(&policy(), "iot:Publish", "V1"),
            ["vases/V1/heartbeat", "vases/V1/telemetry"]
        );
        assert_eq!(
            allowed_filters(&policy(), "iot:Subscribe", "V1"),
            ["vases/V1/commands"]
        );
        assert!(may_connect(&policy(), "V1"));
    }

    #[test]
    fn rule_names_are_what_iot_accepts() {
        assert_eq!(
            rule_name("bouquet-local", "VaseHeartbeatRule"),
            "bouquet_local_VaseHeartbeatRule"
        );
    }
}
