//! Smart vases: what a vase sends (docs/contract.md, Vase MQTT), its connection state machine
//! (`never_seen` → `online` ⇄ `offline`) and what a heartbeat or a reading changes.
//!
//! Every rule here is "newer wins": a heartbeat moves `lastHeartbeatAt` forward only and a
//! reading replaces the latest one only when it was sent later, so duplicates and
//! out-of-order deliveries (SQS is at-least-once and unordered) change nothing.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::bouquet::Bouquet;
use crate::care::{self, AlertChange, CareThresholds, OpenAlert};
use crate::clock::Timestamp;
use crate::freshness;
use crate::history::{self, Bucket};
use crate::ids::{BouquetId, VaseId, VendorId};

/// A vase that sent no heartbeat for this long is offline (docs/architecture.md: one hour).
pub const DEFAULT_OFFLINE_AFTER: Duration = Duration::from_secs(60 * 60);

/// A message stamped further ahead of IoT Core's own clock than this is refused: a vase with
/// a wrong clock would otherwise pin `lastHeartbeatAt` in the future and make every honest
/// heartbeat after it look stale.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    NeverSeen,
    Online,
    Offline,
}

impl Connection {
    pub fn name(self) -> &'static str {
        match self {
            Connection::NeverSeen => "never_seen",
            Connection::Online => "online",
            Connection::Offline => "offline",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "never_seen" => Some(Connection::NeverSeen),
            "online" => Some(Connection::Online),
            "offline" => Some(Connection::Offline),
            _ => None,
        }
    }
}

impl fmt::Display for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub use crate::freshness::Reading;

/// A message from a vase, after the topic rule added `vaseId`, `receivedAt` and `messageType`.
#[derive(Clone, Debug, PartialEq)]
pub enum VaseMessage {
    Heartbeat {
        vase_id: VaseId,
        sent_at: Timestamp,
        received_at: Timestamp,
    },
    Telemetry {
        vase_id: VaseId,
        reading: Reading,
        received_at: Timestamp,
    },
}

impl VaseMessage {
    pub fn vase_id(&self) -> VaseId {
        match self {
            VaseMessage::Heartbeat { vase_id, .. } | VaseMessage::Telemetry { vase_id, .. } => {
                *vase_id
            }
        }
    }
}

/// Why a message cannot be applied. It goes to the dead-letter queue with this reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("the message is not a JSON object")]
    NotAnObject,
    #[error("{field}: {problem}")]
    Field {
        field: &'static str,
        problem: &'static str,
    },
    #[error("messageType {0:?} is neither heartbeat nor telemetry")]
    UnknownType(String),
    #[error("sentAt is more than {} s after receivedAt", MAX_CLOCK_SKEW.as_secs())]
    SentInFuture,
}

fn field(field: &'static str, problem: &'static str) -> MessageError {
    MessageError::Field { field, problem }
}

impl VaseMessage {
    /// Parses the JSON the topic rule forwarded. Unknown fields are ignored (a newer firmware
    /// may send more); every known field must be present, typed and in range.
    pub fn parse(body: &str) -> Result<Self, MessageError> {
        let value: Value = serde_json::from_str(body).map_err(|_| MessageError::NotAnObject)?;
        let object = value.as_object().ok_or(MessageError::NotAnObject)?;
        let vase_id = object
            .get("vaseId")
            .and_then(Value::as_str)
            .ok_or(field("vaseId", "is missing"))
            .and_then(|text| {
                VaseId::parse(text).map_err(|_| field("vaseId", "is not a vase id"))
            })?;
        let received_at = object
            .get("receivedAt")
            .and_then(Value::as_i64)
            .map(Timestamp::from_millis)
            .ok_or(field("receivedAt", "must be epoch milliseconds"))?;
        let sent_at = object
            .get("sentAt")
            .ok_or(field("sentAt", "is missing"))?
            .as_str()
            .and_then(Timestamp::parse_rfc3339)
            .ok_or(field("sentAt", "must be an RFC 3339 timestamp"))?;
        if sent_at > received_at.plus(MAX_CLOCK_SKEW) {
            return Err(MessageError::SentInFuture);
        }
        let kind = object
            .get("messageType")
            .and_then(Value::as_str)
            .ok_or(field("messageType", "is missing"))?;
        match kind {
            "heartbeat" => Ok(VaseMessage::Heartbeat {
                vase_id,
                sent_at,
                received_at,
            }),
            "telemetry" => {
                let number = |name: &'static str, low: f64, high: f64| {
                    let value = object
                        .get(name)
                        .ok_or(field(name, "is missing"))?
                        .as_f64()
                        .ok_or(field(name, "must be a number"))?;
                    if (low..=high).contains(&value) {
                        Ok(value)
                    } else {
                        Err(field(name, "is out of range"))
                    }
                };
                Ok(VaseMessage::Telemetry {
                    vase_id,
                    reading: Reading {
                        sent_at,
                        water_level_pct: number("waterLevelPct", 0.0, 100.0)?,
                        temperature_c: number("temperatureC", -50.0, 80.0)?,
                        humidity_pct: number("humidityPct", 0.0, 100.0)?,
                        light_lux: number("lightLux", 0.0, 200_000.0)?,
                    },
                    received_at,
                })
            }
            other => Err(MessageError::UnknownType(other.to_owned())),
        }
    }
}

/// The bouquet standing in a vase, as the vase item remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VaseBouquet {
    pub bouquet_id: BouquetId,
    pub listed_at: Timestamp,
    /// The last score written to the bouquet; `None` until the first reading after listing.
    pub freshness: Option<u8>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Vase {
    pub vase_id: VaseId,
    pub vendor_id: VendorId,
    pub connection: Connection,
    pub last_heartbeat_at: Option<Timestamp>,
    pub latest: Option<Reading>,
    pub bouquet: Option<VaseBouquet>,
    pub registered_at: Timestamp,
    /// Counts connection changes (and registration): the events' aggregate version.
    pub version: u64,
    /// Its open care alerts, one per condition at most (`care`).
    pub alerts: Vec<OpenAlert>,
    /// The 15-minute bucket its latest readings are folding into (`history`).
    pub bucket: Option<Bucket>,
}

/// What a heartbeat does to a vase.
#[derive(Clone, Debug, PartialEq)]
pub enum HeartbeatOutcome {
    /// Not newer than the last one: nothing changes.
    Stale,
    /// Online already: `lastHeartbeatAt` moves forward.
    StillOnline(Vase),
    /// The vase was `never_seen` or `offline` and is `online` now (`VaseCameOnline`).
    CameOnline(Vase),
}

/// A freshness score that a reading moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreshnessChange {
    pub bouquet_id: BouquetId,
    pub previous: Option<u8>,
    pub score: u8,
}

impl FreshnessChange {
    /// Whether the change is worth a `BouquetFreshnessChanged` event.
    pub fn is_significant(&self) -> bool {
        freshness::is_significant(self.previous, self.score)
    }
}

/// What a reading does to a vase.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadingOutcome {
    /// Older than (or the same as) the latest reading: stored for history only.
    HistoryOnly,
    /// The new latest reading, and the bouquet's new score if a bouquet stands in the vase,
    /// the alerts it opened or closed and the history bucket it finished.
    Latest {
        vase: Box<Vase>,
        freshness: Option<FreshnessChange>,
        alerts: Vec<AlertChange>,
        finished: Option<Bucket>,
    },
}

impl Vase {
    pub fn register(vase_id: VaseId, vendor_id: VendorId, now: Timestamp) -> Self {
        Self {
            vase_id,
            vendor_id,
            connection: Connection::NeverSeen,
            last_heartbeat_at: None,
            latest: None,
            bouquet: None,
            registered_at: now,
            version: 1,
            alerts: Vec::new(),
            bucket: None,
        }
    }

    /// What changed in the vase's open alerts from `self` to `next`, at `at`.
    pub fn alert_changes(&self, next: &Vase, at: Timestamp) -> Vec<AlertChange> {
        let opened = next
            .alerts
            .iter()
            .filter(|a| {
                !self
                    .alerts
                    .iter()
                    .any(|b| b.condition == a.condition && b.opened_at == a.opened_at)
            })
            .map(|a| AlertChange::Opened(*a));
        let closed = self
            .alerts
            .iter()
            .filter(|a| {
                !next
                    .alerts
                    .iter()
                    .any(|b| b.condition == a.condition && b.opened_at == a.opened_at)
            })
            .map(|a| AlertChange::Closed { alert: *a, at });
        closed.chain(opened).collect()
    }

    /// Whether `bouquet_id` is the bouquet the vase holds now.
    pub fn holds(&self, bouquet_id: BouquetId) -> bool {
        self.bouquet.is_some_and(|b| b.bouquet_id == bouquet_id)
    }

    /// Decommissioning is refused while the bouquet standing in the vase is on sale
    /// (available or reserved: its freshness comes from the vase): `Err` names the bouquet.
    /// `standing` is that bouquet as read (`None` when the vase holds none, or its item is
    /// gone). A sold or withdrawn bouquet does not keep the vase in use: a withdrawal takes
    /// the bouquet out of its vase, but a vase written before that (or a sold bouquet, which
    /// keeps its vase until delivery) may still name one that has left sale.
    pub fn decommission(&self, standing: Option<&Bouquet>) -> Result<(), BouquetId> {
        let Some(held) = self.bouquet else {
            return Ok(());
        };
        match standing {
            Some(bouquet)
                if bouquet.bouquet_id == held.bouquet_id && !bouquet.status.is_on_sale() =>
            {
                Ok(())
            }
            // Its item is gone: nothing of it is on sale.
            None => Ok(()),
            _ => Err(held.bouquet_id),
        }
    }

    /// The vase after a certificate rotation or before its decommissioning: the next version,
    /// so each event of the vase has its own `aggregateVersion`.
    pub fn next_version(&self) -> Vase {
        Vase {
            version: self.version + 1,
            ..self.clone()
        }
    }

    pub fn heartbeat(&self, sent_at: Timestamp) -> HeartbeatOutcome {
        if self.last_heartbeat_at.is_some_and(|last| sent_at <= last) {
            return HeartbeatOutcome::Stale;
        }
        let mut next = self.clone();
        next.last_heartbeat_at = Some(sent_at);
        if self.connection == Connection::Online {
            HeartbeatOutcome::StillOnline(next)
        } else {
            next.connection = Connection::Online;
            next.version += 1;
            next.alerts = care::came_online(&self.alerts, sent_at).0;
            HeartbeatOutcome::CameOnline(next)
        }
    }

    /// Applies `reading` with the shop's care `thresholds`.
    pub fn record(
        &self,
        reading: Reading,
        received_at: Timestamp,
        thresholds: &CareThresholds,
    ) -> ReadingOutcome {
        if self
            .latest
            .is_some_and(|latest| reading.sent_at <= latest.sent_at)
        {
            return ReadingOutcome::HistoryOnly;
        }
        let mut next = self.clone();
        next.latest = Some(reading);
        let (alerts, alert_changes) = care::after_reading(&self.alerts, &reading, thresholds);
        next.alerts = alerts;
        let (bucket, finished) = history::fold(self.bucket, &reading);
        next.bucket = Some(bucket);
        let freshness = self.bouquet.map(|bouquet| FreshnessChange {
            bouquet_id: bouquet.bouquet_id,
            previous: bouquet.freshness,
            score: freshness::score(&reading, bouquet.listed_at, received_at),
        });
        if let (Some(bouquet), Some(change)) = (next.bouquet.as_mut(), freshness) {
            bouquet.freshness = Some(change.score);
        }
        ReadingOutcome::Latest {
            vase: Box::new(next),
            freshness,
            alerts: alert_changes,
            finished,
        }
    }

    /// The heartbeat time before which an online vase counts as silent.
    pub fn silence_cutoff(now: Timestamp, offline_after: Duration) -> Timestamp {
        now.minus(offline_after)
    }

    /// Online, but no heartbeat for `offline_after`: the vase goes offline (`VaseWentOffline`).
    pub fn go_offline(&self, now: Timestamp, offline_after: Duration) -> Option<Vase> {
        let cutoff = Self::silence_cutoff(now, offline_after);
        let silent = self.connection == Connection::Online
            && self.last_heartbeat_at.is_some_and(|last| last < cutoff);
        silent.then(|| Vase {
            connection: Connection::Offline,
            version: self.version + 1,
            alerts: care::went_offline(&self.alerts, now).0,
            ..self.clone()
        })
    }

    /// The connection as a reader sees it at `now`: an online vase past the silence window
    /// reads as offline even before the sweeper ran (time is data, not the sweeper's delay).
    pub fn connection_at(&self, now: Timestamp, offline_after: Duration) -> Connection {
        match self.go_offline(now, offline_after) {
            Some(_) => Connection::Offline,
            None => self.connection,
        }
    }
}

/// A vase as its vendor sees it (docs/contract.md: `GET /v1/vendors/{vendorId}/vases`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VaseView {
    pub vase_id: VaseId,
    pub vendor_id: VendorId,
    pub connection: Connection,
    pub last_heartbeat_at: Option<Timestamp>,
    pub latest_reading: Option<Reading>,
    pub bouquet_id: Option<BouquetId>,
    pub freshness: Option<u8>,
    pub registered_at: Timestamp,
    /// Its open care alerts.
    pub alerts: Vec<OpenAlert>,
}

impl Vase {
    pub fn view(&self, now: Timestamp, offline_after: Duration) -> VaseView {
        VaseView {
            vase_id: self.vase_id,
            vendor_id: self.vendor_id,
            connection: self.connection_at(now, offline_after),
            last_heartbeat_at: self.last_heartbeat_at,
            latest_reading: self.latest,
            bouquet_id: self.bouquet.map(|b| b.bouquet_id),
            freshness: self.bouquet.and_then(|b| b.freshness),
            registered_at: self.registered_at,
            alerts: self.alerts.clone(),
        }
    }

    /// The MQTT topics this vase publishes to and listens on.
    pub fn topics(vase_id: VaseId) -> VaseTopics {
        VaseTopics {
            heartbeat: format!("vases/{vase_id}/heartbeat"),
            telemetry: format!("vases/{vase_id}/telemetry"),
            commands: format!("vases/{vase_id}/commands"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VaseTopics {
    pub heartbeat: String,
    pub telemetry: String,
    pub commands: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: Timestamp = Timestamp::from_millis(1_796_228_211_000);
    const MINUTE: Duration = Duration::from_secs(60);

    fn vase() -> Vase {
        Vase::register(VaseId::generate(), VendorId::generate(), T0)
    }

    fn at(minutes: u32) -> Timestamp {
        T0.plus(MINUTE * minutes)
    }

    fn reading(minutes: u32, water: f64) -> Reading {
        Reading {
            sent_at: at(minutes),
            water_level_pct: water,
            temperature_c: 18.0,
            humidity_pct: 60.0,
            light_lux: 800.0,
        }
    }

    fn apply(vase: &Vase, sent_at: Timestamp) -> Vase {
        match vase.heartbeat(sent_at) {
            HeartbeatOutcome::Stale => vase.clone(),
            HeartbeatOutcome::StillOnline(next) | HeartbeatOutcome::CameOnline(next) => next,
        }
    }

    #[test]
    fn first_heartbeat_brings_a_new_vase_online() {
        let HeartbeatOutcome::CameOnline(online) = vase().heartbeat(at(1)) else {
            panic!("expected CameOnline")
        };
        assert_eq!(online.connection, Connection::Online);
        assert_eq!(online.last_heartbeat_at, Some(at(1)));
        assert_eq!(online.version, 2);
        assert!(matches!(
            online.heartbeat(at(2)),
            HeartbeatOutcome::StillOnline(ref v) if v.version == 2
        ));
    }

    #[test]
    fn duplicate_and_older_heartbeats_are_stale() {
        let online = apply(&vase(), at(10));
        assert_eq!(online.heartbeat(at(10)), HeartbeatOutcome::Stale);
        assert_eq!(online.heartbeat(at(9)), HeartbeatOutcome::Stale);
    }

    #[test]
    fn an_hour_of_silence_takes_a_vase_offline_and_the_next_heartbeat_brings_it_back() {
        let online = apply(&vase(), at(0));
        assert_eq!(online.go_offline(at(60), DEFAULT_OFFLINE_AFTER), None);
        let offline = online
            .go_offline(at(61), DEFAULT_OFFLINE_AFTER)
            .expect("silent for 61 minutes");
        assert_eq!(offline.connection, Connection::Offline);
        assert_eq!(offline.version, online.version + 1);
        assert_eq!(offline.go_offline(at(200), DEFAULT_OFFLINE_AFTER), None);
        assert!(matches!(
            offline.heartbeat(at(62)),
            HeartbeatOutcome::CameOnline(_)
        ));
        assert_eq!(
            online.connection_at(at(61), DEFAULT_OFFLINE_AFTER),
            Connection::Offline
        );
    }

    #[test]
    fn a_vase_never_seen_is_not_taken_offline() {
        assert_eq!(vase().go_offline(at(600), DEFAULT_OFFLINE_AFTER), None);
    }

    #[test]
    fn readings_move_freshness_and_older_ones_are_history() {
        let mut v = vase();
        let bouquet_id = BouquetId::generate();
        v.bouquet = Some(VaseBouquet {
            bouquet_id,
            listed_at: T0,
            freshness: None,
        });
        let ReadingOutcome::Latest {
            vase: v, freshness, ..
        } = v.record(reading(5, 80.0), at(5), &CareThresholds::default())
        else {
            panic!("first reading is the latest")
        };
        let change = freshness.expect("a bouquet stands in the vase");
        assert_eq!((change.previous, change.score), (None, 100));
        assert!(change.is_significant());
        let ReadingOutcome::Latest {
            vase: v, freshness, ..
        } = v.record(reading(6, 20.0), at(6), &CareThresholds::default())
        else {
            panic!("newer reading")
        };
        let change = freshness.expect("score");
        assert_eq!((change.previous, change.score), (Some(100), 85));
        assert!(change.is_significant());
        assert_eq!(v.bouquet.and_then(|b| b.freshness), Some(85));
        assert_eq!(
            v.record(reading(6, 0.0), at(6), &CareThresholds::default()),
            ReadingOutcome::HistoryOnly
        );
        assert_eq!(
            v.record(reading(3, 0.0), at(3), &CareThresholds::default()),
            ReadingOutcome::HistoryOnly
        );
    }

    #[test]
    fn a_vase_without_bouquet_keeps_readings_without_scores() {
        let ReadingOutcome::Latest { freshness, .. } =
            vase().record(reading(1, 50.0), at(1), &CareThresholds::default())
        else {
            panic!("latest")
        };
        assert_eq!(freshness, None);
    }

    fn body(extra: &str) -> String {
        let vase_id = VaseId::generate();
        format!(
            r#"{{"vaseId":"{vase_id}","receivedAt":{},"sentAt":"{}"{extra}}}"#,
            at(1).as_millis(),
            at(1).to_rfc3339()
        )
    }

    #[test]
    fn messages_parse_with_unknown_fields_ignored() {
        assert!(matches!(
            VaseMessage::parse(&body(r#","messageType":"heartbeat","firmware":"1.2""#)),
            Ok(VaseMessage::Heartbeat { .. })
        ));
        let telemetry = VaseMessage::parse(&body(
            r#","messageType":"telemetry","waterLevelPct":55,"temperatureC":19.5,"humidityPct":61,"lightLux":900"#,
        ))
        .expect("telemetry");
        let VaseMessage::Telemetry { reading, .. } = telemetry else {
            panic!("telemetry")
        };
        assert_eq!(reading.water_level_pct, 55.0);
        assert_eq!(reading.sent_at, at(1));
    }

    #[test]
    fn malformed_messages_say_why() {
        let cases = [
            ("not json".to_owned(), "not a JSON object"),
            ("[1,2]".to_owned(), "not a JSON object"),
            (body(r#","messageType":"reboot""#), "neither heartbeat"),
            (body(""), "messageType: is missing"),
            (
                body(r#","messageType":"telemetry","waterLevelPct":101,"temperatureC":1,"humidityPct":1,"lightLux":1"#),
                "waterLevelPct: is out of range",
            ),
            (
                body(r#","messageType":"telemetry","waterLevelPct":"full","temperatureC":1,"humidityPct":1,"lightLux":1"#),
                "waterLevelPct: must be a number",
            ),
            (
                body(r#","messageType":"telemetry","waterLevelPct":10,"temperatureC":1,"humidityPct":1"#),
                "lightLux: is missing",
            ),
            (
                r#"{"vaseId":"nope","receivedAt":1,"sentAt":"2026-01-01T00:00:00Z","messageType":"heartbeat"}"#.to_owned(),
                "vaseId: is not a vase id",
            ),
            (
                format!(
                    r#"{{"vaseId":"{}","receivedAt":{},"sentAt":"{}","messageType":"heartbeat"}}"#,
                    VaseId::generate(),
                    at(0).as_millis(),
                    at(6).to_rfc3339()
                ),
                "more than 300 s after receivedAt",
            ),
            (
                format!(
                    r#"{{"vaseId":"{}","receivedAt":{},"sentAt":12345,"messageType":"heartbeat"}}"#,
                    VaseId::generate(),
                    at(0).as_millis()
                ),
                "sentAt: must be an RFC 3339 timestamp",
            ),
        ];
        for (body, expected) in cases {
            let error = VaseMessage::parse(&body).expect_err(&body).to_string();
            assert!(error.contains(expected), "{body}: {error}");
        }
    }

    #[test]
    fn only_a_bouquet_on_sale_keeps_its_vase_in_use() {
        let mut bouquet = crate::bouquet::tests::bouquet(VendorId::generate(), 2000, T0);
        let mut held = vase();
        assert_eq!(held.decommission(None), Ok(()), "an empty vase");
        held.bouquet = Some(VaseBouquet {
            bouquet_id: bouquet.bouquet_id,
            listed_at: T0,
            freshness: Some(90),
        });
        assert!(held.holds(bouquet.bouquet_id));
        assert!(!held.holds(BouquetId::generate()));
        // Available, then reserved (even past its hold's end): on sale, the vase in use.
        assert_eq!(held.decommission(Some(&bouquet)), Err(bouquet.bouquet_id));
        let order = crate::ids::OrderId::generate();
        bouquet.reserve(order, at(15), T0).unwrap();
        assert_eq!(held.decommission(Some(&bouquet)), Err(bouquet.bouquet_id));
        // Sold or withdrawn: off sale, the vase may go.
        bouquet.sell(order, at(1)).unwrap();
        assert_eq!(held.decommission(Some(&bouquet)), Ok(()));
        assert!(bouquet.withdraw_sold(order, at(2)));
        assert_eq!(held.decommission(Some(&bouquet)), Ok(()));
        // A bouquet whose item is gone keeps nothing on sale.
        assert_eq!(held.decommission(None), Ok(()));
    }

    proptest! {
        /// Whatever order and duplication heartbeats arrive in, `lastHeartbeatAt` never moves
        /// backwards and ends at the newest one sent.
        #[test]
        fn last_heartbeat_never_moves_backwards(
            minutes in proptest::collection::vec(0u32..500, 1..60),
        ) {
            let mut v = vase();
            let mut seen: Option<Timestamp> = None;
            for m in &minutes {
                let next = apply(&v, at(*m));
                prop_assert!(next.last_heartbeat_at >= v.last_heartbeat_at);
                seen = seen.max(Some(at(*m)));
                v = next;
            }
            prop_assert_eq!(v.last_heartbeat_at, seen);
            prop_assert_eq!(v.connection, Connection::Online);
            // One connection change only: never_seen -> online.
            prop_assert_eq!(v.version, 2);
        }
    }
}
