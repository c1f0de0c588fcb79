//! The local cloud's own parts (docs/architecture.md): what the AWS emulator does not do.
//!
//! - [`provision`]: creates the resources `template.yaml` declares on `AWS_ENDPOINT_URL`, the
//!   user pool too ([`cognito`]).
//! - [`apigw`] and [`server`]: API Gateway's HTTP API: routes from the template, the JWT
//!   authorizer ([`jwt`]), API Gateway v2 payloads, and the real function handlers
//!   ([`functions`]) behind them; [`edge_cache`]: the CloudFront distribution's caching in
//!   front of it.
//! - [`streams`] and [`queues`]: the DynamoDB Stream and SQS event-source mappings;
//!   [`schedules`]: the template's schedules; [`rules`]: EventBridge rules that target a
//!   function; both invoke asynchronously, retried and then sent to the function's failure
//!   destination ([`async_invoke`]).
//! - [`iot_core`]: IoT Core locally: Eclipse Mosquitto ([`mosquitto`]) admitting the
//!   certificates the emulator issued, active and attached, each vase on its own topics, and
//!   the template's topic rules ([`iot_rules`]) on what it delivers.

pub mod apigw;
pub mod async_invoke;
pub mod bench;
pub mod bench_vases;
pub mod cognito;
pub mod console;
pub mod edge_cache;
pub mod edge_limits;
pub mod error;
pub mod faults;
pub mod iot_core;
pub mod iot_rules;
pub mod jwt;
pub mod lambda;
pub mod mosquitto;
pub mod provision;
pub mod provisioned;
pub mod queues;
pub mod rules;
pub mod runtime_api;
pub mod sandboxes;
pub mod schedules;
pub mod seed;
pub mod server;
pub mod streams;
pub mod tls_proxy;
pub mod watch;
pub mod websocket;
