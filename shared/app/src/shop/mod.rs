//! Shops: their standing (suspension and reinstatement, checked for every route), their
//! members and their payout accounts.

pub mod members;
pub mod payouts;
pub mod shops;
