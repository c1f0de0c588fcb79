//! Free-text fields: names and descriptions.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {0} characters")]
    TooLong(usize),
    #[error("must not contain control characters")]
    ControlCharacters,
}

/// Trims, then checks length (in characters) and that no control characters remain
/// (newlines allowed only where `multiline`).
pub fn clean(text: &str, min: usize, max: usize, multiline: bool) -> Result<String, TextError> {
    let trimmed = text.trim();
    let chars = trimmed.chars().count();
    if chars < min {
        return Err(TextError::Empty);
    }
    if chars > max {
        return Err(TextError::TooLong(max));
    }
    let allowed = |c: char| !c.is_control() || (multiline && (c == '\n' || c == '\t'));
    if !trimmed.chars().all(allowed) {
        return Err(TextError::ControlCharacters);
    }
    Ok(trimmed.to_owned())
}

/// An email address as SES takes one (RFC 5321 shape, a dotted domain, at most 254
/// characters), trimmed; the domain lowercased.
pub fn email(text: &str) -> Result<String, &'static str> {
    let trimmed = text.trim();
    let parsed: email_address::EmailAddress = trimmed
        .parse()
        .map_err(|_| "must be an email address such as name@example.com")?;
    let domain = parsed.domain().to_ascii_lowercase();
    if trimmed.len() > 254 || !domain.contains('.') || domain.starts_with('[') {
        return Err("must be an email address such as name@example.com");
    }
    Ok(format!("{}@{domain}", parsed.local_part()))
}

pub const NAME_MAX: usize = 120;
pub const DESCRIPTION_MAX: usize = 2_000;

pub fn name(text: &str) -> Result<String, TextError> {
    clean(text, 1, NAME_MAX, false)
}

pub fn description(text: &str) -> Result<String, TextError> {
    clean(text, 0, DESCRIPTION_MAX, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_addresses_are_checked_and_their_domain_lowercased() {
        assert_eq!(email(" Ana@Example.COM ").unwrap(), "Ana@example.com");
        for bad in [
            "",
            "ana",
            "ana@",
            "@example.com",
            "ana@localhost",
            "a b@example.com",
            "ana@[10.0.0.1]",
        ] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(name("  Peonies  ").unwrap(), "Peonies");
        assert_eq!(name("   "), Err(TextError::Empty));
        assert_eq!(name(&"é".repeat(121)), Err(TextError::TooLong(120)));
        assert!(
            name(&"é".repeat(120)).is_ok(),
            "length counts characters, not bytes"
        );
        assert_eq!(name("a\u{0}b"), Err(TextError::ControlCharacters));
        assert_eq!(name("two\nlines"), Err(TextError::ControlCharacters));
        assert_eq!(description("two\nlines").unwrap(), "two\nlines");
        assert_eq!(description("").unwrap(), "");
    }
}
