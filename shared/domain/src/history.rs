//! A vase's reading history at a cost that does not grow with its age (issue 53): raw readings
//! for 48 hours, then 15-minute buckets (count, min, max, mean of each sensor) for 30 days,
//! both expiring by TTL (docs/capacity.md).
//!
//! The bucket being filled rides on the vase item, folded in by each new latest reading (the
//! vase item is already written by it, so folding costs no write); when a reading starts the
//! next window, the finished bucket is written as its own item in the same transaction. A
//! late reading (not the latest) is kept raw but not folded: buckets summarise the readings
//! in the order they became the latest, which is every reading of a vase whose messages
//! arrive in order.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::freshness::Reading;

/// Raw readings are kept this long.
pub const RAW_RETENTION: Duration = Duration::from_secs(48 * 60 * 60);
/// Buckets are kept this long.
pub const BUCKET_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// The width of a bucket.
pub const BUCKET_WIDTH: Duration = Duration::from_secs(15 * 60);

/// Count, minimum, maximum and sum of one sensor's values in a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub min: f64,
    pub max: f64,
    pub sum: f64,
}

impl Span {
    fn of(value: f64) -> Self {
        Self {
            min: value,
            max: value,
            sum: value,
        }
    }

    fn fold(&mut self, value: f64) {
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += value;
    }
}

/// The readings of one 15-minute window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    pub start: Timestamp,
    pub count: u32,
    pub water_level_pct: Span,
    pub temperature_c: Span,
    pub humidity_pct: Span,
    pub light_lux: Span,
}

/// A bucket as a reader sees it: min, max and mean of each sensor.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketView {
    pub start: Timestamp,
    pub count: u32,
    pub water_level_pct: Summary,
    pub temperature_c: Summary,
    pub humidity_pct: Summary,
    pub light_lux: Summary,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

/// The start of the window `at` falls in.
pub fn window_start(at: Timestamp) -> Timestamp {
    let width = BUCKET_WIDTH.as_millis() as i64;
    Timestamp::from_millis(at.as_millis().div_euclid(width) * width)
}

impl Bucket {
    pub fn start_with(reading: &Reading) -> Self {
        Self {
            start: window_start(reading.sent_at),
            count: 1,
            water_level_pct: Span::of(reading.water_level_pct),
            temperature_c: Span::of(reading.temperature_c),
            humidity_pct: Span::of(reading.humidity_pct),
            light_lux: Span::of(reading.light_lux),
        }
    }

    /// Folds `reading` in when it falls in this window: `None` when it starts the next one.
    pub fn fold(&self, reading: &Reading) -> Option<Bucket> {
        if window_start(reading.sent_at) != self.start {
            return None;
        }
        let mut next = *self;
        next.count += 1;
        next.water_level_pct.fold(reading.water_level_pct);
        next.temperature_c.fold(reading.temperature_c);
        next.humidity_pct.fold(reading.humidity_pct);
        next.light_lux.fold(reading.light_lux);
        Some(next)
    }

    pub fn view(&self) -> BucketView {
        let summary = |s: Span| Summary {
            min: s.min,
            max: s.max,
            mean: s.sum / f64::from(self.count.max(1)),
        };
        BucketView {
            start: self.start,
            count: self.count,
            water_level_pct: summary(self.water_level_pct),
            temperature_c: summary(self.temperature_c),
            humidity_pct: summary(self.humidity_pct),
            light_lux: summary(self.light_lux),
        }
    }
}

/// The running bucket after a new latest reading, and the finished one to write, if any.
pub fn fold(running: Option<Bucket>, reading: &Reading) -> (Bucket, Option<Bucket>) {
    match running {
        None => (Bucket::start_with(reading), None),
        Some(bucket) => match bucket.fold(reading) {
            Some(next) => (next, None),
            None => (Bucket::start_with(reading), Some(bucket)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(second: u64, water: f64) -> Reading {
        Reading {
            sent_at: Timestamp::from_millis(1_796_227_200_000).plus(Duration::from_secs(second)),
            water_level_pct: water,
            temperature_c: 18.0,
            humidity_pct: 60.0,
            light_lux: 800.0,
        }
    }

    #[test]
    fn an_hour_at_one_reading_a_second_finishes_four_buckets_of_900() {
        let mut running = None;
        let mut finished = Vec::new();
        for second in 0..3600 {
            let (next, done) = fold(running, &reading(second, (second % 100) as f64));
            running = Some(next);
            finished.extend(done);
        }
        // The fourth is still running at the end of the hour.
        assert_eq!(finished.len(), 3);
        assert!(finished.iter().all(|b| b.count == 900));
        let view = finished[0].view();
        assert_eq!(
            (view.water_level_pct.min, view.water_level_pct.max),
            (0.0, 99.0)
        );
        assert!((view.water_level_pct.mean - 49.5).abs() < 1e-9);
        assert_eq!(running.expect("running").count, 900);
    }

    #[test]
    fn windows_start_on_the_quarter_hour() {
        let start = window_start(reading(899, 1.0).sent_at);
        assert_eq!(start, reading(0, 1.0).sent_at);
        assert_eq!(
            window_start(reading(900, 1.0).sent_at),
            reading(900, 1.0).sent_at
        );
    }
}
