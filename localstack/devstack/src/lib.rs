//! The local cloud's own parts (DESIGN.md section 6): what the AWS emulator does not do.
//!
//! - [`provision`]: creates the resources `template.yaml` declares on `AWS_ENDPOINT_URL`.
//! - [`apigw`] and [`server`]: API Gateway's HTTP API: routes from the template, the JWT
//!   authorizer ([`jwt`]), API Gateway v2 payloads, and the real function handlers
//!   ([`functions`]) behind them.

pub mod apigw;
pub mod bench;
pub mod functions;
pub mod jwt;
pub mod provision;
pub mod runtime_api;
pub mod schedules;
pub mod seed;
pub mod server;
pub mod streams;
