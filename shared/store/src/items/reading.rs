//! A vase's reading as stored: on its own item, as the vase's latest, and in an alert.

use serde::{Deserialize, Serialize};

use bouquet_domain::{Reading, Timestamp};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadingFields {
    sent_at: i64,
    water_level_pct: f64,
    temperature_c: f64,
    humidity_pct: f64,
    light_lux: f64,
}

impl ReadingFields {
    pub(crate) fn from_domain(r: &Reading) -> Self {
        Self {
            sent_at: r.sent_at.as_millis(),
            water_level_pct: r.water_level_pct,
            temperature_c: r.temperature_c,
            humidity_pct: r.humidity_pct,
            light_lux: r.light_lux,
        }
    }

    pub(crate) fn into_domain(self) -> Reading {
        Reading {
            sent_at: Timestamp::from_millis(self.sent_at),
            water_level_pct: self.water_level_pct,
            temperature_c: self.temperature_c,
            humidity_pct: self.humidity_pct,
            light_lux: self.light_lux,
        }
    }
}
