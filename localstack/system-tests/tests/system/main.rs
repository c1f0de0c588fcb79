//! System tests: the real handlers against the local cloud (the DynamoDB engine and moto), one
//! fresh table per test.
//! Run them with `./localstack/test.sh`, which starts the emulator.

mod abuse;
mod analytics;
mod auditor;
mod bad_input;
mod bouquets;
mod cart;
mod catalogue;
mod delivery;
mod dynamodb_engine;
mod emails;
mod event_schemas;
mod fixtures;
mod hardening;
mod identity;
mod least_privilege;
mod lifecycle;
mod live;
mod local_cloud;
mod orders;
mod outbox;
mod payment;
mod payouts;
mod photos;
mod pipeline;
mod reservation;
mod reviews;
mod schedules;
mod shops;
mod template_consistency;
mod use_case_properties;
mod vase_credentials;
mod vase_mqtt;
mod vases;
mod webhook;
