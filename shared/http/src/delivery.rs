//! The one view of a shop's delivery settings, for the routes that read and write them.

use bouquet_domain::{Timestamp, VendorId};
use bouquet_store::VersionedSettings;
use serde_json::json;

use crate::{ApiError, Reply};

/// Who reads the settings: anyone (the checkout), or the shop itself (its console).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsReader {
    Public,
    Shop,
}

/// `{vendorId, version, firstDate, ...settings}` with `ETag` the version (what `If-Match`
/// names); `firstDate` is the first day the shop takes a delivery for at `now`. The shop's
/// contact address is its own (docs/contract.md, "Abuse limits"): the public view says only whether
/// one is set (`contactEmailSet`).
pub fn delivery_settings_reply(
    vendor_id: VendorId,
    saved: &VersionedSettings,
    reader: SettingsReader,
    now: Timestamp,
) -> Result<Reply, ApiError> {
    let mut body = serde_json::to_value(&saved.settings).map_err(ApiError::internal)?;
    body["contactEmailSet"] = json!(saved.settings.contact_email.is_some());
    if reader == SettingsReader::Public {
        if let Some(fields) = body.as_object_mut() {
            fields.remove("contactEmail");
        }
    }
    body["vendorId"] = json!(vendor_id);
    body["version"] = json!(saved.version);
    body["firstDate"] = json!(saved.settings.first_date(now));
    Ok(Reply::ok(&body)?.header("etag", format!("\"{}\"", saved.version)))
}
