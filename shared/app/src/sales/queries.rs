//! What callers read: their orders, a vendor's vases and their readings, a vendor's sales by
//! day. Each read checks who may see it; what the caller may not see reads as absent (an id
//! must not reveal that something exists).

use crate::problem::ApiError;
use bouquet_domain::identity::{Identity, NotAllowed, Role};
use bouquet_domain::vase::Vase;
use bouquet_domain::{
    FieldError, Order, OrderId, OrderStatus, Reading, Timestamp, VaseId, VendorId,
};
use bouquet_store::{DayCounters, Page, StoreError};

use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// No such thing, or not one the caller may see.
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error("the caller may not read this")]
    Forbidden(#[from] NotAllowed),
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One order, for its customer, its vendor or an administrator.
pub async fn order(app: &App, caller: &Identity, order_id: OrderId) -> Result<Order, QueryError> {
    crate::orders::readable(app, caller, order_id)
        .await?
        .ok_or(QueryError::NotFound("order"))
}

/// Which of a vendor's orders to list (its history, issue 30).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderFilter {
    /// Only these states (none: every order, newest first).
    pub statuses: Vec<OrderStatus>,
    /// Only orders to deliver on these days (`YYYY-MM-DD`, inclusive); without `statuses`,
    /// the sold states: the days' deliveries, in delivery order.
    pub dates: Option<(String, String)>,
}

impl OrderFilter {
    /// Reads `status` (comma-separated states) and `deliveryFrom`/`deliveryTo` (dates; one
    /// alone is that day only), naming the parameter of each problem.
    pub fn parse(
        status: Option<&str>,
        delivery_from: Option<&str>,
        delivery_to: Option<&str>,
    ) -> Result<OrderFilter, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut statuses = Vec::new();
        for name in status.into_iter().flat_map(|s| s.split(',')) {
            match OrderStatus::parse(name.trim()) {
                Some(status) if !statuses.contains(&status) => statuses.push(status),
                Some(_) => {}
                None => errors.push(FieldError::new(
                    "status",
                    format!("{name:?} is not an order state"),
                )),
            }
        }
        let date = |field: &str, text: Option<&str>, errors: &mut Vec<FieldError>| {
            let text = text?;
            match bouquet_domain::delivery::parse_date(text) {
                Some(date) => Some(date),
                None => {
                    errors.push(FieldError::new(field, "must be a date YYYY-MM-DD"));
                    None
                }
            }
        };
        let from = date("deliveryFrom", delivery_from, &mut errors);
        let to = date("deliveryTo", delivery_to, &mut errors);
        let dates = match (from, to) {
            (Some(from), Some(to)) if from > to => {
                errors.push(FieldError::new(
                    "deliveryTo",
                    "must not be before deliveryFrom",
                ));
                None
            }
            (Some(from), Some(to)) => Some((from, to)),
            (Some(day), None) | (None, Some(day)) => Some((day.clone(), day)),
            (None, None) => None,
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        if dates.is_some() && statuses.is_empty() {
            statuses = OrderStatus::ALL
                .into_iter()
                .filter(|s| s.is_sold())
                .collect();
        }
        Ok(OrderFilter { statuses, dates })
    }
}

/// A page of the caller's orders: a customer's own (newest first), or a vendor's shop's
/// (newest first; by state or delivery day with `filter`, in delivery order).
pub async fn orders(
    app: &App,
    caller: &Identity,
    filter: &OrderFilter,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Order>, QueryError> {
    Ok(match (caller.role, caller.vendor_id) {
        (Role::Customer, _) if filter == &OrderFilter::default() => {
            app.store
                .customer_orders(&caller.subject, cursor, limit)
                .await?
        }
        (Role::Customer, _) => {
            return Err(QueryError::Invalid(vec![FieldError::new(
                "status",
                "a customer lists all of their orders; status and delivery dates filter a vendor's",
            )]))
        }
        (Role::Vendor, Some(vendor_id)) if filter.statuses.is_empty() => {
            app.store.vendor_orders(vendor_id, cursor, limit).await?
        }
        (Role::Vendor, Some(vendor_id)) => {
            let dates = filter.dates.as_ref().map(|(f, t)| (f.as_str(), t.as_str()));
            app.store
                .vendor_orders_by_state(vendor_id, &filter.statuses, dates, cursor, limit)
                .await?
        }
        _ => return Err(NotAllowed.into()),
    })
}

/// A page of a vendor's vases, for that vendor.
pub async fn vases(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Vase>, QueryError> {
    caller.require_vendor(vendor_id)?;
    Ok(app.store.vendor_vases(vendor_id, cursor, limit).await?)
}

/// A page of a vase's readings sent at or after `since`, for its vendor. Both reads at once
/// (one round trip of latency); the page is dropped unless the vase is the caller's.
pub async fn readings(
    app: &App,
    caller: &Identity,
    vase_id: VaseId,
    since: Timestamp,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page<Reading>, QueryError> {
    caller.require(Role::Vendor)?;
    let (vase, page) = tokio::join!(
        app.store.vase(vase_id, false),
        app.store.readings(vase_id, since, cursor, limit)
    );
    if vase?.is_none_or(|v| Some(v.vendor_id) != caller.vendor_id) {
        return Err(QueryError::NotFound("vase"));
    }
    Ok(page?)
}

/// A vendor's counters for the days `from..=to` (`YYYY-MM-DD`), for that vendor.
pub async fn sales_by_day(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    from: &str,
    to: &str,
) -> Result<Vec<DayCounters>, QueryError> {
    caller.require_vendor(vendor_id)?;
    Ok(app.store.vendor_days(vendor_id, from, to).await?)
}

impl From<QueryError> for ApiError {
    fn from(error: QueryError) -> Self {
        match error {
            QueryError::NotFound(what) => ApiError::NotFound(what),
            QueryError::Forbidden(_) => ApiError::forbidden(),
            QueryError::Invalid(errors) => ApiError::Invalid(errors),
            QueryError::Store(error) => error.into(),
        }
    }
}
