//! Money: integer minor units and an ISO 4217 currency. Amounts cross the API as decimal
//! strings with at most two places (`"24.50"`), never as floats.

use std::fmt;

use serde::{Deserialize, Serialize};

/// ISO 4217 codes the marketplace accepts: currencies with two minor digits, the only kind
/// the two-decimal amount format can express exactly.
const ACCEPTED_CURRENCIES: &[&str] = &[
    "AUD", "BGN", "BRL", "CAD", "CHF", "CNY", "CZK", "DKK", "EUR", "GBP", "HKD", "ILS", "INR",
    "MXN", "NOK", "NZD", "PLN", "RON", "SEK", "SGD", "THB", "TRY", "USD", "ZAR",
];

/// The largest price one line may carry: 1,000,000.00 in any currency. Keeps every sum of
/// a bounded order far inside `i64`.
pub const MAX_AMOUNT_MINOR: i64 = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Currency([u8; 3]);

impl Currency {
    pub fn parse(code: &str) -> Result<Self, MoneyError> {
        if ACCEPTED_CURRENCIES.contains(&code) {
            let b = code.as_bytes();
            Ok(Self([b[0], b[1], b[2]]))
        } else {
            Err(MoneyError::UnknownCurrency(code.chars().take(8).collect()))
        }
    }

    pub fn code(&self) -> &str {
        // Only ever built from an accepted (ASCII) code.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("must be a decimal string such as \"24.50\"")]
    Malformed,
    #[error("must have at most two decimal places")]
    TooManyDecimals,
    #[error("must be greater than zero")]
    NotPositive,
    #[error("must be at most 1000000.00")]
    TooLarge,
    #[error("unknown or unsupported currency {0:?}")]
    UnknownCurrency(String),
    #[error("cannot combine {0} with {1}")]
    CurrencyMismatch(Currency, Currency),
}

/// An amount in minor units (cents) of one currency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Money {
    minor: i64,
    currency: Currency,
}

impl Money {
    pub fn from_minor(minor: i64, currency: Currency) -> Self {
        Self { minor, currency }
    }

    /// A price as a customer may be charged it: positive, at most two places, bounded.
    pub fn parse_price(amount: &str, currency: &str) -> Result<Self, MoneyError> {
        let minor = parse_minor_units(amount)?;
        if minor <= 0 {
            return Err(MoneyError::NotPositive);
        }
        if minor > MAX_AMOUNT_MINOR {
            return Err(MoneyError::TooLarge);
        }
        Ok(Self {
            minor,
            currency: Currency::parse(currency)?,
        })
    }

    /// An amount the system computed (an order's total, a revenue): the same decimal form,
    /// without a price's bound, so a total of many prices reads back as written.
    pub fn parse_amount(amount: &str, currency: &str) -> Result<Self, MoneyError> {
        Ok(Self {
            minor: parse_minor_units(amount)?,
            currency: Currency::parse(currency)?,
        })
    }

    pub fn minor(&self) -> i64 {
        self.minor
    }

    pub fn currency(&self) -> Currency {
        self.currency
    }

    pub fn checked_add(self, other: Money) -> Result<Money, MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch(self.currency, other.currency));
        }
        let minor = self
            .minor
            .checked_add(other.minor)
            .ok_or(MoneyError::TooLarge)?;
        Ok(Money {
            minor,
            currency: self.currency,
        })
    }

    /// The decimal string form, always with two places: `"24.50"`.
    pub fn amount(&self) -> String {
        let sign = if self.minor < 0 { "-" } else { "" };
        let abs = self.minor.unsigned_abs();
        format!("{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// `"12"`, `"12.5"`, `"12.50"` → 1250. No signs other than a leading `-`, no exponent,
/// no spaces, no thousands separators.
fn parse_minor_units(text: &str) -> Result<i64, MoneyError> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((w, f)) => (w, f),
        None => (digits, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !all_digits(whole)
        || !all_digits(fraction)
        || (digits.contains('.') && fraction.is_empty())
    {
        return Err(MoneyError::Malformed);
    }
    if fraction.len() > 2 {
        return Err(MoneyError::TooManyDecimals);
    }
    if whole.len() > 12 {
        return Err(MoneyError::TooLarge);
    }
    let whole: i64 = whole.parse().map_err(|_| MoneyError::Malformed)?;
    let cents: i64 = format!("{fraction:0<2}")
        .parse()
        .map_err(|_| MoneyError::Malformed)?;
    let minor = whole * 100 + cents;
    Ok(if negative { -minor } else { minor })
}

/// The wire form: `{"amount": "24.50", "currency": "EUR"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoneyDto {
    pub amount: String,
    pub currency: String,
}

impl From<Money> for MoneyDto {
    fn from(money: Money) -> Self {
        Self {
            amount: money.amount(),
            currency: money.currency().code().to_owned(),
        }
    }
}

impl Serialize for Money {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MoneyDto::from(*self).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eur() -> Currency {
        Currency::parse("EUR").unwrap()
    }

    #[test]
    fn parses_prices() {
        assert_eq!(Money::parse_price("24.50", "EUR").unwrap().minor(), 2450);
        assert_eq!(Money::parse_price("24.5", "EUR").unwrap().minor(), 2450);
        assert_eq!(Money::parse_price("24", "EUR").unwrap().minor(), 2400);
        assert_eq!(Money::parse_price("0.01", "EUR").unwrap().minor(), 1);
    }

    #[test]
    fn rejects_bad_prices() {
        assert_eq!(
            Money::parse_price("24.505", "EUR"),
            Err(MoneyError::TooManyDecimals)
        );
        assert_eq!(Money::parse_price("0", "EUR"), Err(MoneyError::NotPositive));
        assert_eq!(
            Money::parse_price("0.00", "EUR"),
            Err(MoneyError::NotPositive)
        );
        assert_eq!(
            Money::parse_price("-1.00", "EUR"),
            Err(MoneyError::NotPositive)
        );
        assert_eq!(
            Money::parse_price("1000000.01", "EUR"),
            Err(MoneyError::TooLarge)
        );
        for malformed in ["", ".5", "5.", "1e3", " 5", "5,00", "+5", "five", "1.2.3"] {
            assert_eq!(
                Money::parse_price(malformed, "EUR"),
                Err(MoneyError::Malformed),
                "{malformed:?}"
            );
        }
        assert!(matches!(
            Money::parse_price("5.00", "XYZ"),
            Err(MoneyError::UnknownCurrency(_))
        ));
        assert!(matches!(
            Money::parse_price("5.00", "eur"),
            Err(MoneyError::UnknownCurrency(_))
        ));
    }

    #[test]
    fn refuses_to_add_different_currencies() {
        let a = Money::from_minor(100, eur());
        let b = Money::from_minor(100, Currency::parse("USD").unwrap());
        assert!(matches!(
            a.checked_add(b),
            Err(MoneyError::CurrencyMismatch(_, _))
        ));
        assert_eq!(a.checked_add(a).unwrap().amount(), "2.00");
    }

    proptest! {
        #[test]
        fn amount_text_round_trips(minor in 1i64..=MAX_AMOUNT_MINOR) {
            let money = Money::from_minor(minor, eur());
            prop_assert_eq!(Money::parse_price(&money.amount(), "EUR").unwrap(), money);
        }

        #[test]
        fn totals_read_back_as_written(minor in 1i64..=MAX_AMOUNT_MINOR * 1000) {
            let total = Money::from_minor(minor, Currency::parse("EUR").unwrap());
            prop_assert_eq!(Money::parse_amount(&total.amount(), "EUR"), Ok(total));
        }

        #[test]
        fn sums_are_exact(a in 0i64..=MAX_AMOUNT_MINOR, b in 0i64..=MAX_AMOUNT_MINOR) {
            let sum = Money::from_minor(a, eur()).checked_add(Money::from_minor(b, eur())).unwrap();
            prop_assert_eq!(sum.minor(), a + b);
        }
    }
}
