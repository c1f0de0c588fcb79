//! What a use case answers when it refuses or fails: a *kind* (not found, conflict, invalid,
//! ...) and, where the kind has many reasons, a [`Refusal`] with the stable code a client
//! matches on (docs/contract.md, Errors), its title, its detail and any specifics.
//!
//! Each use case's error says which by its own `From<…> for ApiError`, next to the error in
//! its module, with its own code: adding an error, a use case or a code edits no central
//! file. The app knows no HTTP: the HTTP crate (`bouquet_http::problem`) gives each kind its
//! status and renders the problem+json document.

use serde_json::{json, Value};

use bouquet_domain::identity::NotAllowed;
use bouquet_domain::{DomainError, FieldError, OrderStatus};
use bouquet_store::StoreError;

/// The kinds of failure a request can meet. Every variant but [`ApiError::Internal`] is the
/// client's to act on; the HTTP crate maps each to one status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Fields that break their rules (`request.invalid`, with `errors`).
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    /// A request that cannot be read at all.
    #[error("{0}")]
    Unreadable(Unreadable),
    #[error("a valid bearer token is required")]
    Unauthenticated,
    #[error("{0}")]
    Forbidden(Refusal),
    #[error("no such {0}")]
    NotFound(&'static str),
    /// The resource's state refuses the request (each use case's own code).
    #[error("{0}")]
    Conflict(Refusal),
    /// `If-Match` named a version that is no longer current.
    #[error("{0}")]
    PreconditionFailed(&'static str),
    #[error("this request needs an If-Match header with the current version")]
    PreconditionRequired,
    #[error("{0}")]
    PaymentRequired(Refusal),
    /// Understood, but refused as sent (an idempotency key reused for another request).
    #[error("{0}")]
    Unprocessable(Refusal),
    #[error("{0}")]
    RateLimited(Refusal),
    /// Not now, through no fault of the request: retry (`Retry-After` when the refusal says).
    #[error("{0}")]
    Unavailable(Refusal),
    #[error("{0}")]
    NotImplemented(&'static str),
    /// Something went wrong on our side: the error kept whole (its kind and source chain) for
    /// the one log line; the client is told nothing of it.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Why a request could not be read (all `request.invalid` but the size).
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("{0}")]
    Malformed(String),
    #[error("the body must be JSON (application/json)")]
    NotJson,
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
}

/// A refusal's stable code, title and detail, with what else a client needs to act on it
/// (the bouquets that are gone, the order's state, when to retry).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: &'static str,
    pub title: &'static str,
    pub detail: String,
    /// Members added to the problem document (`bouquetIds`, `orderStatus`, ...).
    pub extensions: Vec<(&'static str, Value)>,
    /// After how many seconds the client should try again (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl Refusal {
    pub fn new(code: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Refusal {
            code,
            title,
            detail: detail.into(),
            extensions: Vec::new(),
            retry_after: None,
        }
    }

    /// Adds the member `name` to the problem document.
    pub fn with(mut self, name: &'static str, value: impl serde::Serialize) -> Self {
        self.extensions.push((name, json!(value)));
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

/// The refusals many use cases share.
impl ApiError {
    /// An internal error from anything that is one (a typed error keeps its type).
    pub fn internal(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ApiError::Internal(error.into())
    }

    pub fn forbidden() -> Self {
        ApiError::Forbidden(Refusal::new(
            "auth.forbidden",
            "Forbidden",
            "the caller may not do this",
        ))
    }

    /// The item kept changing under the request (or a dependency throttled it).
    pub fn busy() -> Self {
        ApiError::Unavailable(
            Refusal::new(
                "service.busy",
                "Busy",
                "the resource is busy; retry shortly",
            )
            .retry_after(1),
        )
    }

    pub fn malformed(detail: impl Into<String>) -> Self {
        ApiError::Unreadable(Unreadable::Malformed(detail.into()))
    }

    pub fn deadline_exceeded() -> Self {
        ApiError::Unavailable(Refusal::new(
            "deadline.exceeded",
            "Deadline exceeded",
            "the request ran out of time before it could finish safely",
        ))
    }

    pub fn idempotency_in_progress() -> Self {
        ApiError::Conflict(
            Refusal::new(
                "idempotency.in_progress",
                "Idempotency key in progress",
                "a request with this idempotency key is still in progress; retry shortly",
            )
            .retry_after(1),
        )
    }

    pub fn idempotency_key_reused() -> Self {
        ApiError::Unprocessable(Refusal::new(
            "idempotency.key_reused",
            "Idempotency key reused",
            "the idempotency key was already used with a different request",
        ))
    }

    pub fn rate_limited(retry_after_secs: u64) -> Self {
        ApiError::RateLimited(
            Refusal::new(
                "rate.limited",
                "Too many requests",
                format!("too many requests of this kind; try again in {retry_after_secs} s"),
            )
            .retry_after(retry_after_secs),
        )
    }

    /// The payment provider gave no answer (a charge, a payout account, a balance).
    pub fn payment_unavailable() -> Self {
        ApiError::Unavailable(
            Refusal::new(
                "payment.unavailable",
                "Payment gateway unavailable",
                "the payment gateway gave no answer; retry with the same Idempotency-Key, you will be charged at most once",
            )
            .retry_after(1),
        )
    }

    /// The shop cannot take payments yet (reserving and paying refuse alike).
    pub fn payouts_not_ready() -> Self {
        ApiError::Conflict(Refusal::new(
            "vendor.payouts_not_ready",
            "Shop not ready for payments",
            "the shop cannot take payments yet: its payout account is not set up; its bouquets can be reserved once it is",
        ))
    }

    /// The stable code clients match on (docs/contract.md, Errors).
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Invalid(_) => "request.invalid",
            ApiError::Unreadable(Unreadable::TooLarge(_)) => "request.too_large",
            ApiError::Unreadable(_) => "request.invalid",
            ApiError::Unauthenticated => "auth.unauthenticated",
            ApiError::NotFound(_) => "not_found",
            ApiError::PreconditionFailed(_) | ApiError::PreconditionRequired => {
                "precondition.failed"
            }
            ApiError::NotImplemented(_) => "not_implemented",
            ApiError::Internal(_) => "internal",
            ApiError::Forbidden(refusal)
            | ApiError::Conflict(refusal)
            | ApiError::PaymentRequired(refusal)
            | ApiError::Unprocessable(refusal)
            | ApiError::RateLimited(refusal)
            | ApiError::Unavailable(refusal) => refusal.code,
        }
    }

    /// The refusal's own code, title, specifics and retry, where the kind has them.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ApiError::Forbidden(refusal)
            | ApiError::Conflict(refusal)
            | ApiError::PaymentRequired(refusal)
            | ApiError::Unprocessable(refusal)
            | ApiError::RateLimited(refusal)
            | ApiError::Unavailable(refusal) => Some(refusal),
            _ => None,
        }
    }

    pub fn title(&self) -> &'static str {
        match self {
            ApiError::Invalid(_) => "Invalid request",
            ApiError::Unreadable(Unreadable::TooLarge(_)) => "Request too large",
            ApiError::Unreadable(_) => "Invalid request",
            ApiError::Unauthenticated => "Unauthenticated",
            ApiError::NotFound(_) => "Not found",
            ApiError::PreconditionFailed(_) | ApiError::PreconditionRequired => {
                "Precondition failed"
            }
            ApiError::NotImplemented(_) => "Not implemented",
            ApiError::Internal(_) => "Internal error",
            other => other.refusal().map_or("Error", |refusal| refusal.title),
        }
    }

    /// After how many seconds the client should try again (`Retry-After`), if it should.
    pub fn retry_after(&self) -> Option<u64> {
        self.refusal().and_then(|refusal| refusal.retry_after)
    }

    /// The problem document's members but `status` (which the HTTP crate adds). Internal
    /// details are logged, never sent.
    pub fn problem_members(&self) -> Value {
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
            "detail": detail,
            "code": code,
        });
        if let ApiError::Invalid(errors) = self {
            body["errors"] = json!(errors);
        }
        for (name, value) in self.refusal().map_or(&[][..], |r| &r.extensions[..]) {
            body[*name] = value.clone();
        }
        body
    }
}

/// The domain's rules, each refused with its code (the same from every use case).
impl From<DomainError> for ApiError {
    fn from(error: DomainError) -> Self {
        let said = error.to_string();
        let conflict = |code, title| ApiError::Conflict(Refusal::new(code, title, said.clone()));
        match error {
            DomainError::Invalid(errors) => ApiError::Invalid(errors),
            DomainError::Money(error) => {
                ApiError::Invalid(vec![FieldError::new("bouquetIds", error)])
            }
            DomainError::BouquetUnavailable(ids) => ApiError::Conflict(
                Refusal::new(
                    "bouquet.unavailable",
                    "Bouquet unavailable",
                    "bouquets are not available",
                )
                .with("bouquetIds", ids),
            ),
            DomainError::BouquetNotAvailableForChange => conflict(
                "bouquet.not_available_for_change",
                "Bouquet not available for change",
            ),
            DomainError::VendorMismatch => conflict("cart.vendor_mismatch", "Vendor mismatch"),
            DomainError::CartVendorMismatch => ApiError::Conflict(Refusal::new(
                "cart.vendor_mismatch",
                "Vendor mismatch",
                "the cart holds bouquets of one vendor only; remove the others first",
            )),
            DomainError::ReservationExpired => {
                conflict("reservation.expired", "Reservation expired")
            }
            DomainError::OrderInvalidState(status) => order_invalid_state(status),
            DomainError::PaymentInProgress => ApiError::Conflict(
                Refusal::new(
                    "order.invalid_state",
                    "Payment in progress",
                    "a payment for this order is in progress; retry shortly",
                )
                .with("orderStatus", OrderStatus::PaymentPending)
                .retry_after(1),
            ),
            DomainError::PaymentDeclined => ApiError::PaymentRequired(Refusal::new(
                "payment.declined",
                "Payment declined",
                "the payment was declined",
            )),
            DomainError::CartFull => ApiError::Conflict(Refusal::new(
                "cart.full",
                "Cart full",
                format!(
                    "the cart is full (at most {} bouquets)",
                    bouquet_domain::cart::MAX_CART_ITEMS
                ),
            )),
            DomainError::CartEmpty => conflict("cart.empty", "Cart empty"),
            DomainError::DeliveryRequired => ApiError::Conflict(Refusal::new(
                "order.delivery_required",
                "Delivery details required",
                "the order needs its delivery details (PUT /v1/orders/{orderId}/delivery) before it can be paid",
            )),
            DomainError::DeliveryDateLapsed(why) => ApiError::Conflict(Refusal::new(
                "order.delivery_required",
                "Delivery details required",
                format!("the delivery date is no longer available ({why}): give another (PUT /v1/orders/{{orderId}}/delivery), then pay"),
            )),
            DomainError::DeliveryFeeChanged { .. } => {
                conflict("order.delivery_fee_changed", "Delivery fee changed")
            }
        }
    }
}

/// The order is not in a state that allows the request (`orderStatus` says which it is).
pub fn order_invalid_state(status: OrderStatus) -> ApiError {
    ApiError::Conflict(
        Refusal::new(
            "order.invalid_state",
            "Invalid order state",
            format!("the order is {}", status.name()),
        )
        .with("orderStatus", status),
    )
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            // A replay is a success that handlers turn into `Reply::replay`; reaching here
            // means one did not.
            StoreError::IdempotencyReplay(_) => {
                ApiError::internal("an idempotency replay was not answered")
            }
            StoreError::IdempotencyInProgress => ApiError::idempotency_in_progress(),
            StoreError::Contention(_) => ApiError::busy(),
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
        ApiError::forbidden()
    }
}
impl From<Vec<FieldError>> for ApiError {
    fn from(errors: Vec<FieldError>) -> Self {
        ApiError::Invalid(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bouquet_domain::BouquetId;

    #[test]
    fn problems_carry_their_specifics_but_no_internals() {
        let id = BouquetId::generate();
        let gone = ApiError::from(DomainError::BouquetUnavailable(vec![id])).problem_members();
        assert_eq!(gone["bouquetIds"], json!([id.to_string()]));
        assert_eq!(gone["code"], "bouquet.unavailable");
        let invalid = ApiError::Invalid(vec![FieldError::new(
            "price.amount",
            "must be greater than zero",
        )])
        .problem_members();
        assert_eq!(
            invalid["errors"],
            json!([{"field": "price.amount", "message": "must be greater than zero"}])
        );
        let internal = ApiError::internal("connection refused to 10.0.0.1").problem_members();
        assert!(!internal.to_string().contains("10.0.0.1"));
        let paying = ApiError::from(DomainError::PaymentInProgress);
        assert_eq!(paying.problem_members()["orderStatus"], "payment_pending");
        assert_eq!(paying.retry_after(), Some(1));
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
            ApiError::from(DomainError::DeliveryDateLapsed("a Sunday".into())).code(),
            "order.delivery_required"
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
        assert_eq!(ApiError::rate_limited(30).retry_after(), Some(30));
    }
}
