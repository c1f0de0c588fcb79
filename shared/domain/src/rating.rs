//! A shop's rating (issue 42): its visible reviews counted by stars, and what each review
//! event does to the counts. Pure, and below every other module (cards, events and reviews
//! read it).

use serde::Serialize;

/// A shop's rating: how many visible reviews gave each number of stars. Readers see it as
/// `{average, count, byStars}` (its `Serialize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rating {
    /// `by_stars[0]` counts 1-star reviews, ..., `by_stars[4]` 5-star ones.
    pub by_stars: [i64; 5],
}

impl Rating {
    pub fn count(&self) -> i64 {
        self.by_stars.iter().sum()
    }

    /// The average stars to one decimal; `None` without a review.
    pub fn average(&self) -> Option<f64> {
        self.average_tenths().map(|tenths| f64::from(tenths) / 10.0)
    }

    /// The average in tenths of a star (10..=50), rounded half up in integers so that the
    /// catalogue's order and the figure shown agree; `None` without a review.
    pub fn average_tenths(&self) -> Option<u8> {
        let count = self.count();
        let sum: i64 = (1..=5).zip(self.by_stars).map(|(s, n)| s * n).sum();
        (count > 0).then(|| ((sum * 20 + count) / (count * 2)).clamp(0, 50) as u8)
    }

    pub fn apply(&mut self, change: RatingChange) {
        for (count, add) in self.by_stars.iter_mut().zip(change.0) {
            *count += add;
        }
    }
}

impl Serialize for Rating {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Rating", 3)?;
        out.serialize_field("average", &self.average())?;
        out.serialize_field("count", &self.count())?;
        out.serialize_field("byStars", &self.by_stars)?;
        out.end()
    }
}

/// What one review event does to its shop's rating, star by star.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RatingChange(pub [i64; 5]);

impl RatingChange {
    fn at(stars: u8, by: i64) -> [i64; 5] {
        let mut change = [0; 5];
        if let Some(slot) = change.get_mut(usize::from(stars.clamp(1, 5)) - 1) {
            *slot = by;
        }
        change
    }

    /// A review written with `stars`.
    pub fn written(stars: u8) -> Self {
        Self(Self::at(stars, 1))
    }

    /// A visible review moved from `previous` to `stars`.
    pub fn edited(previous: u8, stars: u8) -> Self {
        let mut change = Self::at(stars, 1);
        for (slot, take) in change.iter_mut().zip(Self::at(previous, -1)) {
            *slot += take;
        }
        Self(change)
    }

    /// A review of `stars` hidden.
    pub fn hidden(stars: u8) -> Self {
        Self(Self::at(stars, -1))
    }
}
