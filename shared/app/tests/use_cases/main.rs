//! The use cases of `bouquet-app`, each on its own table on the AWS emulator (DynamoDB's
//! transactions and conditions are what they rely on), with a manual clock and the simulated
//! payment gateway in memory. `./localstack/test.sh` starts the emulator; without one these
//! tests fail with how to start it, they never skip.

/// `assert!(matches!(value, pattern))` that shows the value when it fails.
macro_rules! assert_matches {
    ($value:expr, $($pattern:tt)+) => {
        assert!(matches!($value, $($pattern)+), "{:?}", $value)
    };
}

mod bouquets;
mod care;
mod cart;
mod delivery;
mod listing;
mod live;
mod maintenance;
mod members;
mod money;
mod notifications;
mod orders;
mod payment;
mod photos;
mod queries;
mod reservation;
mod reviews;
mod settlement;
mod shops;
mod support;
mod sweep;
mod vase_saga;
mod vases;
mod where_and_when;
