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

    /// Where the rating ranks its shop's bouquets in the catalogue's best-rated order: the
    /// average in tenths, then the number of reviews by powers of two (1, 2-3, 4-7, ...). A
    /// shop with many reviews ranks above one with a single review at the same average, and
    /// yet most reviews of an established shop leave its place as it was: each move rewrites
    /// every bouquet of the shop. `None` without a review.
    pub fn catalogue_place(&self) -> Option<CataloguePlace> {
        let reviews = u64::try_from(self.count()).unwrap_or(0);
        self.average_tenths().map(|average_tenths| CataloguePlace {
            average_tenths,
            reviews_band: (u64::BITS - reviews.leading_zeros()) as u8,
        })
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

/// A rating's place in the catalogue ([`Rating::catalogue_place`]), compared in field order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CataloguePlace {
    pub average_tenths: u8,
    /// The bit length of the review count: 1 for one review, 2 for two or three, ...
    pub reviews_band: u8,
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fives(count: i64) -> Rating {
        Rating {
            by_stars: [0, 0, 0, 0, count],
        }
    }

    #[test]
    fn the_place_bands_the_reviews_by_powers_of_two() {
        assert_eq!(Rating::default().catalogue_place(), None);
        let bands: Vec<u8> = [1, 2, 3, 4, 7, 8, 1000]
            .into_iter()
            .map(|n| fives(n).catalogue_place().unwrap().reviews_band)
            .collect();
        assert_eq!(bands, [1, 2, 2, 3, 3, 4, 10]);
        assert_eq!(fives(3).catalogue_place().unwrap().average_tenths, 50);
    }

    proptest! {
        /// The place ranks by the shown average first, and at an equal average never puts
        /// the shop with more reviews below the one with fewer.
        #[test]
        fn the_place_follows_the_average_then_the_reviews(
            a in proptest::array::uniform5(0i64..300),
            b in proptest::array::uniform5(0i64..300),
        ) {
            let (a, b) = (Rating { by_stars: a }, Rating { by_stars: b });
            prop_assert_eq!(a.catalogue_place().map(|p| p.average_tenths), a.average_tenths());
            if let (Some(pa), Some(pb)) = (a.catalogue_place(), b.catalogue_place()) {
                if a.average_tenths() > b.average_tenths() {
                    prop_assert!(pa > pb);
                }
                if a.average_tenths() == b.average_tenths() && a.count() > b.count() {
                    prop_assert!(pa >= pb);
                }
            }
        }

        /// An established shop's place moves on few of its reviews: from 64 reviews on, at
        /// most one review in four moves it (each move rewrites all its bouquets).
        #[test]
        fn an_established_shops_place_rarely_moves(
            start in proptest::array::uniform5(13i64..40),
            stars in proptest::collection::vec(1u8..=5, 200),
        ) {
            let mut rating = Rating { by_stars: start };
            let mut moves = 0;
            for s in &stars {
                let before = rating.catalogue_place();
                rating.apply(RatingChange::written(*s));
                moves += usize::from(rating.catalogue_place() != before);
            }
            prop_assert!(moves * 4 <= stars.len(), "{moves} moves in {}", stars.len());
        }
    }
}
