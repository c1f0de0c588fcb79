//! Time as data: a millisecond UTC timestamp and the clock that produces it.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Milliseconds since the Unix epoch, UTC. Stored as a DynamoDB number so conditions can
/// compare it with `now`; shown as RFC 3339 in the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Whole seconds, the unit DynamoDB TTL attributes use.
    pub const fn as_epoch_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }

    pub fn plus(self, duration: Duration) -> Self {
        Self(self.0.saturating_add(duration.as_millis() as i64))
    }

    pub fn minus(self, duration: Duration) -> Self {
        Self(self.0.saturating_sub(duration.as_millis() as i64))
    }

    /// RFC 3339 in UTC with millisecond precision, e.g. `2026-12-02T16:16:51.123Z`.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        let at =
            OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH);
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.millisecond()
        )
    }

    /// Parses any RFC 3339 timestamp (any offset), truncated to milliseconds.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        let millis = at.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis).ok().map(Self)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_rfc3339(&text)
            .ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp"))
    }
}

/// Where "now" comes from. Handlers take it from here so tests can fix and move time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Timestamp((nanos / 1_000_000) as i64)
    }
}

/// A clock that only moves when told to: deterministic tests of holds and expiry.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn at(start: Timestamp) -> Self {
        Self(AtomicI64::new(start.as_millis()))
    }

    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }

    pub fn set(&self, to: Timestamp) {
        self.0.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_rfc3339_round_trip() {
        let at = Timestamp::from_millis(1_796_228_211_123);
        assert_eq!(at.to_rfc3339(), "2026-12-02T16:16:51.123Z");
        assert_eq!(
            Timestamp::parse_rfc3339("2026-12-02T16:16:51.123Z"),
            Some(at)
        );
        assert_eq!(
            Timestamp::parse_rfc3339("2026-12-02T17:16:51.123+01:00"),
            Some(at),
            "offsets are normalised to UTC"
        );
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::at(Timestamp::from_millis(1_000));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
        clock.advance(Duration::from_secs(15 * 60));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000 + 900_000));
    }
}
