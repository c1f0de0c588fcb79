//! Stripe's webhook signatures and the events the marketplace acts on.
//!
//! `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=...]`: the HMAC of
//! `"{t}.{raw body}"` under the endpoint's signing secret (`whsec_...`). A request is genuine
//! when one `v1` matches (compared in constant time) and `t` is within the tolerance of now.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// How far `t` may be from now (Stripe's libraries use 5 minutes).
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header")]
    Missing,
    #[error("the Stripe-Signature header has no timestamp or no v1 signature")]
    Malformed,
    #[error("the signature's timestamp is more than 5 minutes from now")]
    Stale,
    #[error("no signature matches the payload")]
    Mismatch,
}

/// Checks `header` against `payload` (the raw body) and `secret`, at `now` (unix seconds).
pub fn verify(
    header: Option<&str>,
    payload: &[u8],
    secret: &str,
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(SignatureError::Stale);
    }
    let mac = || {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(payload);
        mac
    };
    if signatures.iter().any(|s| mac().verify_slice(s).is_ok()) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The `Stripe-Signature` header Stripe would send for `payload` at `timestamp` (tests and
/// the local walk-through sign their events with it).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(payload);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// A webhook event, as far as the marketplace reads it.
#[derive(Debug, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// When Stripe produced the event (unix seconds): orders reports of one object.
    #[serde(default)]
    pub created: i64,
    /// Whether it is a live-mode event (a test-mode key's events are not).
    #[serde(default)]
    pub livemode: bool,
    /// The connected account it happened on: set on every event Stripe sends a Connect
    /// endpoint, never on the platform's own.
    #[serde(default, rename = "account")]
    pub connected_account: Option<String>,
    pub data: EventData,
}

/// Which of the marketplace's two webhook endpoints an event's signature says it came to:
/// Stripe sends the platform's own events and its connected accounts' events to separate
/// endpoints, each with its own signing secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Platform,
    Connect,
}

/// Checks `header` against the platform's secret, then the Connect endpoint's: which one
/// signed it, or why neither did.
pub fn verify_endpoint(
    header: Option<&str>,
    payload: &[u8],
    platform: &str,
    connect: &str,
    now: i64,
) -> Result<Endpoint, SignatureError> {
    match verify(header, payload, platform, now) {
        Ok(()) => Ok(Endpoint::Platform),
        Err(SignatureError::Mismatch) => {
            verify(header, payload, connect, now).map(|()| Endpoint::Connect)
        }
        Err(other) => Err(other),
    }
}

#[derive(Debug, Deserialize)]
pub struct EventData {
    pub object: IntentObject,
}

/// The event's object: a PaymentIntent or an Account, as far as the marketplace reads them.
#[derive(Debug, Deserialize)]
pub struct IntentObject {
    pub id: String,
    #[serde(default)]
    pub metadata: std::collections::HashMap<String, String>,
    #[serde(default)]
    pub charges_enabled: bool,
    #[serde(default)]
    pub payouts_enabled: bool,
}

/// What Stripe says of a shop's connected account (`account.updated`).
#[derive(Debug, PartialEq, Eq)]
pub struct AccountEvent {
    pub account_id: String,
    pub vendor_id: String,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    /// The event's `created` (unix seconds).
    pub created: i64,
}

/// What an event means for an order.
#[derive(Debug, PartialEq, Eq)]
pub enum PaymentEvent {
    Succeeded {
        intent_id: String,
        order_id: String,
        attempt_key: String,
    },
    Failed {
        order_id: String,
        attempt_key: String,
    },
}

impl Event {
    /// The account report this is, if it is about a shop's account (our metadata).
    pub fn account(&self) -> Option<AccountEvent> {
        let object = &self.data.object;
        (self.kind == "account.updated").then_some(())?;
        Some(AccountEvent {
            account_id: object.id.clone(),
            vendor_id: object.metadata.get("vendorId")?.clone(),
            charges_enabled: object.charges_enabled,
            payouts_enabled: object.payouts_enabled,
            created: self.created,
        })
    }

    /// The payment event this is, if it is one of ours (an intent with our metadata).
    pub fn payment(&self) -> Option<PaymentEvent> {
        let object = &self.data.object;
        let order_id = object.metadata.get("orderId")?.clone();
        let attempt_key = object.metadata.get("attemptKey")?.clone();
        match self.kind.as_str() {
            "payment_intent.succeeded" => Some(PaymentEvent::Succeeded {
                intent_id: object.id.clone(),
                order_id,
                attempt_key,
            }),
            "payment_intent.payment_failed" | "payment_intent.canceled" => {
                Some(PaymentEvent::Failed {
                    order_id,
                    attempt_key,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const NOW: i64 = 1_796_300_000;

    #[test]
    fn the_signature_says_which_endpoint_an_event_came_to() {
        let payload = br#"{"id":"evt_1"}"#;
        let connect = "whsec_connect";
        let by = |secret: &str| sign(payload, secret, NOW);
        let endpoint = |header: &str| verify_endpoint(Some(header), payload, SECRET, connect, NOW);
        assert_eq!(endpoint(&by(SECRET)), Ok(Endpoint::Platform));
        assert_eq!(endpoint(&by(connect)), Ok(Endpoint::Connect));
        assert_eq!(endpoint(&by("whsec_other")), Err(SignatureError::Mismatch));
        let stale = sign(payload, connect, NOW - 301);
        assert_eq!(endpoint(&stale), Err(SignatureError::Stale));
    }

    #[test]
    fn a_genuine_signature_verifies_and_every_forgery_does_not() {
        let body = br#"{"id":"evt_1"}"#;
        let header = sign(body, SECRET, NOW);
        assert_eq!(verify(Some(&header), body, SECRET, NOW + 10), Ok(()));
        assert_eq!(
            verify(Some(&header), br#"{"id":"evt_2"}"#, SECRET, NOW),
            Err(SignatureError::Mismatch),
            "tampered body"
        );
        assert_eq!(
            verify(Some(&header), body, "whsec_other", NOW),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(Some(&header), body, SECRET, NOW + TOLERANCE_SECONDS + 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(None, body, SECRET, NOW),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify(Some("v1=abcd"), body, SECRET, NOW),
            Err(SignatureError::Malformed)
        );
        // Stripe may send several v1 signatures (a secret being rolled): one match suffices.
        let rolled = format!("t={NOW},v1=00ff,{}", &header[header.find("v1=").unwrap()..]);
        assert_eq!(verify(Some(&rolled), body, SECRET, NOW), Ok(()));
    }

    #[test]
    fn events_of_our_intents_become_payment_events() {
        let event: Event = serde_json::from_value(serde_json::json!({
            "id": "evt_1", "type": "payment_intent.succeeded",
            "data": {"object": {"id": "pi_1", "metadata": {"orderId": "o", "attemptKey": "o-0"}}}
        }))
        .unwrap();
        assert_eq!(
            event.payment(),
            Some(PaymentEvent::Succeeded {
                intent_id: "pi_1".into(),
                order_id: "o".into(),
                attempt_key: "o-0".into()
            })
        );
        let foreign: Event = serde_json::from_value(serde_json::json!({
            "id": "evt_2", "type": "payment_intent.succeeded",
            "data": {"object": {"id": "pi_2", "metadata": {}}}
        }))
        .unwrap();
        assert_eq!(foreign.payment(), None, "not one of ours");
    }

    #[test]
    fn an_account_update_names_the_shop_by_its_metadata() {
        let event: Event = serde_json::from_value(serde_json::json!({
            "id": "evt_3", "type": "account.updated", "created": NOW,
            "data": {"object": {"id": "acct_1", "object": "account", "charges_enabled": true,
                "payouts_enabled": false, "metadata": {"vendorId": "V1"}}}
        }))
        .unwrap();
        assert_eq!(
            event.account(),
            Some(AccountEvent {
                account_id: "acct_1".into(),
                vendor_id: "V1".into(),
                charges_enabled: true,
                payouts_enabled: false,
                created: NOW,
            })
        );
        assert_eq!(event.payment(), None);
    }
}
