//! The problem table lives with the use cases (`bouquet_app::problem`), each of which maps its
//! own errors into it; the pipeline renders a row as problem+json (`ctx::problem_response`).

pub use bouquet_app::problem::ApiError;
