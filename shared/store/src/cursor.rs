//! Opaque pagination cursors: base64url of a small JSON value. A cursor is checked against
//! the query it is used with, so a tampered one is a 400, never a DynamoDB error.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::StoreError;

/// One page of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

pub fn encode<T: Serialize>(value: &T) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap_or_default())
}

pub fn decode<T: DeserializeOwned>(cursor: &str) -> Result<T, StoreError> {
    if cursor.len() > 2048 {
        return Err(StoreError::InvalidCursor);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| StoreError::InvalidCursor)?;
    serde_json::from_slice(&bytes).map_err(|_| StoreError::InvalidCursor)
}
