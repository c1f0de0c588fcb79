//! The freshness score of a bouquet in a smart vase: 0 (wilted) ..= 100 (just cut), a pure
//! function of the vase's latest reading and the bouquet's age.
//!
//! Start at 100 and subtract a penalty per factor, each capped so no single sensor can zero
//! the score on its own:
//!
//! | factor | no penalty | penalty | cap |
//! |---|---|---|---|
//! | age since listing | - | 50 points spread over 7 days, linear | 50 |
//! | water level | >= 40 % | 0.75 per % below 40 | 30 |
//! | temperature | 2..=22 °C | 2 per °C outside | 20 |
//! | humidity | 40..=90 % | 0.5 per % outside | 10 |
//! | light | <= 10,000 lux (indirect) | 1 per 2,000 lux above | 10 |
//!
//! The result is rounded to the nearest integer. Cut flowers last about a week in good
//! conditions; a dry vase or a hot room is what kills them first, so those weigh most.

use std::time::Duration;

use serde::Serialize;

use crate::clock::Timestamp;

/// One sensor reading, as the vase sent it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reading {
    pub sent_at: Timestamp,
    pub water_level_pct: f64,
    pub temperature_c: f64,
    pub humidity_pct: f64,
    pub light_lux: f64,
}

/// A change of at least this many points is news (`BouquetFreshnessChanged`).
pub const SIGNIFICANT_CHANGE: u8 = 5;

const AGE_SPAN: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The score of a bouquet listed at `listed_at`, given `reading`, which IoT Core received at
/// `received_at`. Age is measured to the receipt, not to the vase's own `sentAt`: a vase that
/// backdates its readings cannot make a bouquet look younger than it is.
pub fn score(reading: &Reading, listed_at: Timestamp, received_at: Timestamp) -> u8 {
    let age_ms = (received_at.as_millis() - listed_at.as_millis()).max(0) as f64;
    let age = (age_ms / AGE_SPAN.as_millis() as f64 * 50.0).min(50.0);
    let water = ((40.0 - reading.water_level_pct) * 0.75).clamp(0.0, 30.0);
    let temperature = (outside(reading.temperature_c, 2.0, 22.0) * 2.0).min(20.0);
    let humidity = (outside(reading.humidity_pct, 40.0, 90.0) * 0.5).min(10.0);
    let light = ((reading.light_lux - 10_000.0) / 2_000.0).clamp(0.0, 10.0);
    let score = 100.0 - age - water - temperature - humidity - light;
    score.round().clamp(0.0, 100.0) as u8
}

/// Whether moving from `previous` to `next` is worth an event: the first score always is.
pub fn is_significant(previous: Option<u8>, next: u8) -> bool {
    previous.is_none_or(|p| p.abs_diff(next) >= SIGNIFICANT_CHANGE)
}

/// How far `value` lies outside `low..=high` (0 inside).
fn outside(value: f64, low: f64, high: f64) -> f64 {
    if value < low {
        low - value
    } else if value > high {
        value - high
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LISTED: Timestamp = Timestamp::from_millis(1_796_228_211_000);
    const HOUR: Duration = Duration::from_secs(3600);

    /// The score of a reading received when it was sent.
    fn score_sent(reading: &Reading, listed_at: Timestamp) -> u8 {
        score(reading, listed_at, reading.sent_at)
    }

    #[test]
    fn a_backdated_reading_is_aged_to_its_receipt() {
        // Sent "at listing" but received a week later: as old as a week-old bouquet.
        let backdated = reading(80.0, 18.0, 60.0, 500.0, 0);
        let a_week_later = LISTED.plus(HOUR * 168);
        assert_eq!(score(&backdated, LISTED, a_week_later), 50);
        assert_eq!(score_sent(&backdated, LISTED), 100);
    }

    fn reading(water: f64, temp: f64, humidity: f64, lux: f64, hours: u64) -> Reading {
        Reading {
            sent_at: LISTED.plus(HOUR * hours as u32),
            water_level_pct: water,
            temperature_c: temp,
            humidity_pct: humidity,
            light_lux: lux,
        }
    }

    #[test]
    fn ideal_conditions_at_listing_score_100() {
        assert_eq!(
            score_sent(&reading(80.0, 18.0, 60.0, 500.0, 0), LISTED),
            100
        );
    }

    #[test]
    fn age_alone_costs_50_points_over_a_week_then_stops() {
        assert_eq!(
            score_sent(&reading(80.0, 18.0, 60.0, 500.0, 84), LISTED),
            75
        );
        assert_eq!(
            score_sent(&reading(80.0, 18.0, 60.0, 500.0, 168), LISTED),
            50
        );
        assert_eq!(
            score_sent(&reading(80.0, 18.0, 60.0, 500.0, 1000), LISTED),
            50
        );
    }

    #[test]
    fn each_factor_has_its_documented_penalty() {
        // Water 20 %: 20 below the threshold at 0.75 a point.
        assert_eq!(score_sent(&reading(20.0, 18.0, 60.0, 500.0, 0), LISTED), 85);
        // An empty vase costs the cap.
        assert_eq!(score_sent(&reading(0.0, 18.0, 60.0, 500.0, 0), LISTED), 70);
        // 27 °C is 5 above the range.
        assert_eq!(score_sent(&reading(80.0, 27.0, 60.0, 500.0, 0), LISTED), 90);
        // Freezing: 2 below the range.
        assert_eq!(score_sent(&reading(80.0, 0.0, 60.0, 500.0, 0), LISTED), 96);
        // Humidity 20 %: 20 below at 0.5.
        assert_eq!(score_sent(&reading(80.0, 18.0, 20.0, 500.0, 0), LISTED), 90);
        // Direct sun, 50,000 lux: capped at 10.
        assert_eq!(
            score_sent(&reading(80.0, 18.0, 60.0, 50_000.0, 0), LISTED),
            90
        );
    }

    #[test]
    fn the_worst_case_is_zero() {
        assert_eq!(
            score_sent(&reading(0.0, 60.0, 0.0, 100_000.0, 500), LISTED),
            0
        );
    }

    #[test]
    fn a_reading_before_listing_counts_as_age_zero() {
        let mut early = reading(80.0, 18.0, 60.0, 500.0, 0);
        early.sent_at = LISTED.minus(HOUR);
        assert_eq!(score_sent(&early, LISTED), 100);
    }

    #[test]
    fn significance_threshold() {
        assert!(is_significant(None, 100));
        assert!(!is_significant(Some(80), 84));
        assert!(!is_significant(Some(80), 76));
        assert!(is_significant(Some(80), 85));
        assert!(is_significant(Some(80), 75));
    }

    proptest! {
        #[test]
        fn score_is_in_range_and_never_rises_with_age(
            water in 0.0f64..=100.0,
            temp in -20.0f64..=50.0,
            humidity in 0.0f64..=100.0,
            lux in 0.0f64..=150_000.0,
            hours in 0u64..=400,
            more in 0u64..=400,
        ) {
            let now = score_sent(&reading(water, temp, humidity, lux, hours), LISTED);
            let later = score_sent(&reading(water, temp, humidity, lux, hours + more), LISTED);
            prop_assert!(now <= 100);
            prop_assert!(later <= now);
        }

        #[test]
        fn more_water_never_lowers_the_score(
            water in 0.0f64..=99.0,
            extra in 0.0f64..=50.0,
            temp in -20.0f64..=50.0,
            hours in 0u64..=400,
        ) {
            let dry = score_sent(&reading(water, temp, 60.0, 500.0, hours), LISTED);
            let wet = score_sent(&reading((water + extra).min(100.0), temp, 60.0, 500.0, hours), LISTED);
            prop_assert!(wet >= dry);
        }
    }
}
