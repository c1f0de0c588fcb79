//! Prices that follow freshness (issue 53): a shop's opt-in markdown rule, and what a new
//! freshness score does to a bouquet's price.
//!
//! The rule has steps (below a score, so much off the list price), a floor (a share of the list
//! price the price never goes under) and an optional withdrawal score (below it an available
//! bouquet leaves the storefront, "past its best"). Two rules make it safe to apply from
//! readings that arrive late, twice or out of order:
//! - **the price never rises as freshness falls:** a step applies only when it makes the price
//!   lower than it is, so a late reading with a better score, or a shop that softens its rule,
//!   changes nothing already marked down;
//! - **a bouquet returns to its list price only when a new bouquet is placed in the vase**
//!   (a new listing) or the florist sets a new price.

use serde::{Deserialize, Serialize};

use crate::money::Money;
use crate::validation::{FieldError, Validation};

/// Basis points in a whole (100 %).
const WHOLE: i64 = 10_000;
/// The most steps a rule may have.
pub const MAX_STEPS: usize = 8;
/// The most a step may take off (90 %).
pub const MAX_OFF_BASIS_POINTS: u16 = 9_000;

/// One step: below `below` points of freshness, `off_basis_points` off the list price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkdownStep {
    pub below: u8,
    pub off_basis_points: u16,
}

/// A shop's markdown rule, as it sets it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkdownRule {
    /// Off: no bouquet of the shop is repriced or withdrawn.
    pub enabled: bool,
    pub steps: Vec<MarkdownStep>,
    /// The price never goes under this share of the list price (5,000: half).
    pub floor_basis_points: u16,
    /// Below this score an available bouquet leaves the storefront; `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdraw_below: Option<u8>,
}

impl Default for MarkdownRule {
    /// What a shop that set nothing has: off, with the steps the console proposes.
    fn default() -> Self {
        Self {
            enabled: false,
            steps: vec![
                MarkdownStep {
                    below: 80,
                    off_basis_points: 1_000,
                },
                MarkdownStep {
                    below: 60,
                    off_basis_points: 2_500,
                },
            ],
            floor_basis_points: 5_000,
            withdraw_below: Some(30),
        }
    }
}

/// What a new score does to a bouquet's price.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repricing {
    /// The price stays as it is.
    Unchanged,
    /// The bouquet sells at `price` from now on, by `step`.
    MarkDown { price: Money, step: MarkdownStep },
    /// Below the withdrawal score: the bouquet leaves the storefront.
    PastItsBest,
}

impl MarkdownRule {
    /// Checks the rule and orders its steps from the highest score down. Each lower step must
    /// take more off than the one above it: the price only falls as freshness does.
    pub fn validate(mut self) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        if self.steps.len() > MAX_STEPS {
            v.add("steps", format!("at most {MAX_STEPS} steps"));
        }
        self.steps.sort_by_key(|step| std::cmp::Reverse(step.below));
        for (i, step) in self.steps.iter().enumerate() {
            if !(1..=100).contains(&step.below) {
                v.add(format!("steps[{i}].below"), "must be 1 to 100");
            }
            if !(1..=MAX_OFF_BASIS_POINTS).contains(&step.off_basis_points) {
                v.add(
                    format!("steps[{i}].offBasisPoints"),
                    format!("must be 1 to {MAX_OFF_BASIS_POINTS}"),
                );
            }
        }
        for (i, pair) in self.steps.windows(2).enumerate() {
            if pair[0].below == pair[1].below {
                v.add(format!("steps[{}].below", i + 1), "two steps at one score");
            } else if pair[1].off_basis_points <= pair[0].off_basis_points {
                v.add(
                    format!("steps[{}].offBasisPoints", i + 1),
                    "a lower step must take more off than the one above it",
                );
            }
        }
        if self.floor_basis_points > WHOLE as u16 {
            v.add("floorBasisPoints", "must be 0 to 10000");
        }
        if self.withdraw_below.is_some_and(|w| w > 100) {
            v.add("withdrawBelow", "must be 0 to 100");
        }
        v.finish(|| self)
    }

    /// The deepest step the score is under, if any.
    pub fn step_at(&self, score: u8) -> Option<MarkdownStep> {
        self.steps
            .iter()
            .filter(|step| score < step.below)
            .max_by_key(|step| step.off_basis_points)
            .copied()
    }

    /// `list` less the step's share, rounded half up to a minor unit, and never under the
    /// floor (itself rounded up, so the floor is never crossed by rounding).
    pub fn price(&self, list: Money, step: MarkdownStep) -> Money {
        let minor = list.minor();
        let kept = WHOLE - i64::from(step.off_basis_points);
        let marked = (minor * kept + WHOLE / 2) / WHOLE;
        Money::from_minor(marked.max(self.floor(list).minor()), list.currency())
    }

    /// The lowest price the rule allows for `list`.
    pub fn floor(&self, list: Money) -> Money {
        let floor = (list.minor() * i64::from(self.floor_basis_points) + WHOLE - 1) / WHOLE;
        Money::from_minor(floor.min(list.minor()), list.currency())
    }

    /// What `score` does to a bouquet listed at `list` and selling at `current`. `on_sale`:
    /// available (a held, sold or withdrawn bouquet is never withdrawn by its score).
    pub fn reprice(&self, list: Money, current: Money, score: u8, available: bool) -> Repricing {
        if !self.enabled {
            return Repricing::Unchanged;
        }
        if available && self.withdraw_below.is_some_and(|w| score < w) {
            return Repricing::PastItsBest;
        }
        match self.step_at(score) {
            Some(step) => {
                let price = self.price(list, step);
                if price.minor() < current.minor() {
                    Repricing::MarkDown { price, step }
                } else {
                    Repricing::Unchanged
                }
            }
            None => Repricing::Unchanged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;
    use proptest::prelude::*;

    fn eur(minor: i64) -> Money {
        Money::from_minor(minor, Currency::parse("EUR").unwrap())
    }

    fn rule() -> MarkdownRule {
        MarkdownRule {
            enabled: true,
            ..MarkdownRule::default()
        }
    }

    #[test]
    fn each_step_applies_below_its_score_and_the_deepest_wins() {
        let r = rule();
        assert_eq!(
            r.reprice(eur(4000), eur(4000), 80, true),
            Repricing::Unchanged
        );
        assert_eq!(
            r.reprice(eur(4000), eur(4000), 79, true),
            Repricing::MarkDown {
                price: eur(3600),
                step: r.steps[0]
            }
        );
        assert_eq!(
            r.reprice(eur(4000), eur(3600), 59, true),
            Repricing::MarkDown {
                price: eur(3000),
                step: r.steps[1]
            }
        );
    }

    #[test]
    fn a_better_score_or_a_repeat_never_raises_the_price() {
        let r = rule();
        // Marked down to 30.00 at step 60; a late reading scoring 75 changes nothing.
        assert_eq!(
            r.reprice(eur(4000), eur(3000), 75, true),
            Repricing::Unchanged
        );
        assert_eq!(
            r.reprice(eur(4000), eur(3000), 95, true),
            Repricing::Unchanged
        );
        assert_eq!(
            r.reprice(eur(4000), eur(3000), 55, true),
            Repricing::Unchanged
        );
    }

    #[test]
    fn the_floor_holds_whatever_the_step() {
        let r = MarkdownRule {
            enabled: true,
            steps: vec![MarkdownStep {
                below: 90,
                off_basis_points: 9_000,
            }],
            floor_basis_points: 6_667,
            withdraw_below: None,
        };
        // 90 % off 10.01 is 1.00; the floor is 66.67 % of 10.01 = 6.673..., rounded up 6.68.
        assert_eq!(
            r.reprice(eur(1001), eur(1001), 10, true),
            Repricing::MarkDown {
                price: eur(668),
                step: r.steps[0]
            }
        );
    }

    #[test]
    fn below_the_withdrawal_score_an_available_bouquet_is_past_its_best() {
        let r = rule();
        assert_eq!(
            r.reprice(eur(4000), eur(3000), 29, true),
            Repricing::PastItsBest
        );
        // Held or sold: it keeps its price and stays with its order.
        assert_eq!(
            r.reprice(eur(4000), eur(3000), 29, false),
            Repricing::Unchanged
        );
        assert_eq!(
            r.reprice(eur(4000), eur(4000), 29, false),
            Repricing::MarkDown {
                price: eur(3000),
                step: r.steps[1]
            }
        );
    }

    #[test]
    fn a_rule_that_is_off_changes_nothing() {
        assert_eq!(
            MarkdownRule::default().reprice(eur(4000), eur(4000), 5, true),
            Repricing::Unchanged
        );
    }

    #[test]
    fn invalid_rules_say_which_field() {
        let bad = MarkdownRule {
            enabled: true,
            steps: vec![
                MarkdownStep {
                    below: 80,
                    off_basis_points: 3_000,
                },
                MarkdownStep {
                    below: 60,
                    off_basis_points: 2_000,
                },
                MarkdownStep {
                    below: 120,
                    off_basis_points: 9_500,
                },
            ],
            floor_basis_points: 12_000,
            withdraw_below: Some(101),
        };
        let fields = crate::validation::refused_fields(bad.validate());
        assert_eq!(
            fields,
            [
                "steps[0].below",
                "steps[0].offBasisPoints",
                "steps[1].offBasisPoints",
                "steps[2].offBasisPoints",
                "floorBasisPoints",
                "withdrawBelow"
            ]
        );
        let sorted = MarkdownRule {
            steps: vec![
                MarkdownStep {
                    below: 60,
                    off_basis_points: 2_500,
                },
                MarkdownStep {
                    below: 80,
                    off_basis_points: 1_000,
                },
            ],
            ..rule()
        }
        .validate()
        .expect("valid");
        assert_eq!(sorted.steps[0].below, 80);
    }

    fn any_rule() -> impl Strategy<Value = MarkdownRule> {
        (
            proptest::collection::btree_set(1u8..=100, 0..=MAX_STEPS),
            proptest::collection::btree_set(1u16..=MAX_OFF_BASIS_POINTS, MAX_STEPS),
            0u16..=10_000,
            proptest::option::of(0u8..=100),
        )
            .prop_map(|(belows, offs, floor, withdraw)| {
                // Highest score first, smallest discount first: a valid rule.
                let steps = belows
                    .into_iter()
                    .rev()
                    .zip(offs)
                    .map(|(below, off_basis_points)| MarkdownStep {
                        below,
                        off_basis_points,
                    })
                    .collect();
                MarkdownRule {
                    enabled: true,
                    steps,
                    floor_basis_points: floor,
                    withdraw_below: withdraw,
                }
            })
    }

    proptest! {
        /// Whatever rule and whatever scores arrive, in any order and repeated: the price
        /// never rises, never goes under the floor, never above the list price.
        #[test]
        fn the_price_only_falls_and_stays_between_floor_and_list(
            rule in any_rule(),
            list in 1i64..1_000_000,
            scores in proptest::collection::vec(0u8..=100, 1..40),
        ) {
            let rule = rule.validate().expect("generated rules are valid");
            let list = eur(list);
            let mut current = list;
            for score in scores {
                match rule.reprice(list, current, score, false) {
                    Repricing::MarkDown { price, step } => {
                        prop_assert!(price.minor() < current.minor());
                        prop_assert!(score < step.below);
                        current = price;
                    }
                    Repricing::Unchanged => {}
                    Repricing::PastItsBest => prop_assert!(false, "a held bouquet is never withdrawn"),
                }
                prop_assert!(current.minor() >= rule.floor(list).minor());
                prop_assert!(current.minor() <= list.minor());
            }
        }
    }
}
