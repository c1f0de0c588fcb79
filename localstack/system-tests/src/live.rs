//! Live updates on the emulator, for the system tests and `bench-live`: the template's
//! WebSocket API on a free port with its functions in process, and optionally the whole
//! chain in front of the broadcaster (the table's stream → the publisher → a bus of this
//! test → the template's live rule → `broadcast-events`), polling in the background.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bouquet_app::realtime::{ApiGatewayPusher, Pusher};
use bouquet_template::Template;
use devstack::lambda::Resolver;
use devstack::provision::{self, Names};
use devstack::websocket::{Limits, LocalWebSocketApi};

use crate::in_process::{typed_invoke, InProcess};
use crate::{emulator_sdk_config, TestCloud};

pub struct LocalLive {
    pub address: SocketAddr,
    pub api: Arc<LocalWebSocketApi>,
    pub functions: InProcess,
    /// The fan-out queues its broadcaster fills and its workers drain.
    pub fanout: FanoutQueues,
}

/// A test's fan-out queue and its dead-letter queue, made from the template (the redrive
/// policy included).
pub struct FanoutQueues {
    pub sqs: aws_sdk_sqs::Client,
    pub url: String,
    pub arn: String,
    pub dead_letter_url: String,
}

impl FanoutQueues {
    pub fn work_queue(&self) -> Arc<dyn bouquet_app::realtime::WorkQueue> {
        Arc::new(bouquet_app::realtime::SqsWorkQueue::new(
            self.sqs.clone(),
            self.url.clone(),
            self.dead_letter_url.clone(),
        ))
    }

    /// `push-frames` in process behind the template's SQS mapping of the fan-out queue.
    pub async fn start_workers(&self, functions: &InProcess) {
        let template = Template::repository().unwrap();
        let (_, event) = template_event(&template, "SQS", "push-frames");
        Arc::new(devstack::queues::QueueMapping::new(
            "push-frames".into(),
            self.url.clone(),
            self.arn.clone(),
            &event,
            functions.require("push-frames").unwrap(),
            self.sqs.clone(),
        ))
        .spawn();
    }

    /// Every body on the dead-letter queue now (received, then left for the visibility
    /// timeout of 0 to show them again).
    pub async fn parked(&self) -> Vec<String> {
        let mut bodies = Vec::new();
        loop {
            let messages = crate::receive_now(&self.sqs, &self.dead_letter_url, Some(30)).await;
            if messages.is_empty() {
                return bodies;
            }
            bodies.extend(messages.into_iter().filter_map(|m| m.body));
        }
    }
}

impl TestCloud {
    /// The WebSocket API, pushing through its own `@connections` (or through `pusher`).
    pub async fn live(&self, pusher: Option<Arc<dyn Pusher>>) -> LocalLive {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let sdk = emulator_sdk_config().await;
        let mut functions = self.in_process(self.app.clone());
        functions.pusher = Some(pusher.unwrap_or_else(|| {
            Arc::new(ApiGatewayPusher::new(&sdk, &format!("http://{address}")))
        }));
        let fanout = self.fanout_queues().await;
        functions.queue = Some(fanout.work_queue());
        fanout.start_workers(&functions).await;
        let api = LocalWebSocketApi::from_template(
            &Template::repository().unwrap(),
            &functions,
            Limits::default(),
        )
        .unwrap()
        .expect("the template has a WebSocket API");
        tokio::spawn(api.clone().serve_on(listener));
        LocalLive {
            address,
            api,
            functions,
            fanout,
        }
    }
}

impl TestCloud {
    /// The template's `FanoutQueue` and `FanoutDeadLetterQueue`, made for this test.
    pub async fn fanout_queues(&self) -> FanoutQueues {
        let template = Template::repository().unwrap();
        let sdk = emulator_sdk_config().await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let stack = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut names = Names::new();
        create_queues(
            &sqs,
            &template,
            &stack,
            &["FanoutDeadLetterQueue", "FanoutQueue"],
            &mut names,
        )
        .await;
        let url = |logical: &str| {
            provision::resolve(&template, &serde_json::json!({ "Ref": logical }), &names)
        };
        FanoutQueues {
            url: url("FanoutQueue"),
            dead_letter_url: url("FanoutDeadLetterQueue"),
            arn: provision::resolve(
                &template,
                &serde_json::json!({ "Fn::GetAtt": ["FanoutQueue", "Arn"] }),
                &names,
            ),
            sqs,
        }
    }
}

impl LocalLive {
    /// Starts the chain in front of the broadcaster, as the template wires it, on this
    /// test's table and a bus of its own.
    pub async fn start_chain(&self, cloud: &TestCloud) {
        let stack = TestStack::with_outbox(cloud, &["LiveFailureQueue"]).await;
        let (template, sdk) = (&stack.template, &stack.sdk);
        // The publisher behind the template's stream mapping.
        let (stream_event, env) = stack.publisher_stream();
        let mut mapping = devstack::streams::StreamMapping::new(
            "publish-events".into(),
            provision::resolve(
                template,
                &stream_event["Properties"]["Stream"],
                &stack.names,
            ),
            &stream_event,
            None,
            publisher(&env, sdk, &stack.sqs, None),
            aws_sdk_dynamodbstreams::Client::new(sdk),
            stack.sqs.clone(),
        );
        tokio::spawn(async move {
            loop {
                let _ = mapping.poll().await;
                // Lambda polls a stream four times a second.
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        // The template's live rule delivering to the broadcaster.
        let (function, rule) = template_event(template, "EventBridgeRule", "broadcast-events");
        let target = devstack::rules::RuleTarget::create(
            template,
            &stack.names,
            &stack.name,
            &function.logical_id,
            &function.binary,
            &rule,
            self.functions.require("broadcast-events").unwrap(),
            sdk,
        )
        .await
        .unwrap();
        tokio::spawn(async move {
            loop {
                let _ = target.poll(1).await;
            }
        });
    }
}

/// The template's queues `logical_ids` (dead-letter queues first), named for `stack`.
pub async fn create_queues(
    sqs: &aws_sdk_sqs::Client,
    template: &Template,
    stack: &str,
    logical_ids: &[&str],
    names: &mut Names,
) {
    for queue in logical_ids {
        provision::create_queue(
            sqs,
            template,
            queue,
            &provision::local_name(stack, queue),
            names,
        )
        .await
        .unwrap();
    }
}

/// A stack of this test's own on the emulator: a fresh name, and the local names of the
/// template's resources made for it so far.
pub struct TestStack {
    pub template: Template,
    pub sdk: aws_config::SdkConfig,
    pub sqs: aws_sdk_sqs::Client,
    pub name: String,
    pub names: Names,
}

impl TestStack {
    /// A new stack whose `MarketTable` is `cloud`'s table.
    pub async fn around(cloud: &TestCloud) -> Self {
        let sdk = emulator_sdk_config().await;
        let mut names = Names::new();
        provision::table_names(&cloud.client, "MarketTable", &cloud.table, &mut names)
            .await
            .unwrap();
        Self {
            template: Template::repository().unwrap(),
            sqs: aws_sdk_sqs::Client::new(&sdk),
            sdk,
            name: format!("t{}", ulid::Ulid::new().to_string().to_lowercase()),
            names,
        }
    }

    /// A new stack around `cloud`'s table with the outbox's resources (the bus, the
    /// publisher's failure and dead-letter queues) and the queues `more_queues`.
    pub async fn with_outbox(cloud: &TestCloud, more_queues: &[&str]) -> Self {
        let mut stack = Self::around(cloud).await;
        stack.create_event_bus().await;
        stack
            .create_queues(&["OutboxFailureQueue", "OutboxDeadLetterQueue"])
            .await;
        stack.create_queues(more_queues).await;
        stack
    }

    /// The template's stream event of `publish-events` and that function's environment,
    /// resolved for this stack.
    pub fn publisher_stream(&self) -> (serde_json::Value, HashMap<String, String>) {
        let (function, event) = template_event(&self.template, "DynamoDB", "publish-events");
        let env = resolved_environment(&self.template, &function, &self.names);
        (event, env)
    }

    /// The template's `MarketEventBus`, made for this stack.
    pub async fn create_event_bus(&mut self) {
        provision::create_event_bus(
            &aws_sdk_eventbridge::Client::new(&self.sdk),
            "MarketEventBus",
            &provision::local_name(&self.name, "MarketEventBus"),
            &mut self.names,
        )
        .await
        .unwrap();
    }

    /// The template's queues `logical_ids` (dead-letter queues first).
    pub async fn create_queues(&mut self, logical_ids: &[&str]) {
        create_queues(
            &self.sqs,
            &self.template,
            &self.name,
            logical_ids,
            &mut self.names,
        )
        .await;
    }
}

/// The template's event of type `kind` (`SQS`, `DynamoDB`, `EventBridgeRule`) that triggers
/// `binary`, with that function.
pub fn template_event(
    template: &Template,
    kind: &str,
    binary: &str,
) -> (bouquet_template::Function, serde_json::Value) {
    template
        .events_of_type(kind)
        .unwrap()
        .into_iter()
        .find(|(f, _)| f.binary == binary)
        .unwrap_or_else(|| panic!("the template has no {kind} event for {binary}"))
}

/// `function`'s environment from the template, resolved to the resources in `names`.
pub fn resolved_environment(
    template: &Template,
    function: &bouquet_template::Function,
    names: &Names,
) -> HashMap<String, String> {
    template
        .environment(function, &|v| provision::resolve(template, v, names))
        .into_iter()
        .collect()
}

/// `publish-events` in process on the bus and the parking queue its environment `env` names;
/// `eventbridge` replaces its EventBridge client (e.g. one with a fault injected).
pub fn publisher(
    env: &HashMap<String, String>,
    sdk: &aws_config::SdkConfig,
    sqs: &aws_sdk_sqs::Client,
    eventbridge: Option<aws_sdk_eventbridge::Client>,
) -> devstack::lambda::Invoke {
    let publisher = Arc::new(publish_events::Publisher {
        outbox: bouquet_bus::Outbox {
            sink: Box::new(bouquet_bus::EventBridgeSink {
                client: eventbridge.unwrap_or_else(|| aws_sdk_eventbridge::Client::new(sdk)),
                bus_name: env["EVENT_BUS_NAME"].clone(),
            }),
            parking: Box::new(bouquet_bus::SqsParkingLot {
                client: sqs.clone(),
                queue_url: env["OUTBOX_DEAD_LETTER_QUEUE_URL"].clone(),
            }),
        },
    });
    typed_invoke(publisher, |publisher, event| async move {
        publisher.handle(event).await
    })
}
