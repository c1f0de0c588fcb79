//! Request bodies: size limit, media type, JSON with field paths in errors.

use lambda_http::Body;
use serde::de::DeserializeOwned;

use bouquet_domain::FieldError;

use crate::problem::{ApiError, Unreadable};

/// Bodies larger than this are refused before parsing (413 `request.too_large`). The largest
/// legitimate body (a bouquet with a 2,000-character description) is well under it.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

pub fn bytes(body: &Body) -> &[u8] {
    match body {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    }
}

pub fn parse_json<T: DeserializeOwned>(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<T, ApiError> {
    if let Some(content_type) = content_type {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(ApiError::Unreadable(Unreadable::NotJson));
        }
    }
    if body.is_empty() {
        return Err(ApiError::malformed("a JSON body is required"));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::malformed(format!("the body is not valid JSON: {inner}"))
        } else {
            let field = if path == "." {
                String::new()
            } else {
                path.replace('.', "/")
            };
            ApiError::Invalid(vec![FieldError::new(
                field,
                strip_position(&inner.to_string()),
            )])
        }
    })?;
    deserializer
        .end()
        .map_err(|e| ApiError::malformed(format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

/// serde_json appends " at line 1 column 17"; the field path says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Price {
        amount: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        price: Price,
    }

    fn invalid_field(result: Result<Body, ApiError>) -> String {
        match result {
            Err(ApiError::Invalid(errors)) => errors[0].field.clone(),
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn names_the_field_that_is_wrong() {
        assert_eq!(
            invalid_field(parse_json(
                None,
                br#"{"name": "x", "price": {"amount": 5}}"#
            )),
            "price/amount"
        );
        assert_eq!(invalid_field(parse_json(None, br#"{"name": "x"}"#)), "");
        assert_eq!(
            invalid_field(parse_json(
                None,
                br#"{"name": "x", "price": {"amount": "5"}, "extra": 1}"#
            )),
            "extra"
        );
    }

    #[test]
    fn refuses_non_json() {
        assert!(matches!(
            parse_json::<Body>(None, b"{\"name\": "),
            Err(ApiError::Unreadable(Unreadable::Malformed(_)))
        ));
        assert!(matches!(
            parse_json::<Body>(None, b""),
            Err(ApiError::Unreadable(Unreadable::Malformed(_)))
        ));
        assert!(matches!(
            parse_json::<Body>(Some("text/plain"), b"{}"),
            Err(ApiError::Unreadable(Unreadable::NotJson))
        ));
        assert!(parse_json::<Body>(
            Some("application/json; charset=utf-8"),
            br#"{"name":"x","price":{"amount":"1"}}"#
        )
        .is_ok());
    }
}
