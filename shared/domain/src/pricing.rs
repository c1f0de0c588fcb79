//! What an order costs beyond its bouquets, and what its receipt says (issue 41): the shop's
//! delivery fee (by zone, a postcode prefix, plus a same-day surcharge) and VAT.
//!
//! Prices shown to customers include VAT. **The VAT rule** (one, everywhere): a VAT-inclusive
//! gross at a rate of `r` basis points has the net `gross × 10,000 ÷ (10,000 + r)` rounded half
//! up to a whole minor unit, and the VAT `gross − net`. Each line and the delivery are split on
//! their own; the receipt's totals are the sums of the splits, so every column adds up.

use serde::{Deserialize, Serialize};

use crate::money::{Currency, Money, MAX_AMOUNT_MINOR};
use crate::validation::Validation;

/// Basis points in a whole (100 %).
const WHOLE: i64 = 10_000;
/// The highest VAT rate a shop may set (50 %): above any country's.
pub const MAX_VAT_BASIS_POINTS: u16 = 5_000;
/// The most zones a shop may price.
pub const MAX_ZONES: usize = 50;
/// The most a delivery fee or surcharge may be (1,000.00).
const MAX_FEE_MINOR: i64 = 100_000;

/// A shop's delivery fees, as it edits them (amounts are VAT-inclusive decimal strings in the
/// order's currency): every field may be left out, and a shop that sets none delivers free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliveryFees {
    /// The fee for a postcode in none of the zones.
    #[serde(default = "zero")]
    pub standard: String,
    /// Fees by postcode prefix; the longest prefix that matches wins.
    #[serde(default)]
    pub zones: Vec<ZoneFee>,
    /// Added when the delivery is for the shop's today.
    #[serde(default = "zero")]
    pub same_day_surcharge: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ZoneFee {
    pub postcode_prefix: String,
    pub fee: String,
}

/// A shop's VAT registration and rates (flowers and delivery may differ).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VatSettings {
    /// Its VAT number (`FR12345678901`); none: the receipts show no VAT number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    #[serde(default)]
    pub flowers_basis_points: u16,
    #[serde(default)]
    pub delivery_basis_points: u16,
}

fn zero() -> String {
    "0.00".into()
}

impl Default for DeliveryFees {
    fn default() -> Self {
        Self {
            standard: zero(),
            zones: Vec::new(),
            same_day_surcharge: zero(),
        }
    }
}

/// A fee as a shop writes it: `"4.5"` → 450; zero allowed, bounded.
fn fee_minor(text: &str) -> Result<i64, String> {
    let probe = Money::parse_amount(text.trim(), "EUR").map_err(|e| e.to_string())?;
    match probe.minor() {
        minor if minor < 0 => Err("must not be negative".into()),
        minor if minor > MAX_FEE_MINOR => Err("must be at most 1000.00".into()),
        minor => Ok(minor),
    }
}

fn decimal(minor: i64) -> String {
    Money::from_minor(minor, Currency::parse("EUR").expect("EUR is accepted")).amount()
}

/// A postcode or prefix as compared: upper case, no spaces.
pub(crate) fn postcode_key(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase()
}

impl DeliveryFees {
    /// Checks and normalises the fees (`"4.5"` is written back `"4.50"`), each problem under
    /// `fees.*`.
    pub(crate) fn validate(&mut self, v: &mut Validation) {
        if let Some(minor) = v.check("fees.standard", fee_minor(&self.standard)) {
            self.standard = decimal(minor);
        }
        if let Some(minor) = v.check("fees.sameDaySurcharge", fee_minor(&self.same_day_surcharge)) {
            self.same_day_surcharge = decimal(minor);
        }
        if self.zones.len() > MAX_ZONES {
            v.add("fees.zones", format!("at most {MAX_ZONES} zones"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (index, zone) in self.zones.iter_mut().enumerate() {
            zone.postcode_prefix = postcode_key(&zone.postcode_prefix);
            let prefix = &zone.postcode_prefix;
            if prefix.is_empty()
                || prefix.len() > 10
                || !prefix.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                v.add(
                    format!("fees.zones[{index}].postcodePrefix"),
                    "must be 1 to 10 letters or digits",
                );
            } else if !seen.insert(prefix.clone()) {
                v.add(
                    format!("fees.zones[{index}].postcodePrefix"),
                    "is priced twice",
                );
            }
            if let Some(minor) = v.check(&format!("fees.zones[{index}].fee"), fee_minor(&zone.fee))
            {
                zone.fee = decimal(minor);
            }
        }
    }

    /// The fee for `postcode` (and the zone that priced it), and the surcharge if `same_day`.
    fn price(&self, postcode: &str, same_day: bool) -> (i64, Option<String>, i64) {
        let postcode = postcode_key(postcode);
        let zone = self
            .zones
            .iter()
            .filter(|z| postcode.starts_with(z.postcode_prefix.as_str()))
            .max_by_key(|z| z.postcode_prefix.len());
        let fee = zone.map_or(&self.standard, |z| &z.fee);
        let surcharge = if same_day {
            fee_minor(&self.same_day_surcharge).unwrap_or(0)
        } else {
            0
        };
        (
            fee_minor(fee).unwrap_or(0),
            zone.map(|z| z.postcode_prefix.clone()),
            surcharge,
        )
    }
}

impl VatSettings {
    pub(crate) fn validate(&mut self, v: &mut Validation) {
        for (field, rate) in [
            ("vat.flowersBasisPoints", self.flowers_basis_points),
            ("vat.deliveryBasisPoints", self.delivery_basis_points),
        ] {
            if rate > MAX_VAT_BASIS_POINTS {
                v.add(
                    field,
                    format!("must be at most {MAX_VAT_BASIS_POINTS} (50 %)"),
                );
            }
        }
        self.number = self
            .number
            .take()
            .map(|n| postcode_key(&n))
            .filter(|n| !n.is_empty());
        if let Some(number) = &self.number {
            let (country, rest) = number.split_at(number.len().min(2));
            if !(country.bytes().all(|b| b.is_ascii_uppercase())
                && (2..=13).contains(&rest.len())
                && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                v.add(
                    "vat.number",
                    "must be a country code and 2 to 13 letters or digits, such as FR12345678901",
                );
            }
        }
    }
}

/// The VAT an order's receipt applies: the shop's number and rates when the order was priced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VatRates {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    pub flowers_basis_points: u16,
    pub delivery_basis_points: u16,
}

/// What the server priced when the delivery details were given: the delivery fee (the
/// surcharge included) and the VAT rates. Fixed with the details; a change of address prices
/// again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pricing {
    /// VAT-inclusive, the same-day surcharge included.
    pub delivery_fee: Money,
    /// The part of the fee that is the same-day surcharge (zero otherwise).
    pub same_day_surcharge: Money,
    /// The postcode prefix whose fee applied; none: the standard fee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    pub vat: VatRates,
}

impl Pricing {
    /// Prices a delivery to `postcode` in `currency`, `same_day` or not, at a shop's `fees` and
    /// `vat`.
    pub fn new(
        fees: &DeliveryFees,
        vat: &VatSettings,
        postcode: &str,
        same_day: bool,
        currency: Currency,
    ) -> Pricing {
        let (fee, zone, surcharge) = fees.price(postcode, same_day);
        Pricing {
            delivery_fee: Money::from_minor(fee + surcharge, currency),
            same_day_surcharge: Money::from_minor(surcharge, currency),
            zone,
            vat: VatRates {
                number: vat.number.clone(),
                flowers_basis_points: vat.flowers_basis_points,
                delivery_basis_points: vat.delivery_basis_points,
            },
        }
    }

    /// The receipt of `lines` (each bouquet's name and price) and this delivery: net, VAT and
    /// gross per line, for delivery and in total (the module's rule).
    pub fn receipt<'a>(&self, lines: impl IntoIterator<Item = (&'a str, Money)>) -> Receipt {
        let mut parts: Vec<ReceiptLine> = lines
            .into_iter()
            .map(|(name, price)| ReceiptLine::split(name, price, self.vat.flowers_basis_points))
            .collect();
        let delivery = ReceiptLine::split(
            "Delivery",
            self.delivery_fee,
            self.vat.delivery_basis_points,
        );
        parts.push(delivery.clone());
        let currency = self.delivery_fee.currency();
        let sum = |pick: fn(&ReceiptLine) -> i64| {
            Money::from_minor(parts.iter().map(pick).sum(), currency)
        };
        let total = Amounts {
            net: sum(|p| p.amounts.net.minor()),
            vat: sum(|p| p.amounts.vat.minor()),
            gross: sum(|p| p.amounts.gross.minor()),
        };
        parts.pop();
        Receipt {
            lines: parts,
            delivery,
            total,
        }
    }
}

/// Net, VAT and gross of one thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Amounts {
    pub net: Money,
    pub vat: Money,
    pub gross: Money,
}

/// Splits a VAT-inclusive `gross` at `basis_points` (the module's rule).
pub fn split_vat(gross: Money, basis_points: u16) -> Amounts {
    let rate = i64::from(basis_points);
    let magnitude = gross.minor().abs().min(MAX_AMOUNT_MINOR * 100);
    // Half up: (2 × gross × WHOLE + divisor) ÷ (2 × divisor).
    let divisor = WHOLE + rate;
    let net = (2 * magnitude * WHOLE + divisor) / (2 * divisor);
    let net = if gross.minor() < 0 { -net } else { net };
    Amounts {
        net: Money::from_minor(net, gross.currency()),
        vat: Money::from_minor(gross.minor() - net, gross.currency()),
        gross,
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptLine {
    pub description: String,
    pub vat_basis_points: u16,
    #[serde(flatten)]
    pub amounts: Amounts,
}

impl ReceiptLine {
    fn split(description: &str, gross: Money, basis_points: u16) -> Self {
        Self {
            description: description.to_owned(),
            vat_basis_points: basis_points,
            amounts: split_vat(gross, basis_points),
        }
    }
}

/// An order's receipt: each bouquet, the delivery, and the totals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub lines: Vec<ReceiptLine>,
    pub delivery: ReceiptLine,
    pub total: Amounts,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eur(minor: i64) -> Money {
        Money::from_minor(minor, Currency::parse("EUR").unwrap())
    }

    fn fees() -> DeliveryFees {
        DeliveryFees {
            standard: "9.00".into(),
            zones: vec![
                ZoneFee {
                    postcode_prefix: "75".into(),
                    fee: "5.00".into(),
                },
                ZoneFee {
                    postcode_prefix: "7501".into(),
                    fee: "3.50".into(),
                },
            ],
            same_day_surcharge: "4.00".into(),
        }
    }

    #[test]
    fn the_longest_zone_prices_and_same_day_adds_its_surcharge() {
        let currency = Currency::parse("EUR").unwrap();
        let vat = VatSettings::default();
        let central = Pricing::new(&fees(), &vat, "75 011", false, currency);
        assert_eq!(central.delivery_fee, eur(350));
        assert_eq!(central.zone.as_deref(), Some("7501"));
        let paris = Pricing::new(&fees(), &vat, "75020", true, currency);
        assert_eq!(
            (paris.delivery_fee, paris.same_day_surcharge),
            (eur(900), eur(400))
        );
        let elsewhere = Pricing::new(&fees(), &vat, "69001", false, currency);
        assert_eq!((elsewhere.delivery_fee, elsewhere.zone), (eur(900), None));
        let free = Pricing::new(&DeliveryFees::default(), &vat, "69001", true, currency);
        assert_eq!(free.delivery_fee, eur(0));
    }

    #[test]
    fn fees_and_vat_are_checked_and_written_back_in_one_form() {
        let mut v = Validation::new();
        let mut fees = DeliveryFees {
            standard: "4.5".into(),
            zones: vec![
                ZoneFee {
                    postcode_prefix: "sw1".into(),
                    fee: "-1".into(),
                },
                ZoneFee {
                    postcode_prefix: "SW 1".into(),
                    fee: "2".into(),
                },
            ],
            same_day_surcharge: "1000.01".into(),
        };
        fees.validate(&mut v);
        let mut vat = VatSettings {
            number: Some("fr 123".into()),
            flowers_basis_points: 550,
            delivery_basis_points: 5_001,
        };
        vat.validate(&mut v);
        let errors = v.finish(|| ()).unwrap_err();
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "fees.sameDaySurcharge",
                "fees.zones[0].fee",
                "fees.zones[1].postcodePrefix",
                "vat.deliveryBasisPoints"
            ]
        );
        assert_eq!(fees.standard, "4.50");
        assert_eq!(fees.zones[1].fee, "2.00");
        assert_eq!(vat.number.as_deref(), Some("FR123"));
    }

    #[test]
    fn a_receipt_splits_each_line_and_the_delivery_and_adds_up() {
        let currency = Currency::parse("EUR").unwrap();
        let vat = VatSettings {
            number: Some("FR12345678901".into()),
            flowers_basis_points: 550,
            delivery_basis_points: 2_000,
        };
        let pricing = Pricing::new(&fees(), &vat, "75020", false, currency);
        let receipt = pricing.receipt([("Peonies", eur(2450)), ("Tulips", eur(1000))]);
        // 24.50 at 5.5 %: 23.22 + 1.28; 10.00: 9.48 + 0.52; delivery 5.00 at 20 %: 4.17 + 0.83.
        assert_eq!(receipt.lines[0].amounts.net, eur(2322));
        assert_eq!(receipt.lines[0].amounts.vat, eur(128));
        assert_eq!(receipt.lines[1].amounts.net, eur(948));
        assert_eq!(receipt.delivery.amounts.net, eur(417));
        assert_eq!(receipt.delivery.amounts.vat, eur(83));
        assert_eq!(receipt.total.gross, eur(3950));
        assert_eq!(receipt.total.net, eur(2322 + 948 + 417));
        assert_eq!(receipt.total.vat, eur(128 + 52 + 83));
    }

    proptest! {
        #[test]
        fn vat_splits_exactly_and_rounds_half_up(gross in 0i64..=MAX_AMOUNT_MINOR, bps in 0u16..=MAX_VAT_BASIS_POINTS) {
            let split = split_vat(eur(gross), bps);
            prop_assert_eq!(split.net.minor() + split.vat.minor(), gross);
            prop_assert!(split.vat.minor() >= 0 && split.net.minor() >= 0);
            // Within half a minor unit of the exact net.
            let exact = gross as f64 * 10_000.0 / (10_000.0 + f64::from(bps));
            prop_assert!((split.net.minor() as f64 - exact).abs() <= 0.5 + 1e-6);
        }

        #[test]
        fn one_more_unit_of_gross_moves_the_vat_by_at_most_one(gross in 0i64..MAX_AMOUNT_MINOR, bps in 0u16..=MAX_VAT_BASIS_POINTS) {
            let (low, high) = (split_vat(eur(gross), bps), split_vat(eur(gross + 1), bps));
            prop_assert!(high.net.minor() >= low.net.minor());
            prop_assert!(high.vat.minor() + 1 >= low.vat.minor());
        }
    }
}
