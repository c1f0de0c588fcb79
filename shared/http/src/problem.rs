//! Problems as HTTP answers: each kind of [`ApiError`] (the use cases say which, with their own
//! codes, in `bouquet_app::problem`) gets its one status here, and the problem+json document
//! (RFC 9457) its `status` member; the pipeline sends it (`ctx::problem_response`).

use lambda_http::http::StatusCode;
use serde_json::Value;

pub use bouquet_app::problem::{ApiError, Refusal, Unreadable};

/// The status of each kind of problem.
pub fn status(error: &ApiError) -> StatusCode {
    use StatusCode as S;
    match error {
        ApiError::Invalid(_) | ApiError::Unreadable(Unreadable::Malformed(_)) => S::BAD_REQUEST,
        ApiError::Unreadable(Unreadable::NotJson) => S::UNSUPPORTED_MEDIA_TYPE,
        ApiError::Unreadable(Unreadable::TooLarge(_)) => S::PAYLOAD_TOO_LARGE,
        ApiError::Unauthenticated => S::UNAUTHORIZED,
        ApiError::Forbidden(_) => S::FORBIDDEN,
        ApiError::NotFound(_) => S::NOT_FOUND,
        ApiError::Conflict(_) => S::CONFLICT,
        ApiError::PreconditionFailed(_) => S::PRECONDITION_FAILED,
        ApiError::PreconditionRequired => S::PRECONDITION_REQUIRED,
        ApiError::PaymentRequired(_) => S::PAYMENT_REQUIRED,
        ApiError::Unprocessable(_) => S::UNPROCESSABLE_ENTITY,
        ApiError::RateLimited(_) => S::TOO_MANY_REQUESTS,
        ApiError::Unavailable(_) => S::SERVICE_UNAVAILABLE,
        ApiError::NotImplemented(_) => S::NOT_IMPLEMENTED,
        ApiError::Internal(_) => S::INTERNAL_SERVER_ERROR,
    }
}

/// The problem+json document of `error`.
pub fn document(error: &ApiError) -> Value {
    let mut body = error.problem_members();
    body["status"] = status(error).as_u16().into();
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use bouquet_domain::{BouquetId, DomainError, FieldError, OrderStatus};

    /// Exhaustive: a new kind does not compile here until it has a case below.
    fn kind(error: &ApiError) -> usize {
        match error {
            ApiError::Invalid(_) => 0,
            ApiError::Unreadable(_) => 1,
            ApiError::Unauthenticated => 2,
            ApiError::Forbidden(_) => 3,
            ApiError::NotFound(_) => 4,
            ApiError::Conflict(_) => 5,
            ApiError::PreconditionFailed(_) => 6,
            ApiError::PreconditionRequired => 7,
            ApiError::PaymentRequired(_) => 8,
            ApiError::Unprocessable(_) => 9,
            ApiError::RateLimited(_) => 10,
            ApiError::Unavailable(_) => 11,
            ApiError::NotImplemented(_) => 12,
            ApiError::Internal(_) => 13,
        }
    }
    const KINDS: usize = 14;

    #[test]
    fn every_kind_has_its_status_and_every_problem_its_code() {
        let id = BouquetId::generate();
        let cases: Vec<(ApiError, u16, &str)> = vec![
            (
                ApiError::Invalid(vec![FieldError::new("name", "must not be empty")]),
                400,
                "request.invalid",
            ),
            (ApiError::malformed("not JSON"), 400, "request.invalid"),
            (
                ApiError::Unreadable(Unreadable::NotJson),
                415,
                "request.invalid",
            ),
            (
                ApiError::Unreadable(Unreadable::TooLarge(16384)),
                413,
                "request.too_large",
            ),
            (ApiError::Unauthenticated, 401, "auth.unauthenticated"),
            (ApiError::forbidden(), 403, "auth.forbidden"),
            (ApiError::NotFound("order"), 404, "not_found"),
            (
                DomainError::BouquetUnavailable(vec![id]).into(),
                409,
                "bouquet.unavailable",
            ),
            (
                DomainError::OrderInvalidState(OrderStatus::Paid).into(),
                409,
                "order.invalid_state",
            ),
            (
                ApiError::PreconditionFailed("stale"),
                412,
                "precondition.failed",
            ),
            (ApiError::PreconditionRequired, 428, "precondition.failed"),
            (DomainError::PaymentDeclined.into(), 402, "payment.declined"),
            (
                ApiError::idempotency_key_reused(),
                422,
                "idempotency.key_reused",
            ),
            (ApiError::rate_limited(30), 429, "rate.limited"),
            (ApiError::busy(), 503, "service.busy"),
            (ApiError::deadline_exceeded(), 503, "deadline.exceeded"),
            (ApiError::payment_unavailable(), 503, "payment.unavailable"),
            (ApiError::NotImplemented("no"), 501, "not_implemented"),
            (ApiError::internal("secret detail"), 500, "internal"),
        ];
        let covered: std::collections::BTreeSet<usize> =
            cases.iter().map(|(error, _, _)| kind(error)).collect();
        assert_eq!(covered.len(), KINDS, "every kind has a case");
        for (error, status, code) in cases {
            let problem = document(&error);
            assert_eq!(
                (problem["status"].as_u64(), problem["code"].as_str()),
                (Some(u64::from(status)), Some(code)),
                "{error:?}"
            );
            assert_eq!(
                problem["type"],
                format!("https://bouquet.market/problems/{code}")
            );
            assert!(problem["title"].is_string() && problem["detail"].is_string());
        }
    }
}
