//! The one problem table: every status, stable code (docs/contract.md, Errors) and title a
//! client can be answered with, and the problem+json document of each.
//!
//! Each use case's error says which row it is by its own `From<…> for ApiError`, next to the
//! error in its module: adding an error or a use case edits no central file; adding a *code*
//! adds a row here. The HTTP pipeline (`bouquet-http`) only renders what this decides.

use http::StatusCode;
use serde_json::{json, Value};

use bouquet_domain::identity::NotAllowed;
use bouquet_domain::{BouquetId, DomainError, FieldError, OrderStatus};
use bouquet_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error("{0}")]
    Malformed(String),
    #[error("the body must be JSON (application/json)")]
    UnsupportedMediaType,
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("a valid bearer token is required")]
    Unauthenticated,
    #[error("the caller may not do this")]
    Forbidden,
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error("bouquets are not available")]
    BouquetUnavailable(Vec<BouquetId>),
    #[error("the bouquet can only be changed or withdrawn while it is available")]
    BouquetNotAvailableForChange,
    #[error("all bouquets must come from one vendor")]
    VendorMismatch,
    #[error("the reservation has expired")]
    ReservationExpired,
    #[error("you already hold bouquets with {0} orders; pay, cancel or let one expire first")]
    ReservationLimit(u32),
    #[error("the order is {0}")]
    OrderInvalidState(OrderStatus),
    #[error("a payment for this order is in progress; retry shortly")]
    PaymentInProgress,
    #[error("{}", delivery_required(.0.as_deref()))]
    DeliveryRequired(Option<String>),
    /// A paid order's new delivery details cost another fee than the one charged.
    #[error("{0}")]
    DeliveryFeeChanged(String),
    /// A review refused by its rules (issue 42): the code names which.
    #[error("{1}")]
    Review(&'static str, String),
    /// Only the order's customer reviews it, only its shop answers, only an admin hides.
    #[error("{0}")]
    ReviewNotAllowed(String),
    #[error("the payment was declined")]
    PaymentDeclined,
    #[error("the payment gateway gave no answer; retry with the same Idempotency-Key, you will be charged at most once")]
    PaymentUnavailable,
    #[error("the cart holds bouquets of one vendor only; remove the others first")]
    CartVendorMismatch,
    #[error("the cart is full (at most {0} bouquets)")]
    CartFull(usize),
    #[error("the cart is empty")]
    CartEmpty,
    #[error("{0}")]
    PreconditionFailed(&'static str),
    #[error("this request needs an If-Match header with the current version")]
    PreconditionRequired,
    #[error("the idempotency key was already used with a different request")]
    IdempotencyKeyReused,
    #[error("a request with this idempotency key is still in progress; retry shortly")]
    IdempotencyInProgress,
    #[error("the request ran out of time before it could finish safely")]
    DeadlineExceeded,
    #[error("bouquet {0} stands in this vase; withdraw it or take it out of the vase first")]
    VaseInUse(BouquetId),
    #[error("the resource is busy; retry shortly")]
    Busy,
    #[error("this user already belongs to vendor {0}; a user is a member of one shop")]
    MemberOfOtherVendor(String),
    #[error("this user has not confirmed their email address; they must finish signing up (or be invited) first")]
    MemberUnverified,
    #[error("{0}")]
    NotImplemented(&'static str),
    #[error("too many requests of this kind; try again in {0} s")]
    RateLimited(u64),
    #[error("too many declined payments; no card is tried for this order or customer for {0} s")]
    PaymentAttemptsExceeded(u64),
    #[error("the shop is suspended: it changes nothing until an administrator reinstates it (its open orders go on)")]
    VendorSuspended,
    #[error("the shop cannot take payments yet: its payout account is not set up; its bouquets can be reserved once it is")]
    PayoutsNotReady,
    /// Something went wrong on our side: the error kept whole (its kind and source chain) for
    /// the one log line; the client is told nothing of it.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a payment without usable delivery details is told.
fn delivery_required(lapsed: Option<&str>) -> String {
    match lapsed {
        None => "the order needs its delivery details (PUT /v1/orders/{orderId}/delivery) before it can be paid".into(),
        Some(why) => format!(
            "the delivery date is no longer available ({why}): give another (PUT /v1/orders/{{orderId}}/delivery), then pay"
        ),
    }
}

impl ApiError {
    /// An internal error from anything that is one (a typed error keeps its type).
    pub fn internal(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ApiError::Internal(error.into())
    }
}

impl From<DomainError> for ApiError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::Invalid(errors) => ApiError::Invalid(errors),
            DomainError::BouquetUnavailable(ids) => ApiError::BouquetUnavailable(ids),
            DomainError::BouquetNotAvailableForChange => ApiError::BouquetNotAvailableForChange,
            DomainError::VendorMismatch => ApiError::VendorMismatch,
            DomainError::Money(error) => {
                ApiError::Invalid(vec![FieldError::new("bouquetIds", error)])
            }
            DomainError::ReservationExpired => ApiError::ReservationExpired,
            DomainError::OrderInvalidState(status) => ApiError::OrderInvalidState(status),
            DomainError::PaymentInProgress => ApiError::PaymentInProgress,
            DomainError::PaymentDeclined => ApiError::PaymentDeclined,
            DomainError::CartVendorMismatch => ApiError::CartVendorMismatch,
            DomainError::CartFull => ApiError::CartFull(bouquet_domain::cart::MAX_CART_ITEMS),
            DomainError::CartEmpty => ApiError::CartEmpty,
            DomainError::DeliveryRequired => ApiError::DeliveryRequired(None),
            DomainError::DeliveryDateLapsed(why) => ApiError::DeliveryRequired(Some(why)),
            error @ DomainError::DeliveryFeeChanged { .. } => {
                ApiError::DeliveryFeeChanged(error.to_string())
            }
        }
    }
}
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            // A replay is a success that handlers turn into `Reply::replay`; reaching here
            // means one did not.
            StoreError::IdempotencyReplay(_) => {
                ApiError::internal("an idempotency replay was not answered")
            }
            StoreError::IdempotencyInProgress => ApiError::IdempotencyInProgress,
            StoreError::Contention(_) => ApiError::Busy,
            StoreError::InvalidCursor => ApiError::Invalid(vec![FieldError::new(
                "cursor",
                "is not a cursor this list returned",
            )]),
            // A condition the handler did not interpret is a bug in the handler, not the
            // client's fault.
            error @ (StoreError::ConditionFailed(_)
            | StoreError::Corrupt(_)
            | StoreError::Backend(_)) => ApiError::internal(error),
        }
    }
}
impl From<NotAllowed> for ApiError {
    fn from(_: NotAllowed) -> Self {
        ApiError::Forbidden
    }
}
impl From<Vec<FieldError>> for ApiError {
    fn from(errors: Vec<FieldError>) -> Self {
        ApiError::Invalid(errors)
    }
}

impl ApiError {
    /// The one table: status, stable code (docs/contract.md, Errors) and title of every variant.
    fn spec(&self) -> (StatusCode, &'static str, &'static str) {
        use StatusCode as S;
        match self {
            ApiError::Invalid(_) => (S::BAD_REQUEST, "request.invalid", "Invalid request"),
            ApiError::Malformed(_) => (S::BAD_REQUEST, "request.invalid", "Invalid request"),
            ApiError::UnsupportedMediaType => (
                S::UNSUPPORTED_MEDIA_TYPE,
                "request.invalid",
                "Invalid request",
            ),
            ApiError::TooLarge(_) => (
                S::PAYLOAD_TOO_LARGE,
                "request.too_large",
                "Request too large",
            ),
            ApiError::Unauthenticated => {
                (S::UNAUTHORIZED, "auth.unauthenticated", "Unauthenticated")
            }
            ApiError::Forbidden => (S::FORBIDDEN, "auth.forbidden", "Forbidden"),
            ApiError::NotFound(_) => (S::NOT_FOUND, "not_found", "Not found"),
            ApiError::BouquetUnavailable(_) => {
                (S::CONFLICT, "bouquet.unavailable", "Bouquet unavailable")
            }
            ApiError::BouquetNotAvailableForChange => (
                S::CONFLICT,
                "bouquet.not_available_for_change",
                "Bouquet not available for change",
            ),
            ApiError::VendorMismatch => (S::CONFLICT, "cart.vendor_mismatch", "Vendor mismatch"),
            ApiError::CartVendorMismatch => {
                (S::CONFLICT, "cart.vendor_mismatch", "Vendor mismatch")
            }
            ApiError::CartFull(_) => (S::CONFLICT, "cart.full", "Cart full"),
            ApiError::CartEmpty => (S::CONFLICT, "cart.empty", "Cart empty"),
            ApiError::ReservationExpired => {
                (S::CONFLICT, "reservation.expired", "Reservation expired")
            }
            ApiError::ReservationLimit(_) => (
                S::CONFLICT,
                "reservation.limit",
                "Reservation limit reached",
            ),
            ApiError::OrderInvalidState(_) => {
                (S::CONFLICT, "order.invalid_state", "Invalid order state")
            }
            ApiError::PaymentInProgress => {
                (S::CONFLICT, "order.invalid_state", "Payment in progress")
            }
            ApiError::DeliveryRequired(_) => (
                S::CONFLICT,
                "order.delivery_required",
                "Delivery details required",
            ),
            ApiError::DeliveryFeeChanged(_) => (
                S::CONFLICT,
                "order.delivery_fee_changed",
                "Delivery fee changed",
            ),
            ApiError::Review(code, _) => (S::CONFLICT, code, "Review refused"),
            ApiError::ReviewNotAllowed(_) => {
                (S::FORBIDDEN, "review.not_allowed", "Review not allowed")
            }
            ApiError::PaymentDeclined => {
                (S::PAYMENT_REQUIRED, "payment.declined", "Payment declined")
            }
            ApiError::PaymentUnavailable => (
                S::SERVICE_UNAVAILABLE,
                "payment.unavailable",
                "Payment gateway unavailable",
            ),
            ApiError::PreconditionFailed(_) => (
                S::PRECONDITION_FAILED,
                "precondition.failed",
                "Precondition failed",
            ),
            ApiError::PreconditionRequired => (
                S::PRECONDITION_REQUIRED,
                "precondition.failed",
                "Precondition failed",
            ),
            ApiError::IdempotencyKeyReused => (
                S::UNPROCESSABLE_ENTITY,
                "idempotency.key_reused",
                "Idempotency key reused",
            ),
            ApiError::IdempotencyInProgress => (
                S::CONFLICT,
                "idempotency.in_progress",
                "Idempotency key in progress",
            ),
            ApiError::DeadlineExceeded => (
                S::SERVICE_UNAVAILABLE,
                "deadline.exceeded",
                "Deadline exceeded",
            ),
            ApiError::VaseInUse(_) => (S::CONFLICT, "vase.in_use", "Vase in use"),
            ApiError::Busy => (S::SERVICE_UNAVAILABLE, "service.busy", "Busy"),
            ApiError::MemberOfOtherVendor(_) => (
                S::CONFLICT,
                "member.other_vendor",
                "Member of another vendor",
            ),
            ApiError::MemberUnverified => (S::CONFLICT, "member.unverified", "Member unverified"),
            ApiError::VendorSuspended => (S::CONFLICT, "vendor.suspended", "Shop suspended"),
            ApiError::PayoutsNotReady => (
                S::CONFLICT,
                "vendor.payouts_not_ready",
                "Shop not ready for payments",
            ),
            ApiError::RateLimited(_) => (S::TOO_MANY_REQUESTS, "rate.limited", "Too many requests"),
            ApiError::PaymentAttemptsExceeded(_) => (
                S::TOO_MANY_REQUESTS,
                "payment.attempts_exceeded",
                "Too many payment attempts",
            ),
            ApiError::NotImplemented(_) => {
                (S::NOT_IMPLEMENTED, "not_implemented", "Not implemented")
            }
            ApiError::Internal(_) => (S::INTERNAL_SERVER_ERROR, "internal", "Internal error"),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.spec().0
    }

    /// The stable code clients match on (docs/contract.md, Errors).
    pub fn code(&self) -> &'static str {
        self.spec().1
    }

    fn title(&self) -> &'static str {
        self.spec().2
    }

    /// After how many seconds the client should try again (`Retry-After`), if it should.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::Busy
            | ApiError::IdempotencyInProgress
            | ApiError::PaymentInProgress
            | ApiError::PaymentUnavailable => Some(1),
            ApiError::RateLimited(seconds) | ApiError::PaymentAttemptsExceeded(seconds) => {
                Some(*seconds)
            }
            _ => None,
        }
    }

    /// The problem document. Internal details are logged, never sent.
    pub fn problem(&self) -> Value {
        let code = self.code();
        let detail = match self {
            ApiError::Internal(_) => {
                "something went wrong on our side; the correlation id identifies it".to_owned()
            }
            other => other.to_string(),
        };
        let mut body = json!({
            "type": format!("https://bouquet.market/problems/{code}"),
            "title": self.title(),
            "status": self.status().as_u16(),
            "detail": detail,
            "code": code,
        });
        match self {
            ApiError::Invalid(errors) => body["errors"] = json!(errors),
            ApiError::BouquetUnavailable(ids) => body["bouquetIds"] = json!(ids),
            ApiError::OrderInvalidState(status) => body["orderStatus"] = json!(status),
            ApiError::PaymentInProgress => body["orderStatus"] = json!(OrderStatus::PaymentPending),
            ApiError::VaseInUse(bouquet_id) => body["bouquetId"] = json!(bouquet_id),
            _ => {}
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exhaustive: a new variant does not compile here until it has a case below.
    fn variant(error: &ApiError) -> usize {
        match error {
            ApiError::Invalid(_) => 0,
            ApiError::Malformed(_) => 1,
            ApiError::UnsupportedMediaType => 2,
            ApiError::TooLarge(_) => 3,
            ApiError::Unauthenticated => 4,
            ApiError::Forbidden => 5,
            ApiError::NotFound(_) => 6,
            ApiError::BouquetUnavailable(_) => 7,
            ApiError::BouquetNotAvailableForChange => 8,
            ApiError::VendorMismatch => 9,
            ApiError::ReservationExpired => 10,
            ApiError::OrderInvalidState(_) => 11,
            ApiError::PaymentInProgress => 12,
            ApiError::PaymentDeclined => 13,
            ApiError::PaymentUnavailable => 14,
            ApiError::CartVendorMismatch => 15,
            ApiError::CartFull(_) => 16,
            ApiError::CartEmpty => 17,
            ApiError::PreconditionFailed(_) => 18,
            ApiError::PreconditionRequired => 19,
            ApiError::IdempotencyKeyReused => 20,
            ApiError::IdempotencyInProgress => 21,
            ApiError::DeadlineExceeded => 22,
            ApiError::Busy => 23,
            ApiError::Internal(_) => 24,
            ApiError::ReservationLimit(_) => 25,
            ApiError::VaseInUse(_) => 26,
            ApiError::MemberOfOtherVendor(_) => 27,
            ApiError::NotImplemented(_) => 28,
            ApiError::MemberUnverified => 29,
            ApiError::DeliveryRequired(_) => 30,
            ApiError::VendorSuspended => 31,
            ApiError::RateLimited(_) => 32,
            ApiError::PaymentAttemptsExceeded(_) => 33,
            ApiError::PayoutsNotReady => 34,
            ApiError::DeliveryFeeChanged(_) => 35,
            ApiError::Review(..) => 36,
            ApiError::ReviewNotAllowed(_) => 37,
        }
    }
    const VARIANTS: usize = 38;

    #[test]
    fn every_error_has_a_stable_code_and_status() {
        let id = BouquetId::generate();
        let cases: Vec<(ApiError, u16, &str)> = vec![
            (
                ApiError::Invalid(vec![FieldError::new("name", "must not be empty")]),
                400,
                "request.invalid",
            ),
            (
                ApiError::Malformed("not JSON".into()),
                400,
                "request.invalid",
            ),
            (ApiError::TooLarge(16384), 413, "request.too_large"),
            (ApiError::Unauthenticated, 401, "auth.unauthenticated"),
            (ApiError::Forbidden, 403, "auth.forbidden"),
            (
                ApiError::MemberOfOtherVendor("V".into()),
                409,
                "member.other_vendor",
            ),
            (ApiError::NotImplemented("no"), 501, "not_implemented"),
            (ApiError::MemberUnverified, 409, "member.unverified"),
            (ApiError::VendorSuspended, 409, "vendor.suspended"),
            (ApiError::PayoutsNotReady, 409, "vendor.payouts_not_ready"),
            (
                ApiError::DeliveryFeeChanged("paid 4.00".into()),
                409,
                "order.delivery_fee_changed",
            ),
            (
                ApiError::Review("review.exists", "reviewed already".into()),
                409,
                "review.exists",
            ),
            (
                ApiError::ReviewNotAllowed("not yours".into()),
                403,
                "review.not_allowed",
            ),
            (ApiError::RateLimited(30), 429, "rate.limited"),
            (
                ApiError::PaymentAttemptsExceeded(600),
                429,
                "payment.attempts_exceeded",
            ),
            (ApiError::NotFound("order"), 404, "not_found"),
            (
                ApiError::BouquetUnavailable(vec![id]),
                409,
                "bouquet.unavailable",
            ),
            (
                ApiError::BouquetNotAvailableForChange,
                409,
                "bouquet.not_available_for_change",
            ),
            (ApiError::VendorMismatch, 409, "cart.vendor_mismatch"),
            (ApiError::ReservationExpired, 409, "reservation.expired"),
            (
                ApiError::OrderInvalidState(OrderStatus::Paid),
                409,
                "order.invalid_state",
            ),
            (
                ApiError::PreconditionFailed("stale"),
                412,
                "precondition.failed",
            ),
            (ApiError::PreconditionRequired, 428, "precondition.failed"),
            (
                ApiError::IdempotencyKeyReused,
                422,
                "idempotency.key_reused",
            ),
            (
                ApiError::IdempotencyInProgress,
                409,
                "idempotency.in_progress",
            ),
            (ApiError::DeadlineExceeded, 503, "deadline.exceeded"),
            (ApiError::internal("secret detail"), 500, "internal"),
            (ApiError::UnsupportedMediaType, 415, "request.invalid"),
            (ApiError::PaymentInProgress, 409, "order.invalid_state"),
            (ApiError::PaymentDeclined, 402, "payment.declined"),
            (ApiError::PaymentUnavailable, 503, "payment.unavailable"),
            (ApiError::CartVendorMismatch, 409, "cart.vendor_mismatch"),
            (ApiError::CartFull(20), 409, "cart.full"),
            (ApiError::CartEmpty, 409, "cart.empty"),
            (ApiError::Busy, 503, "service.busy"),
            (ApiError::ReservationLimit(5), 409, "reservation.limit"),
            (ApiError::VaseInUse(id), 409, "vase.in_use"),
            (
                ApiError::DeliveryRequired(None),
                409,
                "order.delivery_required",
            ),
        ];
        let covered: std::collections::BTreeSet<usize> =
            cases.iter().map(|(error, _, _)| variant(error)).collect();
        assert_eq!(covered.len(), VARIANTS, "every variant has a case");
        for (error, status, code) in cases {
            let problem = error.problem();
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

    #[test]
    fn problems_carry_their_specifics_but_no_internals() {
        let id = BouquetId::generate();
        assert_eq!(
            ApiError::BouquetUnavailable(vec![id]).problem()["bouquetIds"],
            json!([id.to_string()])
        );
        let invalid = ApiError::Invalid(vec![FieldError::new(
            "price.amount",
            "must be greater than zero",
        )])
        .problem();
        assert_eq!(
            invalid["errors"],
            json!([{"field": "price.amount", "message": "must be greater than zero"}])
        );
        let internal = ApiError::internal("connection refused to 10.0.0.1").problem();
        assert!(!internal.to_string().contains("10.0.0.1"));
    }

    #[test]
    fn domain_and_store_errors_map_to_their_codes() {
        assert_eq!(
            ApiError::from(DomainError::VendorMismatch).code(),
            "cart.vendor_mismatch"
        );
        assert_eq!(
            ApiError::from(DomainError::ReservationExpired).code(),
            "reservation.expired"
        );
        assert_eq!(
            ApiError::from(StoreError::InvalidCursor).code(),
            "request.invalid"
        );
        assert_eq!(
            ApiError::from(StoreError::IdempotencyInProgress).code(),
            "idempotency.in_progress"
        );
        assert_eq!(
            ApiError::from(StoreError::Backend(bouquet_store::BackendError {
                kind: bouquet_store::BackendKind::Unavailable,
                source: "boom".into(),
            }))
            .code(),
            "internal"
        );
    }
}
