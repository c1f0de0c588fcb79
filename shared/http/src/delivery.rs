//! The one view of a shop's delivery settings, for the routes that read and write them.

use bouquet_domain::{Timestamp, VendorId};
use bouquet_store::VersionedSettings;
use serde_json::json;

use crate::{ApiError, Reply};

/// `{vendorId, version, firstDate, ...settings}` with `ETag` the version (what `If-Match`
/// names); `firstDate` is the first day the shop takes a delivery for at `now`.
pub fn delivery_settings_reply(
    vendor_id: VendorId,
    saved: &VersionedSettings,
    now: Timestamp,
) -> Result<Reply, ApiError> {
    let mut body = serde_json::to_value(&saved.settings).map_err(ApiError::internal)?;
    body["vendorId"] = json!(vendor_id);
    body["version"] = json!(saved.version);
    body["firstDate"] = json!(saved.settings.first_date(now));
    Ok(Reply::ok(&body)?.header("etag", format!("\"{}\"", saved.version)))
}
