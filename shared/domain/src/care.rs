//! Care alerts (issue 53): what a vase's readings say a florist should act on, opened once per
//! vase and condition and closed with hysteresis.
//!
//! A condition (water low, too hot, too cold, too dark, too bright) **opens** an alert on the
//! first latest reading in which it holds, unless one is open already. An open alert
//! **closes** only once the condition has been clear for the shop's `clearAfterMinutes`
//! (by the readings' own times): a reading that hovers at a threshold opens one alert, not
//! fifty. `offline` opens when the vase goes offline and closes when it comes back (its hour
//! of silence is its hysteresis). The state lives on the vase item, written with the reading
//! that moved it, so two readings racing cannot both open one.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::freshness::Reading;
use crate::ids::{VaseId, VendorId};
use crate::validation::{FieldError, Validation};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    WaterLow,
    TooHot,
    TooCold,
    TooDark,
    TooBright,
    Offline,
}

impl Condition {
    pub const ALL: [Condition; 6] = [
        Condition::WaterLow,
        Condition::TooHot,
        Condition::TooCold,
        Condition::TooDark,
        Condition::TooBright,
        Condition::Offline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Condition::WaterLow => "water_low",
            Condition::TooHot => "too_hot",
            Condition::TooCold => "too_cold",
            Condition::TooDark => "too_dark",
            Condition::TooBright => "too_bright",
            Condition::Offline => "offline",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == text)
    }

    /// What a florist reads in a mail or a list.
    pub fn describe(self) -> &'static str {
        match self {
            Condition::WaterLow => "the water is low",
            Condition::TooHot => "it is too hot",
            Condition::TooCold => "it is too cold",
            Condition::TooDark => "it is too dark",
            Condition::TooBright => "it is in too bright a light",
            Condition::Offline => "the vase is offline",
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A shop's thresholds. `None` turns a condition off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CareThresholds {
    #[serde(default)]
    pub water_low_pct: Option<f64>,
    #[serde(default)]
    pub temperature_max_c: Option<f64>,
    #[serde(default)]
    pub temperature_min_c: Option<f64>,
    #[serde(default)]
    pub light_min_lux: Option<f64>,
    #[serde(default)]
    pub light_max_lux: Option<f64>,
    /// How long a condition must stay clear before its alert closes.
    pub clear_after_minutes: u32,
}

impl Default for CareThresholds {
    /// Cut flowers drink most in the first days (below a quarter the stems dry), keep best at
    /// 2-24 °C, and wilt in direct sun (above 30,000 lux). Darkness is off by default: shops
    /// are dark at night.
    fn default() -> Self {
        Self {
            water_low_pct: Some(25.0),
            temperature_max_c: Some(24.0),
            temperature_min_c: Some(2.0),
            light_min_lux: None,
            light_max_lux: Some(30_000.0),
            clear_after_minutes: 10,
        }
    }
}

impl CareThresholds {
    pub fn validate(self) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        let mut within = |field: &str, value: Option<f64>, low: f64, high: f64| {
            if value.is_some_and(|x| !(low..=high).contains(&x) || !x.is_finite()) {
                v.add(field, format!("must be {low} to {high}"));
            }
        };
        within("waterLowPct", self.water_low_pct, 0.0, 100.0);
        within("temperatureMaxC", self.temperature_max_c, -50.0, 80.0);
        within("temperatureMinC", self.temperature_min_c, -50.0, 80.0);
        within("lightMinLux", self.light_min_lux, 0.0, 200_000.0);
        within("lightMaxLux", self.light_max_lux, 0.0, 200_000.0);
        if let (Some(low), Some(high)) = (self.temperature_min_c, self.temperature_max_c) {
            if low >= high {
                v.add("temperatureMinC", "must be below temperatureMaxC");
            }
        }
        if let (Some(low), Some(high)) = (self.light_min_lux, self.light_max_lux) {
            if low >= high {
                v.add("lightMinLux", "must be below lightMaxLux");
            }
        }
        if !(1..=24 * 60).contains(&self.clear_after_minutes) {
            v.add("clearAfterMinutes", "must be 1 to 1440");
        }
        v.finish(|| self)
    }

    pub fn clear_after(&self) -> Duration {
        Duration::from_secs(u64::from(self.clear_after_minutes) * 60)
    }

    /// Whether `condition` holds in `reading` (never for `offline`, which heartbeats decide).
    pub fn holds(&self, condition: Condition, reading: &Reading) -> bool {
        match condition {
            Condition::WaterLow => self
                .water_low_pct
                .is_some_and(|t| reading.water_level_pct < t),
            Condition::TooHot => self
                .temperature_max_c
                .is_some_and(|t| reading.temperature_c > t),
            Condition::TooCold => self
                .temperature_min_c
                .is_some_and(|t| reading.temperature_c < t),
            Condition::TooDark => self.light_min_lux.is_some_and(|t| reading.light_lux < t),
            Condition::TooBright => self.light_max_lux.is_some_and(|t| reading.light_lux > t),
            Condition::Offline => false,
        }
    }
}

/// An alert open on a vase, as the vase item remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAlert {
    pub condition: Condition,
    pub opened_at: Timestamp,
    /// The first reading time since which the condition has been clear; `None` while it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_since: Option<Timestamp>,
}

impl OpenAlert {
    /// The alert's id: unique per vase, condition and opening, and the same however often
    /// the decision is made again (a retried write names the alert it already opened).
    pub fn id(&self, vase_id: impl fmt::Display) -> String {
        format!(
            "{vase_id}.{}.{}",
            self.condition.name(),
            self.opened_at.as_millis()
        )
    }
}

/// An alert as the shop reads it: opened, perhaps acknowledged, perhaps closed. Kept 30 days
/// after it closed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VaseAlert {
    pub alert_id: String,
    pub vase_id: VaseId,
    pub vendor_id: VendorId,
    pub condition: Condition,
    /// What the vase read when it opened (none for `offline`).
    pub reading: Option<Reading>,
    pub opened_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub acknowledged_at: Option<Timestamp>,
    /// The member who acknowledged it (its user id).
    pub acknowledged_by: Option<String>,
    /// 1 when opened, and one more for its closing and its acknowledgement.
    pub version: u64,
}

/// Alerts closed this long ago are deleted by TTL.
pub const ALERT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

impl VaseAlert {
    pub fn open(
        vase_id: VaseId,
        vendor_id: VendorId,
        alert: &OpenAlert,
        reading: Option<Reading>,
    ) -> Self {
        Self {
            alert_id: alert.id(vase_id),
            vase_id,
            vendor_id,
            condition: alert.condition,
            reading,
            opened_at: alert.opened_at,
            closed_at: None,
            acknowledged_at: None,
            acknowledged_by: None,
            version: 1,
        }
    }

    pub fn is_open(&self) -> bool {
        self.closed_at.is_none()
    }

    /// Acknowledged by `user` at `now`; `false`, and no change, when it already was.
    pub fn acknowledge(&mut self, user: &str, now: Timestamp) -> bool {
        if self.acknowledged_at.is_some() {
            return false;
        }
        self.acknowledged_at = Some(now);
        self.acknowledged_by = Some(user.to_owned());
        self.version += 1;
        true
    }
}

/// Checks an alert id's shape (`{vaseId}.{condition}.{openedAtMillis}`).
pub fn parse_alert_id(text: &str) -> Result<String, &'static str> {
    let mut parts = text.split('.');
    let shaped = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(vase), Some(condition), Some(millis), None) => {
            VaseId::parse(vase).is_ok()
                && Condition::parse(condition).is_some()
                && !millis.is_empty()
                && millis.len() <= 15
                && millis.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    };
    if shaped {
        Ok(text.to_owned())
    } else {
        Err("is not an alert id")
    }
}

/// A change of a vase's alerts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlertChange {
    Opened(OpenAlert),
    Closed { alert: OpenAlert, at: Timestamp },
}

/// The vase's open alerts after `reading` (its new latest), and what opened or closed.
/// `open` is what the vase item holds; the result keeps `offline` as it is.
pub fn after_reading(
    open: &[OpenAlert],
    reading: &Reading,
    thresholds: &CareThresholds,
) -> (Vec<OpenAlert>, Vec<AlertChange>) {
    let now = reading.sent_at;
    let mut next = Vec::with_capacity(open.len());
    let mut changes = Vec::new();
    for condition in Condition::ALL {
        let current = open.iter().find(|a| a.condition == condition).copied();
        if condition == Condition::Offline {
            next.extend(current);
            continue;
        }
        let holds = thresholds.holds(condition, reading);
        match (current, holds) {
            (None, true) => {
                let alert = OpenAlert {
                    condition,
                    opened_at: now,
                    clear_since: None,
                };
                changes.push(AlertChange::Opened(alert));
                next.push(alert);
            }
            (None, false) => {}
            (Some(alert), true) => next.push(OpenAlert {
                clear_since: None,
                ..alert
            }),
            (Some(alert), false) => {
                let since = alert.clear_since.unwrap_or(now);
                if now.as_millis() - since.as_millis()
                    >= thresholds.clear_after().as_millis() as i64
                {
                    changes.push(AlertChange::Closed { alert, at: now });
                } else {
                    next.push(OpenAlert {
                        clear_since: Some(since),
                        ..alert
                    });
                }
            }
        }
    }
    (next, changes)
}

/// The vase went offline at `at`: `offline` opens unless it is open.
pub fn went_offline(open: &[OpenAlert], at: Timestamp) -> (Vec<OpenAlert>, Option<AlertChange>) {
    if open.iter().any(|a| a.condition == Condition::Offline) {
        return (open.to_vec(), None);
    }
    let alert = OpenAlert {
        condition: Condition::Offline,
        opened_at: at,
        clear_since: None,
    };
    let mut next = open.to_vec();
    next.push(alert);
    (next, Some(AlertChange::Opened(alert)))
}

/// The vase came back online at `at`: an open `offline` closes.
pub fn came_online(open: &[OpenAlert], at: Timestamp) -> (Vec<OpenAlert>, Option<AlertChange>) {
    match open.iter().find(|a| a.condition == Condition::Offline) {
        Some(alert) => (
            open.iter()
                .filter(|a| a.condition != Condition::Offline)
                .copied()
                .collect(),
            Some(AlertChange::Closed { alert: *alert, at }),
        ),
        None => (open.to_vec(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);

    fn at_minute(minute: u32) -> Timestamp {
        T0.plus(Duration::from_secs(60) * minute)
    }

    fn reading(minute: u32, water: f64, temperature: f64) -> Reading {
        Reading {
            sent_at: at_minute(minute),
            water_level_pct: water,
            temperature_c: temperature,
            humidity_pct: 60.0,
            light_lux: 800.0,
        }
    }

    fn run(readings: &[Reading]) -> (Vec<OpenAlert>, Vec<AlertChange>) {
        let thresholds = CareThresholds::default();
        let mut open = Vec::new();
        let mut all = Vec::new();
        for r in readings {
            let (next, changes) = after_reading(&open, r, &thresholds);
            open = next;
            all.extend(changes);
        }
        (open, all)
    }

    #[test]
    fn a_dry_vase_opens_one_alert_and_a_refill_closes_it_after_the_clear_time() {
        let (open, changes) = run(&[
            reading(0, 60.0, 18.0),
            reading(1, 20.0, 18.0),
            reading(2, 18.0, 18.0),
            reading(3, 80.0, 18.0),
            reading(12, 80.0, 18.0),
        ]);
        assert_eq!(open.len(), 1, "still within its 10 minutes: {open:?}");
        assert_eq!(changes.len(), 1);
        assert!(
            matches!(changes[0], AlertChange::Opened(a) if a.condition == Condition::WaterLow && a.opened_at == at_minute(1))
        );
        let (open, changes) = run(&[
            reading(1, 20.0, 18.0),
            reading(3, 80.0, 18.0),
            reading(13, 80.0, 18.0),
        ]);
        assert!(open.is_empty());
        assert!(
            matches!(changes[1], AlertChange::Closed { at, .. } if at == at_minute(13)),
            "{changes:?}"
        );
    }

    #[test]
    fn a_reading_hovering_at_the_threshold_opens_one_alert_not_fifty() {
        let readings: Vec<Reading> = (0..50)
            .map(|m| reading(m, if m % 2 == 0 { 24.0 } else { 26.0 }, 18.0))
            .collect();
        let (open, changes) = run(&readings);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(open.len(), 1);
    }

    #[test]
    fn heat_and_dryness_are_separate_alerts() {
        let (open, changes) = run(&[reading(0, 10.0, 30.0)]);
        assert_eq!(open.len(), 2);
        assert_eq!(changes.len(), 2);
    }

    #[test]
    fn offline_opens_once_and_closes_when_the_vase_is_back() {
        let (open, opened) = went_offline(&[], at_minute(61));
        assert!(
            matches!(opened, Some(AlertChange::Opened(a)) if a.condition == Condition::Offline)
        );
        let (again, none) = went_offline(&open, at_minute(62));
        assert_eq!((again.len(), none), (1, None));
        // Readings do not close it; only a heartbeat does.
        let (still, changes) =
            after_reading(&open, &reading(63, 80.0, 18.0), &CareThresholds::default());
        assert_eq!((still.len(), changes.len()), (1, 0));
        let (back, closed) = came_online(&still, at_minute(64));
        assert!(back.is_empty());
        assert!(matches!(closed, Some(AlertChange::Closed { .. })));
        assert_eq!(came_online(&back, at_minute(65)).1, None);
    }

    #[test]
    fn alert_ids_name_the_vase_the_condition_and_the_opening() {
        let vase = VaseId::generate();
        let alert = OpenAlert {
            condition: Condition::WaterLow,
            opened_at: at_minute(3),
            clear_since: None,
        };
        let id = alert.id(vase);
        assert_eq!(parse_alert_id(&id), Ok(id.clone()));
        for bad in [
            "",
            "x.water_low.1",
            &format!("{vase}.thirsty.1"),
            &format!("{vase}.water_low."),
            &format!("{id}.1"),
        ] {
            assert!(parse_alert_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn thresholds_are_validated() {
        let bad = CareThresholds {
            water_low_pct: Some(120.0),
            temperature_min_c: Some(30.0),
            temperature_max_c: Some(20.0),
            clear_after_minutes: 0,
            ..CareThresholds::default()
        };
        let fields = crate::validation::refused_fields(bad.validate());
        assert_eq!(
            fields,
            ["waterLowPct", "temperatureMinC", "clearAfterMinutes"]
        );
        assert!(CareThresholds::default().validate().is_ok());
    }

    proptest! {
        /// Whatever the readings: at most one open alert per condition; an open alert's
        /// condition holds in the latest reading or it is within its clear time; and every
        /// alert opened is either open at the end or closed exactly once.
        #[test]
        fn one_open_alert_per_condition_and_each_closed_once(
            waters in proptest::collection::vec(0.0f64..100.0, 1..80),
            temperatures in proptest::collection::vec(-5.0f64..40.0, 80),
        ) {
            let thresholds = CareThresholds::default();
            let mut open: Vec<OpenAlert> = Vec::new();
            let (mut opened, mut closed) = (0usize, 0usize);
            for (minute, (water, temperature)) in waters.iter().zip(&temperatures).enumerate() {
                let r = reading(minute as u32, *water, *temperature);
                let (next, changes) = after_reading(&open, &r, &thresholds);
                for change in &changes {
                    match change {
                        AlertChange::Opened(_) => opened += 1,
                        AlertChange::Closed { .. } => closed += 1,
                    }
                }
                for condition in Condition::ALL {
                    prop_assert!(next.iter().filter(|a| a.condition == condition).count() <= 1);
                }
                for alert in &next {
                    let holds = thresholds.holds(alert.condition, &r);
                    let within = alert.clear_since.is_some_and(|since| {
                        r.sent_at.as_millis() - since.as_millis() < thresholds.clear_after().as_millis() as i64
                    });
                    prop_assert!(holds || within, "{alert:?} at {r:?}");
                }
                open = next;
            }
            prop_assert_eq!(opened, closed + open.len());
        }
    }
}
