//! Smart vases: what a vase sends (heartbeats and readings), the offline sweep, and the
//! registration saga with IoT Core.

pub mod care;
#[cfg(feature = "iot")]
pub mod vase_saga;
pub mod vases;
