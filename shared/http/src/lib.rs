//! The request pipeline every HTTP function shares.
//!
//! A function crate declares its route and one `async fn(&Ctx) -> Result<Reply, ApiError>`;
//! [`run`] does the rest, in this order: correlation id, caller claims, idempotency key and
//! request fingerprint, the deadline, the handler, and the mapping of every error to
//! problem+json (in [`problem`], the only place that decides a status code).

mod body;
mod caller;
mod ctx;
mod idempotency;
pub mod owned;
pub mod problem;
mod reply;
mod runner;

pub use caller::{Caller, Role};
pub use ctx::{run, Ctx, KeyedRequest, Route};
pub use idempotency::IdempotencyIntent;
pub use problem::ApiError;
pub use reply::Reply;
#[doc(hidden)]
pub use runner::__runner;

/// Re-exported so function crates need no direct dependency on it.
pub use lambda_http;
