//! `Idempotency-Key`: parsing, scoping and request fingerprints. The record itself is
//! written by the store, in the same transaction as the change it guards.

use serde_json::Value;
use sha2::{Digest, Sha256};

use bouquet_domain::{FieldError, Timestamp};
use bouquet_store::IdempotencyPut;

use crate::problem::ApiError;
use crate::reply::Reply;

/// A request that carries a key: where its record lives and what it must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyIntent {
    /// Hash of (caller, method and path, key): a key is scoped to the caller and the
    /// resource it was sent to.
    pub key_hash: String,
    /// Hash of (method and path, body): a replay must send the same request.
    pub fingerprint: String,
}

impl IdempotencyIntent {
    pub fn parse(
        header: Option<&str>,
        subject: &str,
        route: &str,
        body: &[u8],
    ) -> Result<Option<Self>, ApiError> {
        let Some(key) = header else { return Ok(None) };
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ApiError::Invalid(vec![FieldError::new(
                "Idempotency-Key",
                "must be 1 to 255 visible ASCII characters",
            )]));
        }
        Ok(Some(Self {
            key_hash: hex(&[subject.as_bytes(), route.as_bytes(), key.as_bytes()]),
            fingerprint: fingerprint(route, body),
        }))
    }

    /// The record to write with the change, holding `reply` for replays.
    pub fn record(&self, reply: &Reply, now: Timestamp) -> IdempotencyPut {
        IdempotencyPut::new(
            self.key_hash.clone(),
            self.fingerprint.clone(),
            reply.status.as_u16(),
            reply.body_text(),
            reply.location().map(str::to_owned),
            now,
        )
    }
}

/// Same JSON, same fingerprint: key order and whitespace do not matter.
fn fingerprint(route: &str, body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => hex(&[route.as_bytes(), canonical(&value).as_bytes()]),
        Err(_) => hex(&[route.as_bytes(), body]),
    }
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        // Length-prefixed, so ("ab","c") and ("a","bc") differ.
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_scoped_to_caller_method_and_path() {
        let intent = |caller: &str, path: &str| {
            IdempotencyIntent::parse(Some("k-1"), caller, path, b"{}")
                .unwrap()
                .unwrap()
                .key_hash
        };
        let a = intent("alice", "POST /v1/orders/A/payment");
        assert_eq!(a, intent("alice", "POST /v1/orders/A/payment"));
        assert_ne!(a, intent("bob", "POST /v1/orders/A/payment"));
        assert_ne!(a, intent("alice", "POST /v1/orders/B/payment"));
        assert_ne!(a, intent("alice", "POST /v1/orders/A/cancel"));
    }

    #[test]
    fn fingerprints_ignore_formatting_but_not_content() {
        let route = "POST /v1/orders";
        assert_eq!(
            fingerprint(route, br#"{"a":1,"b":[1,2]}"#),
            fingerprint(route, b"{ \"b\": [1, 2],\n \"a\": 1 }")
        );
        assert_ne!(
            fingerprint(route, br#"{"b":[2,1]}"#),
            fingerprint(route, br#"{"b":[1,2]}"#)
        );
    }

    #[test]
    fn rejects_bad_keys() {
        for bad in ["", "has space", &"k".repeat(256), "tab\t"] {
            assert!(
                IdempotencyIntent::parse(Some(bad), "alice", "r", b"").is_err(),
                "{bad:?}"
            );
        }
        assert!(IdempotencyIntent::parse(Some(&"k".repeat(255)), "alice", "r", b"").is_ok());
    }
}
