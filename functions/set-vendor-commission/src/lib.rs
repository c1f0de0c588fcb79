//! `PUT /v1/vendors/{vendorId}/commission` `{basisPoints}`: an administrator sets the shop's
//! own commission in basis points of an order's total (0 to 10,000), or returns it to the
//! marketplace's with `null` (`VendorCommissionChanged`). Orders claimed for payment from then
//! on are split at it; the shop keeps the history of its changes. Idempotent.

use bouquet_app::domain::commission::CommissionRate;
use bouquet_app::domain::{FieldError, VendorId};
use bouquet_app::shops;
use bouquet_http::{ApiError, Ctx, Reply};
use serde::Deserialize;
use serde_json::Value;

bouquet_http::route!(PUT "/v1/vendors/{vendorId}/commission" => handle);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CommissionRequest {
    /// Required; `null` is the marketplace's commission (absent is not).
    #[serde(default, deserialize_with = "present")]
    basis_points: Option<Value>,
}

/// `Some` for any value the body gave, `null` included: only an absent field is `None`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let caller = ctx.caller()?;
    let vendor_id = ctx.path("vendorId", VendorId::parse)?;
    let body: CommissionRequest = ctx.json()?;
    let invalid = |message: &str| ApiError::Invalid(vec![FieldError::new("basisPoints", message)]);
    let rate = match body.basis_points {
        None => {
            return Err(invalid(
                "is required: a whole number from 0 to 10000, or null",
            ))
        }
        Some(Value::Null) => None,
        Some(Value::Number(number)) => Some(
            number
                .as_i64()
                .and_then(|bps| CommissionRate::from_basis_points(bps).ok())
                .ok_or_else(|| invalid("must be a whole number from 0 to 10000"))?,
        ),
        _ => return Err(invalid("must be a whole number from 0 to 10000, or null")),
    };
    let vendor = shops::set_commission(
        &ctx.app,
        caller,
        vendor_id,
        rate,
        &ctx.correlation_id,
        ctx.now,
    )
    .await?;
    Reply::ok(&vendor)
}
