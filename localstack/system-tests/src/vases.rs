//! Test support for smart vases: registration through the real handler against the
//! emulator's IoT Core, and vase messages through the real ingest function.

use std::sync::Arc;

use serde_json::{json, Value};

use bouquet_app::domain::Timestamp;
use bouquet_app::iot::Registrar;
use bouquet_iot::{AwsDeviceRegistry, DeviceRegistry};
use ingest_vase_messages::{BatchReport, Ingest};

use crate::{emulator_sdk_config, ApiRequest, ApiResponse, TestCloud};

/// A vase policy on the emulator's IoT Core for one test's registrations. Each call makes a
/// new one: the policy scopes the reconciliation sweep, so a test's sweep never sees the
/// things of tests running beside it.
pub async fn test_vase_policy() -> String {
    let name = format!("testkit-VasePolicy-{}", ulid::Ulid::new());
    let iot = aws_sdk_iot::Client::new(&emulator_sdk_config().await);
    // The template's vase policy: what the local broker's ACL is made of.
    let document = json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "iot:Connect", "Resource": "arn:aws:iot:eu-west-1:123456789012:client/${iot:Connection.Thing.ThingName}"},
        {"Effect": "Allow", "Action": "iot:Publish", "Resource": [
            "arn:aws:iot:eu-west-1:123456789012:topic/vases/${iot:Connection.Thing.ThingName}/heartbeat",
            "arn:aws:iot:eu-west-1:123456789012:topic/vases/${iot:Connection.Thing.ThingName}/telemetry"]},
        {"Effect": "Allow", "Action": "iot:Subscribe", "Resource": "arn:aws:iot:eu-west-1:123456789012:topicfilter/vases/${iot:Connection.Thing.ThingName}/commands"},
        {"Effect": "Allow", "Action": "iot:Receive", "Resource": "arn:aws:iot:eu-west-1:123456789012:topic/vases/${iot:Connection.Thing.ThingName}/commands"}
    ]});
    iot.create_policy()
        .policy_name(&name)
        .policy_document(document.to_string())
        .send()
        .await
        .expect("a test vase policy");
    name
}

/// The emulator's IoT Core behind the registration seam.
pub async fn emulator_registry() -> Arc<dyn DeviceRegistry> {
    Arc::new(AwsDeviceRegistry::new(aws_sdk_iot::Client::new(
        &emulator_sdk_config().await,
    )))
}

/// A vase message as the topic rule forwards it: `payload` plus `vaseId`, `messageType`
/// and `receivedAt`.
pub fn rule_output(vase_id: &str, kind: &str, mut payload: Value, received_at: Timestamp) -> Value {
    payload["vaseId"] = json!(vase_id);
    payload["messageType"] = json!(kind);
    payload["receivedAt"] = json!(received_at.as_millis());
    payload
}

pub fn heartbeat(vase_id: &str, sent_at: Timestamp) -> Value {
    rule_output(
        vase_id,
        "heartbeat",
        json!({ "sentAt": sent_at.to_rfc3339() }),
        sent_at,
    )
}

pub fn reading(vase_id: &str, sent_at: Timestamp, water: f64, temperature: f64) -> Value {
    rule_output(
        vase_id,
        "telemetry",
        json!({ "sentAt": sent_at.to_rfc3339(), "waterLevelPct": water, "temperatureC": temperature, "humidityPct": 60, "lightLux": 800 }),
        sent_at,
    )
}

/// SQS records with these bodies (message ids `m0`, `m1`, ...).
pub fn sqs_records(bodies: &[String]) -> Vec<aws_lambda_events::event::sqs::SqsMessage> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            serde_json::from_value(json!({
                "messageId": format!("m{i}"), "receiptHandle": format!("r{i}"), "body": body,
                "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:test", "awsRegion": "eu-west-1",
            }))
            .expect("an SQS record")
        })
        .collect()
}

/// A registered vase and what it connects with.
#[derive(Clone, Debug)]
pub struct VaseCredentials {
    pub vase_id: String,
    pub certificate_arn: String,
    pub certificate: String,
    pub key: String,
}

impl TestCloud {
    /// Registers a vase for `vendor_id`; returns its id, certificate and private key.
    pub async fn vase_with_credentials(&self, vendor_id: &str) -> VaseCredentials {
        let response = self.register_vase(vendor_id).await;
        assert_eq!(response.status, 201, "{}", response.body);
        let text = |field: &str| {
            response.body[field]
                .as_str()
                .unwrap_or_else(|| panic!("{field} in {}", response.body))
                .to_owned()
        };
        VaseCredentials {
            vase_id: response.body["vase"]["vaseId"]
                .as_str()
                .expect("vase.vaseId")
                .to_owned(),
            certificate_arn: text("certificateArn"),
            certificate: text("certificatePem"),
            key: text("privateKey"),
        }
    }

    /// Registers a vase for `vendor_id` through the real handler (IoT Core on the emulator).
    pub async fn register_vase(&self, vendor_id: &str) -> ApiResponse {
        self.register_vase_with(
            &self.registrar,
            ApiRequest::fixture("register-vase")
                .vendor(vendor_id)
                .path("vendorId", vendor_id)
                .no_idempotency_key(),
        )
        .await
    }

    pub async fn register_vase_with(
        &self,
        registrar: &Registrar,
        request: ApiRequest,
    ) -> ApiResponse {
        let app = crate::with_registrar(&self.app, registrar);
        ApiResponse::from(
            crate::in_process::routes::register_vase::handler(&app, request.build())
                .await
                .expect("handlers always answer"),
        )
    }

    /// A registered vase of `vendor_id`; returns its id.
    pub async fn vase(&self, vendor_id: &str) -> String {
        let response = self.register_vase(vendor_id).await;
        assert_eq!(response.status, 201, "{}", response.body);
        response.body["vase"]["vaseId"]
            .as_str()
            .expect("vase.vaseId")
            .to_owned()
    }

    /// Lists a bouquet standing in `vase_id`; returns its id.
    pub async fn bouquet_in_vase(&self, vendor_id: &str, vase_id: &str) -> String {
        self.list_bouquet(
            vendor_id,
            json!({ "name": "Tulips", "price": { "amount": "20.00", "currency": "EUR" }, "vaseId": vase_id }),
        )
        .await
    }

    /// A shop "Bloom" with three bouquets: two in vases that the ingest function scored 85
    /// (water 20 %) and 100 (water 80 %), both at 20.00, and one at 5.00 in no vase. Returns
    /// `(vendor, scored 85, scored 100, unscored)`.
    pub async fn scored_shop(&self) -> (String, String, String, String) {
        let vendor = self.vendor("Bloom").await;
        let (vase_a, vase_b) = (self.vase(&vendor).await, self.vase(&vendor).await);
        let (a, b) = (
            self.bouquet_in_vase(&vendor, &vase_a).await,
            self.bouquet_in_vase(&vendor, &vase_b).await,
        );
        let unscored = self.bouquet(&vendor, "5.00").await;
        self.send_vase_messages(&[
            reading(&vase_a, crate::T0, 20.0, 18.0),
            reading(&vase_b, crate::T0, 80.0, 18.0),
        ])
        .await;
        (vendor, a, b, unscored)
    }

    /// The ingest function on this test's table, with its own dead-letter queue.
    pub async fn ingest(&self) -> Ingest {
        let sqs = aws_sdk_sqs::Client::new(&emulator_sdk_config().await);
        let url = crate::create_queue(&sqs, &format!("{}-vase-dlq", self.table)).await;
        Ingest::new(self.app.clone(), sqs, url)
    }

    /// Applies vase messages (rule outputs) through the ingest function.
    pub async fn send_vase_messages(&self, bodies: &[Value]) -> BatchReport {
        let bodies: Vec<String> = bodies.iter().map(Value::to_string).collect();
        let (response, report) = self.ingest().await.ingest(sqs_records(&bodies)).await;
        assert!(
            response.batch_item_failures.is_empty(),
            "unexpected failures: {report:?}"
        );
        report
    }

    /// The vase item's attribute `name` as a string (numbers too).
    pub async fn vase_attribute(&self, vase_id: &str, name: &str) -> Option<String> {
        let pk = format!("VASE#{vase_id}");
        self.items()
            .await
            .into_iter()
            .find(|i| {
                i.get("pk").and_then(|p| p.as_s().ok()) == Some(&pk)
                    && i.get("sk").and_then(|s| s.as_s().ok()).map(String::as_str) == Some("VASE")
            })
            .and_then(|i| {
                i.get(name)
                    .and_then(|v| v.as_s().ok().cloned().or_else(|| v.as_n().ok().cloned()))
            })
    }
}
