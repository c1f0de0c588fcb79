//! Key layout of the single table. Every entity has `pk`/`sk`; index keys are set only on the
//! items that belong in that (sparse) index.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// Catalogue writes are spread over this many index partitions. Every listing, sale and
/// withdrawal writes the catalogue index; one partition takes about 1,000 writes/s, so four
/// shards give headroom for launch-day bursts while a catalogue page costs four parallel
/// queries. Raise it (and re-shard) only together with `catalogue_shard`.
pub const CATALOGUE_SHARDS: u32 = 4;

/// Reserved orders are spread over this many expiry-index partitions (same reasoning: every
/// reservation writes it; the sweeper queries each shard).
pub const EXPIRY_SHARDS: u32 = 4;

pub const INDEX_CATALOGUE: &str = "CatalogueIndex";
pub const INDEX_CATALOGUE_FRESHNESS: &str = "CatalogueFreshnessIndex";
pub const INDEX_CATALOGUE_PRICE: &str = "CataloguePriceIndex";
pub const INDEX_CATALOGUE_RATING: &str = "CatalogueRatingIndex";
pub const INDEX_VENDOR: &str = "VendorIndex";
pub const INDEX_CUSTOMER: &str = "CustomerIndex";
pub const INDEX_EXPIRY: &str = "OrderDueIndex";
pub const INDEX_HEARTBEAT: &str = "VaseHeartbeatIndex";
pub const INDEX_VENDOR_STATUS: &str = "VendorStatusIndex";

pub type Key = HashMap<String, AttributeValue>;

pub fn key(pk: String, sk: &str) -> Key {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk)),
        ("sk".to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

pub fn vendor_pk(vendor_id: &str) -> String {
    format!("VENDOR#{vendor_id}")
}

/// The partition of `VendorIndex` that lists every shop (the administrators' page).
pub const ALL_VENDORS_KEY: &str = "VENDORS";

pub fn photo_upload_pk(upload_id: &str) -> String {
    format!("PHOTO_UPLOAD#{upload_id}")
}

pub const PHOTO_UPLOAD_SK: &str = "PHOTO_UPLOAD";

pub fn bouquet_pk(bouquet_id: &str) -> String {
    format!("BOUQUET#{bouquet_id}")
}

pub fn order_pk(order_id: &str) -> String {
    format!("ORDER#{order_id}")
}

pub fn vase_pk(vase_id: &str) -> String {
    format!("VASE#{vase_id}")
}

pub const VENDOR_SK: &str = "VENDOR";
/// A user's membership claim (`MEMBER#<email>`), see `Store::claim_member`.
pub const MEMBER_SK: &str = "MEMBER";
pub const BOUQUET_SK: &str = "BOUQUET";
pub const ORDER_SK: &str = "ORDER";
pub const VASE_SK: &str = "VASE";
pub const CART_SK: &str = "CART";

pub fn vendor_bouquets_key(vendor_id: &str) -> String {
    format!("VENDOR#{vendor_id}#BOUQUET")
}

pub fn vendor_orders_key(vendor_id: &str) -> String {
    format!("VENDOR#{vendor_id}#ORDER")
}

/// A vendor's orders in one state (`VendorStatusIndex`).
pub fn vendor_status_key(vendor_id: &str, status: &str) -> String {
    format!("VENDOR#{vendor_id}#ORDER#{status}")
}

/// An order's place among its vendor's orders in one state (`VendorStatusIndex`): by delivery
/// date, then slot (morning, afternoon, evening, then any time), then id; orders without
/// delivery details first (`0000-00-00`). Every value has the same shape, so "after this
/// one" is any value greater than it.
pub fn status_sort(
    delivery: Option<&bouquet_domain::delivery::Delivery>,
    order_id: &str,
) -> String {
    use bouquet_domain::delivery::Slot;
    let (date, rank) = match delivery {
        None => ("0000-00-00", 0),
        Some(d) => (
            d.date.as_str(),
            match d.slot {
                Some(Slot::Morning) => 1,
                Some(Slot::Afternoon) => 2,
                Some(Slot::Evening) => 3,
                None => 4,
            },
        ),
    };
    format!("{date}#{rank}#{order_id}")
}

/// The vendor's delivery settings: one item beside the vendor's.
pub const DELIVERY_SETTINGS_SK: &str = "DELIVERY";

pub fn customer_orders_key(customer_id: &str) -> String {
    format!("CUSTOMER#{customer_id}#ORDER")
}

/// Stable shard of an id: FNV-1a, so every process agrees without coordination.
pub fn shard_of(id: &str, shards: u32) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in id.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % shards
}

pub fn catalogue_shard_key(shard: u32) -> String {
    format!("CATALOGUE#{shard}")
}

pub fn catalogue_shard(bouquet_id: &str) -> String {
    catalogue_shard_key(shard_of(bouquet_id, CATALOGUE_SHARDS))
}

/// A bouquet's place in `CatalogueFreshnessIndex`: the score zero-padded, then the id, so
/// a descending read gives the freshest first, the newest first among equal scores, and the
/// bouquets no vase has scored yet last (`-` sorts below every digit).
pub fn freshness_sort(freshness: Option<u8>, bouquet_id: &str) -> String {
    match freshness {
        Some(score) => format!("{score:03}#{bouquet_id}"),
        None => format!("-#{bouquet_id}"),
    }
}

/// A bouquet's place in `CatalogueRatingIndex`: its shop's [`catalogue_place`] (the average
/// in tenths of a star, 2 digits; the reviews' band, 2 digits), then the id, so the index read
/// backwards gives the best-rated shops first, the most reviewed first among equal averages,
/// and shops without a review last (`-` sorts below every digit).
///
/// [`catalogue_place`]: bouquet_domain::review::Rating::catalogue_place
pub fn rating_sort(rating: &bouquet_domain::review::Rating, bouquet_id: &str) -> String {
    match rating.catalogue_place() {
        Some(place) => format!(
            "{:02}#{:02}#{bouquet_id}",
            place.average_tenths, place.reviews_band
        ),
        None => format!("-#{bouquet_id}"),
    }
}

/// The bouquet id in a [`rating_sort`] value, when the value has that shape (or the shape
/// before issue 50, whose count had 9 digits: the projector rewrites those at the shop's next
/// move).
pub fn rating_sort_id(value: &str) -> Option<&str> {
    if let Some(id) = value.strip_prefix("-#") {
        return Some(id);
    }
    let mut parts = value.splitn(3, '#');
    let (tenths, band, id) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
    (tenths.len() == 2 && matches!(band.len(), 2 | 9) && digits(tenths) && digits(band))
        .then_some(id)
}

/// A bouquet's place in `CataloguePriceIndex`: minor units over 12 digits (prices stop below
/// 10^9 units), then the id, so the index reads cheapest or dearest first, the newest first
/// among equal prices when read dearest first.
pub fn price_sort(price_minor: i64, bouquet_id: &str) -> String {
    format!("{:012}#{bouquet_id}", price_minor.max(0))
}

/// The bouquet id in a `price_sort` value, when the value has that shape.
pub fn price_sort_id(value: &str) -> Option<&str> {
    let (minor, id) = value.split_once('#')?;
    (minor.len() == 12 && minor.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// The bouquet id in a `freshness_sort` value, when the value has that shape.
pub fn freshness_sort_id(value: &str) -> Option<&str> {
    let (score, id) = value.split_once('#')?;
    let score_ok =
        score == "-" || (score.len() == 3 && score.parse::<u8>().is_ok_and(|s| s <= 100));
    score_ok.then_some(id)
}

pub fn expiry_shard_key(shard: u32) -> String {
    format!("EXPIRY#{shard}")
}

pub fn expiry_shard(order_id: &str) -> String {
    expiry_shard_key(shard_of(order_id, EXPIRY_SHARDS))
}

/// A vase's item key.
pub fn vase_key(vase_id: bouquet_domain::VaseId) -> Key {
    key(vase_pk(&vase_id.to_string()), VASE_SK)
}

/// A shop's item key.
pub fn vendor_key(vendor_id: bouquet_domain::VendorId) -> Key {
    key(vendor_pk(&vendor_id.to_string()), VENDOR_SK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_spread_ids() {
        let mut counts = [0u32; CATALOGUE_SHARDS as usize];
        for i in 0..4000 {
            counts[shard_of(&format!("01JF{i:022}"), CATALOGUE_SHARDS) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    /// A ULID's text: 26 characters of Crockford's base32, which sort as the ids do.
    fn ulid() -> impl proptest::strategy::Strategy<Value = String> {
        "[0-7][0-9A-HJKMNP-TV-Z]{25}"
    }

    proptest::proptest! {
        /// DynamoDB orders `S` keys by their bytes: the freshness order is the score's, unscored
        /// lowest, then the id's, and the id reads back from the key.
        #[test]
        fn the_freshness_key_sorts_as_score_then_id(
            a in (proptest::option::of(0u8..=100), ulid()),
            b in (proptest::option::of(0u8..=100), ulid()),
        ) {
            let key = |(score, id): &(Option<u8>, String)| freshness_sort(*score, id);
            let rank = |(score, id): &(Option<u8>, String)| (score.map_or(-1, i16::from), id.clone());
            proptest::prop_assert_eq!(key(&a).cmp(&key(&b)), rank(&a).cmp(&rank(&b)));
            let written = key(&a);
            proptest::prop_assert_eq!(freshness_sort_id(&written), Some(a.1.as_str()));
        }

        #[test]
        fn the_price_key_sorts_as_price_then_id(
            a in (0i64..100_000_000_000, ulid()),
            b in (0i64..100_000_000_000, ulid()),
        ) {
            let key = |(minor, id): &(i64, String)| price_sort(*minor, id);
            proptest::prop_assert_eq!(key(&a).cmp(&key(&b)), a.cmp(&b));
            let written = key(&a);
            proptest::prop_assert_eq!(price_sort_id(&written), Some(a.1.as_str()));
        }

        #[test]
        fn the_rating_key_sorts_as_the_catalogue_place_then_id(
            a in (proptest::array::uniform5(0i64..2_000), ulid()),
            b in (proptest::array::uniform5(0i64..2_000), ulid()),
        ) {
            use bouquet_domain::review::Rating;
            let rating = |stars: [i64; 5]| Rating { by_stars: stars };
            let key = |(stars, id): &([i64; 5], String)| rating_sort(&rating(*stars), id);
            let rank = |(stars, id): &([i64; 5], String)| (rating(*stars).catalogue_place(), id.clone());
            proptest::prop_assert_eq!(key(&a).cmp(&key(&b)), rank(&a).cmp(&rank(&b)));
            let written = key(&a);
            proptest::prop_assert_eq!(rating_sort_id(&written), Some(a.1.as_str()));
        }
    }

    #[test]
    fn a_value_of_another_shape_names_no_bouquet() {
        for value in ["01J", "101#01J", "99#01J", "abc#01J", "#01J"] {
            assert_eq!(freshness_sort_id(value), None, "{value}");
        }
        for value in ["01J", "100#01J", "00000000000a#01J", "0000000000001#01J"] {
            assert_eq!(price_sort_id(value), None, "{value}");
        }
        for value in ["01J", "4#01#01J", "45#1#01J", "45#000000012#", "4a#01#01J"] {
            assert_eq!(
                rating_sort_id(value).filter(|id| !id.is_empty()),
                None,
                "{value}"
            );
        }
        // The shape before issue 50 still names its bouquet.
        assert_eq!(rating_sort_id("45#000000012#01J"), Some("01J"));
    }
}
