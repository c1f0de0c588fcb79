//! The `$connect` authorizer's context: what it returns for a viewer, and what later messages
//! of the connection read back from it (who holds it, when its token expires).

use std::collections::HashMap;

use bouquet_domain::channels::Viewer;
use bouquet_domain::Timestamp;
use serde_json::Value;

/// Who holds a connection, from the context the `$connect` authorizer returned (API Gateway
/// passes it with every later message of the connection). Anything but a complete
/// customer, vendor or admin context is anonymous: public channels only.
pub fn viewer_of(context: &HashMap<String, Value>) -> Viewer {
    let claim = |name: &str| context.get(name).and_then(Value::as_str);
    match claim("role") {
        None | Some("anonymous") => Viewer::Anonymous,
        Some(_) => Viewer::from_claims(claim).unwrap_or(Viewer::Anonymous),
    }
}

/// When the token behind a connection expires (`exp` in the authorizer's context, epoch
/// seconds); `None` for an anonymous connection.
pub fn token_expiry_of(context: &HashMap<String, Value>) -> Option<Timestamp> {
    let seconds: i64 = context.get("exp")?.as_str()?.parse().ok()?;
    Some(Timestamp::from_millis(seconds.saturating_mul(1000)))
}

/// The context the authorizer returns for `viewer` whose token expires at `token_exp` (epoch
/// seconds; values are strings, as API Gateway requires).
pub fn context_of(
    viewer: &Viewer,
    token_exp: Option<&str>,
    user: Option<&str>,
) -> serde_json::Map<String, Value> {
    let mut context = serde_json::Map::new();
    let mut put = |k: &str, v: String| {
        context.insert(k.to_owned(), Value::String(v));
    };
    match viewer {
        Viewer::Anonymous => put("role", "anonymous".into()),
        Viewer::Customer(id) => {
            put("role", "customer".into());
            put("sub", id.to_string());
        }
        Viewer::Vendor(id) => {
            put("role", "vendor".into());
            put("sub", "vendor".into());
            put("vendorId", id.to_string());
        }
        Viewer::Admin => {
            put("role", "admin".into());
            put("sub", "admin".into());
        }
    }
    if !matches!(viewer, Viewer::Anonymous) {
        if let Some(exp) = token_exp {
            put("exp", exp.to_owned());
        }
        // The token's subject: signed-in connections are counted per user.
        if let Some(user) = user {
            put("user", user.to_owned());
        }
    }
    context
}
