//! The marketplace's commission: how a paid order's gross splits into the marketplace's fee
//! and the shop's net.
//!
//! **The rounding rule** (one, everywhere): the fee is `gross × rate`, rounded half up to a
//! whole minor unit, i.e. `(gross × basis points + 5,000) ÷ 10,000` in integer arithmetic;
//! the net is `gross − fee`. So fee + net = gross exactly, 0 ≤ fee ≤ gross, and the fee is
//! within half a minor unit of the exact product. The fee is what the payment asks the PSP to
//! keep (Stripe's `application_fee_amount`); the net is what reaches the shop's account.

use serde::Serialize;

use crate::money::Money;

/// Basis points in a whole (100 %).
const WHOLE: i64 = 10_000;

/// A commission rate in basis points (1 bp = 0.01 %), from 0 to 10,000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct CommissionRate(u16);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a commission must be between 0 and 10000 basis points, not {0}")]
pub struct RateOutOfRange(pub i64);

impl CommissionRate {
    pub fn from_basis_points(basis_points: i64) -> Result<Self, RateOutOfRange> {
        u16::try_from(basis_points)
            .ok()
            .filter(|bps| i64::from(*bps) <= WHOLE)
            .map(Self)
            .ok_or(RateOutOfRange(basis_points))
    }

    pub fn basis_points(self) -> u16 {
        self.0
    }

    /// Splits `gross` by the rounding rule (module docs). A negative gross (never an order's)
    /// splits as its positive counterpart, negated.
    pub fn settle(self, gross: Money) -> Settlement {
        let magnitude = i64::try_from(gross.minor().unsigned_abs()).unwrap_or(i64::MAX);
        // Fits: an order's gross is bounded far below i64::MAX / 10,000 (money.rs).
        let fee = (magnitude.saturating_mul(i64::from(self.0)) + WHOLE / 2) / WHOLE;
        let fee = if gross.minor() < 0 { -fee } else { fee };
        Settlement {
            rate: self,
            gross,
            fee: Money::from_minor(fee, gross.currency()),
        }
    }
}

/// A paid order's money: what the customer paid, the marketplace's fee and the shop's net.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settlement {
    rate: CommissionRate,
    gross: Money,
    fee: Money,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a recorded fee of {fee} minor units is not the rule's {expected} for this gross and rate")]
pub struct FeeMismatch {
    pub fee: i64,
    pub expected: i64,
}

impl Settlement {
    /// A settlement as recorded: the fee must be the rule's, or the record is not believed.
    pub fn recorded(
        rate: CommissionRate,
        gross: Money,
        fee_minor: i64,
    ) -> Result<Self, FeeMismatch> {
        let settled = rate.settle(gross);
        if settled.fee.minor() == fee_minor {
            Ok(settled)
        } else {
            Err(FeeMismatch {
                fee: fee_minor,
                expected: settled.fee.minor(),
            })
        }
    }

    pub fn rate(&self) -> CommissionRate {
        self.rate
    }

    pub fn gross(&self) -> Money {
        self.gross
    }

    pub fn fee(&self) -> Money {
        self.fee
    }

    pub fn net(&self) -> Money {
        Money::from_minor(self.gross.minor() - self.fee.minor(), self.gross.currency())
    }
}

/// The wire form: `{"gross": {...}, "fee": {...}, "net": {...}, "commissionBasisPoints": 1500}`.
impl Serialize for Settlement {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Settlement", 4)?;
        out.serialize_field("gross", &self.gross)?;
        out.serialize_field("fee", &self.fee)?;
        out.serialize_field("net", &self.net())?;
        out.serialize_field("commissionBasisPoints", &self.rate)?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::{Currency, MAX_AMOUNT_MINOR};
    use proptest::prelude::*;

    fn eur(minor: i64) -> Money {
        Money::from_minor(minor, Currency::parse("EUR").unwrap())
    }

    fn rate(bps: i64) -> CommissionRate {
        CommissionRate::from_basis_points(bps).unwrap()
    }

    #[test]
    fn rounds_half_up_to_a_whole_minor_unit() {
        // 15 % of 24.50 is 3.675: 3.68 to the marketplace, 20.82 to the shop.
        let settled = rate(1500).settle(eur(2450));
        assert_eq!((settled.fee().minor(), settled.net().minor()), (368, 2082));
        // 12.5 % of 0.04 is 0.005 exactly: half rounds up.
        assert_eq!(rate(1250).settle(eur(4)).fee().minor(), 1);
        // 12.5 % of 0.03 is 0.00375: under half, down.
        assert_eq!(rate(1250).settle(eur(3)).fee().minor(), 0);
        assert_eq!(rate(0).settle(eur(2450)).fee().minor(), 0);
        assert_eq!(rate(10_000).settle(eur(2450)).net().minor(), 0);
    }

    #[test]
    fn a_rate_is_between_nothing_and_everything() {
        assert_eq!(
            CommissionRate::from_basis_points(-1),
            Err(RateOutOfRange(-1))
        );
        assert_eq!(
            CommissionRate::from_basis_points(10_001),
            Err(RateOutOfRange(10_001))
        );
        assert_eq!(rate(10_000).basis_points(), 10_000);
    }

    #[test]
    fn a_recorded_fee_must_be_the_rules() {
        assert_eq!(
            Settlement::recorded(rate(1500), eur(2450), 368),
            Ok(rate(1500).settle(eur(2450)))
        );
        assert_eq!(
            Settlement::recorded(rate(1500), eur(2450), 367),
            Err(FeeMismatch {
                fee: 367,
                expected: 368
            })
        );
    }

    #[test]
    fn the_wire_form_names_every_part() {
        let json = serde_json::to_value(rate(1500).settle(eur(2450))).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "gross": {"amount": "24.50", "currency": "EUR"},
                "fee": {"amount": "3.68", "currency": "EUR"},
                "net": {"amount": "20.82", "currency": "EUR"},
                "commissionBasisPoints": 1500,
            })
        );
    }

    proptest! {
        /// An order's gross is at most 20 lines at the largest price plus delivery.
        #[test]
        fn fee_and_net_make_the_gross(gross in 0i64..=MAX_AMOUNT_MINOR * 21, bps in 0i64..=10_000) {
            let settled = rate(bps).settle(eur(gross));
            prop_assert_eq!(settled.fee().minor() + settled.net().minor(), gross);
            prop_assert!((0..=gross).contains(&settled.fee().minor()));
            // Within half a minor unit of the exact product, half rounding up.
            let exact_times_whole = i128::from(gross) * i128::from(bps);
            let fee_times_whole = i128::from(settled.fee().minor()) * 10_000;
            prop_assert!(fee_times_whole - exact_times_whole <= 5_000);
            prop_assert!(exact_times_whole - fee_times_whole < 5_000);
        }

        #[test]
        fn more_gross_never_means_less_fee(a in 0i64..=MAX_AMOUNT_MINOR, b in 0i64..=MAX_AMOUNT_MINOR, bps in 0i64..=10_000) {
            let (low, high) = (a.min(b), a.max(b));
            prop_assert!(rate(bps).settle(eur(low)).fee().minor() <= rate(bps).settle(eur(high)).fee().minor());
        }
    }
}
