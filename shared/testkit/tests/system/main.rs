//! System tests: the real handlers against the AWS emulator, one fresh table per test.
//! Run them with `./localstack/test.sh`, which starts the emulator.

mod bad_input;
mod bouquets;
mod catalogue;
mod fixtures;
mod orders;
mod pipeline;
mod reservation;
mod template_consistency;
