use bouquet_domain::events::DomainEvent;
use bouquet_domain::{Bouquet, BouquetId, Timestamp, VaseId, VendorId};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::cursor::{self, Page};
use crate::error::{Conflict, StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::{from_item, to_item, BouquetItem, Item};
use crate::keys::{self, CATALOGUE_SHARDS};
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// DynamoDB's statement of `Bouquet::is_available`: available, or held past its deadline, and
/// its shop not suspended.
pub(crate) fn available_at(now: Timestamp) -> Expr {
    Expr::new("((#status = :available OR (#status = :reserved AND reservedUntil < :now)) AND attribute_not_exists(suspended))")
        .name("#status", "status")
        .s(":available", "available")
        .s(":reserved", "reserved")
        .n(":now", now.as_millis())
}

/// What a catalogue read keeps beyond "available now" (a `FilterExpression` on the index: no
/// Scan; DynamoDB reads the filtered-out items too, so a narrow filter costs more reads per
/// page).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogueFilter {
    /// Prices in minor units, inclusive.
    pub min_price_minor: Option<i64>,
    pub max_price_minor: Option<i64>,
    /// Only scored bouquets at least this fresh.
    pub min_freshness: Option<u8>,
    /// Only these shops' (the shops that deliver where and when the customer asked, issue 54;
    /// at most [`MAX_FILTER_SHOPS`], DynamoDB's limit of an `IN`).
    pub shops: Option<Vec<VendorId>>,
    /// Only bouquets tagged with this occasion.
    pub occasion: Option<bouquet_domain::search::Occasion>,
    /// Only bouquets whose words match every query word (`bouquet_domain::search::query`:
    /// per word, the stems any of which matches).
    pub text: Vec<Vec<String>>,
}

/// The most shops one catalogue filter names.
pub const MAX_FILTER_SHOPS: usize = 100;

impl CatalogueFilter {
    fn expr(&self, now: Timestamp) -> Expr {
        let mut expr = available_at(now);
        if let Some(min) = self.min_price_minor {
            expr.text.push_str(" AND priceMinor >= :minPrice");
            expr = expr.n(":minPrice", min);
        }
        if let Some(max) = self.max_price_minor {
            expr.text.push_str(" AND priceMinor <= :maxPrice");
            expr = expr.n(":maxPrice", max);
        }
        if let Some(min) = self.min_freshness {
            expr.text.push_str(" AND freshness >= :minFreshness");
            expr = expr.n(":minFreshness", min);
        }
        if let Some(occasion) = self.occasion {
            expr.text.push_str(" AND contains(occasions, :occasion)");
            expr = expr.s(":occasion", occasion.name());
        }
        for (w, stems) in self.text.iter().enumerate() {
            let any: Vec<String> = (0..stems.len())
                .map(|s| format!("contains(searchTerms, :w{w}s{s})"))
                .collect();
            expr.text.push_str(&format!(" AND ({})", any.join(" OR ")));
            for (s, stem) in stems.iter().enumerate() {
                expr = expr.s(&format!(":w{w}s{s}"), stem.clone());
            }
        }
        if let Some(shops) = &self.shops {
            let names: Vec<String> = (0..shops.len()).map(|i| format!(":shop{i}")).collect();
            expr.text
                .push_str(&format!(" AND vendorId IN ({})", names.join(", ")));
            for (name, shop) in names.iter().zip(shops) {
                expr = expr.s(name, shop.to_string());
            }
        }
        expr
    }
}

/// The orders the whole catalogue can be read in, each served by its own sparse index over
/// the listed bouquets (`infra/data-model.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CatalogueSort {
    /// `CatalogueIndex`, by id (a ULID): the newest listing first.
    #[default]
    Newest,
    /// `CatalogueFreshnessIndex`, by `keys::freshness_sort`: the freshest first, unscored last.
    Freshness,
    /// `CataloguePriceIndex`, by `keys::price_sort`, read forwards: the cheapest first.
    PriceLowest,
    /// The same index read backwards: the dearest first.
    PriceHighest,
    /// `CatalogueRatingIndex`, by `keys::rating_sort` read backwards: the best-rated shops'
    /// bouquets first, shops without a review last.
    Rating,
}

impl CatalogueSort {
    fn index(self) -> &'static str {
        match self {
            Self::Newest => keys::INDEX_CATALOGUE,
            Self::Freshness => keys::INDEX_CATALOGUE_FRESHNESS,
            Self::PriceLowest | Self::PriceHighest => keys::INDEX_CATALOGUE_PRICE,
            Self::Rating => keys::INDEX_CATALOGUE_RATING,
        }
    }

    /// Whether the index is read from its highest sort value down.
    fn descending(self) -> bool {
        self != Self::PriceLowest
    }

    fn attribute(self) -> &'static str {
        match self {
            Self::Newest => "catalogueSort",
            Self::Freshness => "freshnessSort",
            Self::PriceLowest | Self::PriceHighest => "priceSort",
            Self::Rating => "ratingSort",
        }
    }

    /// The newest order's cursor is the shards' positions alone (as before the other
    /// orders); another order's names it, so that no cursor continues a different order.
    fn encode_cursor(self, shards: Vec<ShardPosition>) -> String {
        match self {
            Self::Newest => cursor::encode(&shards),
            Self::Freshness | Self::PriceLowest | Self::PriceHighest | Self::Rating => {
                cursor::encode(&SortedCursor {
                    order: self.name().to_owned(),
                    shards,
                })
            }
        }
    }

    fn decode_cursor(self, text: &str) -> Result<Vec<ShardPosition>, StoreError> {
        match self {
            Self::Newest => cursor::decode(text),
            Self::Freshness | Self::PriceLowest | Self::PriceHighest | Self::Rating => {
                let sorted: SortedCursor = cursor::decode(text)?;
                if sorted.order == self.name() {
                    Ok(sorted.shards)
                } else {
                    Err(StoreError::InvalidCursor)
                }
            }
        }
    }

    /// The order's name in the API (`?sort=`) and in its cursors.
    pub fn name(self) -> &'static str {
        match self {
            Self::Newest => "newest",
            Self::Freshness => "freshness",
            Self::PriceLowest => "price",
            Self::PriceHighest => "-price",
            Self::Rating => "rating",
        }
    }

    /// The order named `name` in the API.
    pub fn named(name: &str) -> Option<Self> {
        [
            Self::Newest,
            Self::Freshness,
            Self::PriceLowest,
            Self::PriceHighest,
            Self::Rating,
        ]
        .into_iter()
        .find(|sort| sort.name() == name)
    }

    /// The bouquet id in one of this index's sort values; `None` when the value is not one
    /// (a cursor made for another sort, or forged).
    fn bouquet_id(self, value: &str) -> Option<&str> {
        let id = match self {
            Self::Newest => value,
            Self::Freshness => keys::freshness_sort_id(value)?,
            Self::PriceLowest | Self::PriceHighest => keys::price_sort_id(value)?,
            Self::Rating => keys::rating_sort_id(value)?,
        };
        BouquetId::parse(id).is_ok().then_some(id)
    }
}

/// Available (as above) and still at the version that was read.
pub(crate) fn available_at_version(version: u64, now: Timestamp) -> Expr {
    let available = available_at(now);
    Expr {
        text: format!("version = :readVersion AND {}", available.text),
        ..available
    }
    .n(":readVersion", version)
}

/// An update expression that sets every attribute of `item` except the keys and `keep`, and
/// removes those of `optional` that `item` lacks: a Put that leaves `keep` alone.
pub(crate) fn replace_all_but(item: Item, keep: &[&str], optional: &[&str]) -> Expr {
    let mut expr = Expr::default();
    let mut sets = Vec::new();
    let mut attributes: Vec<_> = item
        .into_iter()
        .filter(|(name, _)| name != "pk" && name != "sk" && !keep.contains(&name.as_str()))
        .collect();
    attributes.sort_by(|a, b| a.0.cmp(&b.0));
    let removes: Vec<String> = optional
        .iter()
        .filter(|name| !attributes.iter().any(|(present, _)| present == *name))
        .enumerate()
        .map(|(i, name)| {
            expr.names.insert(format!("#r{i}"), (*name).to_owned());
            format!("#r{i}")
        })
        .collect();
    for (i, (name, value)) in attributes.into_iter().enumerate() {
        expr.names.insert(format!("#a{i}"), name);
        expr.values.insert(format!(":a{i}"), value);
        sets.push(format!("#a{i} = :a{i}"));
    }
    expr.text = format!("SET {}", sets.join(", "));
    if !removes.is_empty() {
        expr.text
            .push_str(&format!(" REMOVE {}", removes.join(", ")));
    }
    expr
}

/// Takes `bouquet_id` out of the vase holding it: the vase forgets the bouquet, when it was
/// listed, and the score it last wrote to it (what `create_bouquet` links). The condition: the
/// vase still holds that bouquet (which also means the vase exists: no Update creates one).
pub(crate) fn vacate(bouquet_id: BouquetId) -> (Expr, Expr) {
    (
        Expr::new("REMOVE bouquetId, bouquetListedAt, freshness"),
        Expr::new("bouquetId = :leavingBouquet").s(":leavingBouquet", bouquet_id.to_string()),
    )
}

pub(crate) fn bouquet_key(id: &str) -> Item {
    keys::key(keys::bouquet_pk(id), keys::BOUQUET_SK)
}

/// A cursor of an order other than the newest.
#[derive(serde::Serialize, serde::Deserialize)]
struct SortedCursor {
    #[serde(rename = "o")]
    order: String,
    #[serde(rename = "s")]
    shards: Vec<ShardPosition>,
}

/// Where one catalogue shard's reading stands in a cursor.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum ShardPosition {
    #[serde(rename = "s")]
    Start,
    #[serde(rename = "a")]
    After(String),
    #[serde(rename = "d")]
    Done,
}

impl Store {
    /// Lists a bouquet: checks that the vendor exists (and owns the vase, if one is named),
    /// puts the bouquet and its event, all in one transaction.
    pub async fn create_bouquet(
        &self,
        bouquet: &Bouquet,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        let vendor = bouquet.vendor_id.to_string();
        // The shop exists and is not suspended.
        tx.check(
            Target::Vendor(bouquet.vendor_id),
            &self.table,
            keys::vendor_key(bouquet.vendor_id),
            Expr::new("attribute_exists(pk) AND attribute_not_exists(suspendedAt)"),
        )?;
        if let Some(vase_id) = bouquet.vase_id {
            // Linking: the vase now scores this bouquet (its previous bouquet's score goes).
            tx.update(
                Target::Vase(vase_id),
                &self.table,
                keys::vase_key(vase_id),
                Expr::new(
                    "SET bouquetId = :bouquetId, bouquetListedAt = :listedAt REMOVE freshness",
                )
                .s(":bouquetId", bouquet.bouquet_id.to_string())
                .n(":listedAt", bouquet.listed_at.as_millis()),
                Expr::new("attribute_exists(pk) AND vendorId = :vendorId").s(":vendorId", vendor),
            )?;
        }
        self.create_with_event(
            tx,
            Target::Bouquet(bouquet.bouquet_id),
            to_item(&BouquetItem::from_domain(bouquet))?,
            event,
        )
        .await
    }

    /// One bouquet. `consistent` for a read that a conditional write will follow.
    pub async fn bouquet(
        &self,
        bouquet_id: BouquetId,
        consistent: bool,
    ) -> Result<Option<Bouquet>, StoreError> {
        self.get_stored::<BouquetItem>(bouquet_key(&bouquet_id.to_string()), consistent)
            .await
    }

    /// Replaces a bouquet read at `read_version` with its changed state, if it is still at
    /// that version and still available; puts the event in the same transaction.
    ///
    /// `leaves_vase`: the vase the bouquet leaves (a withdrawal), read holding it. The vase
    /// forgets it in the same transaction ([`vacate`]), on condition that it still holds this
    /// bouquet: when it holds another by then, the transaction fails on `Target::Vase` and the
    /// caller reads again.
    pub async fn save_bouquet(
        &self,
        changed: &Bouquet,
        read_version: u64,
        event: &DomainEvent,
        leaves_vase: Option<VaseId>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        self.replace_bouquet(&mut tx, changed, available_at_version(read_version, now))?;
        if let Some(vase_id) = leaves_vase {
            let (update, condition) = vacate(changed.bouquet_id);
            tx.update(
                Target::Vase(vase_id),
                &self.table,
                keys::vase_key(vase_id),
                update,
                condition,
            )?;
        }
        tx.commit_with_event(self, Some(event)).await
    }

    /// Replaces a bouquet read at `read_version` with `changed` whatever its status (a shop's
    /// suspension moving it off or back on sale), keeping the score as the vase left it.
    pub async fn save_bouquet_as_read(
        &self,
        changed: &Bouquet,
        read_version: u64,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::new();
        self.replace_bouquet(&mut tx, changed, Expr::at_version(read_version))?;
        tx.commit(self).await
    }

    /// Writes `changed` on `condition` as an update of every attribute but the score, not a
    /// Put: the vase may have moved the score since the read, and a vendor's edit must not put
    /// the old one back.
    fn replace_bouquet(
        &self,
        tx: &mut Tx,
        changed: &Bouquet,
        condition: Expr,
    ) -> Result<(), StoreError> {
        let item = to_item(&BouquetItem::from_domain(changed))?;
        tx.update(
            Target::Bouquet(changed.bouquet_id),
            &self.table,
            bouquet_key(&changed.bouquet_id.to_string()),
            replace_all_but(item, BouquetItem::PROJECTED, BouquetItem::OPTIONAL),
            condition,
        )
    }

    /// A page of all of one vendor's bouquets, whatever their status, oldest first.
    pub async fn vendor_bouquets(
        &self,
        vendor_id: VendorId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Bouquet>, StoreError> {
        self.vendor_bouquet_page(vendor_id, None, false, cursor, limit)
            .await
    }

    /// A page of one vendor's bouquets from `VendorIndex`, kept by `filter` when given.
    async fn vendor_bouquet_page(
        &self,
        vendor_id: VendorId,
        filter: Option<Expr>,
        newest_first: bool,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Bouquet>, StoreError> {
        let after = decode_id_cursor(cursor)?;
        let partition = keys::vendor_bouquets_key(&vendor_id.to_string());
        self.query_index(
            IndexQuery {
                filter,
                newest_first,
                ..IndexQuery::vendor_index(partition, after.as_deref(), limit)
            },
            bouquet_key,
        )
        .await?
        .into_page::<BouquetItem>()
    }

    /// The public catalogue in `sort`'s order: reads every shard of that sort's index in
    /// parallel and merges them. The cursor keeps each shard's position.
    pub async fn catalogue(
        &self,
        filter: &CatalogueFilter,
        sort: CatalogueSort,
        cursor: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Page<Bouquet>, StoreError> {
        let positions: Vec<ShardPosition> = match cursor {
            Some(text) => sort.decode_cursor(text)?,
            None => vec![ShardPosition::Start; CATALOGUE_SHARDS as usize],
        };
        if positions.len() != CATALOGUE_SHARDS as usize
            || positions.iter().any(
                |p| matches!(p, ShardPosition::After(value) if sort.bouquet_id(value).is_none()),
            )
        {
            return Err(StoreError::InvalidCursor);
        }
        let reads = positions
            .iter()
            .enumerate()
            .map(|(shard, position)| async move {
                let after = match position {
                    ShardPosition::Done => return Ok::<_, StoreError>(None),
                    ShardPosition::Start => None,
                    ShardPosition::After(value) => Some(value.as_str()),
                };
                let page = self
                    .query_index(
                        IndexQuery {
                            index: sort.index(),
                            partition_attr: "catalogueShard",
                            partition: keys::catalogue_shard_key(shard as u32),
                            sort_attr: sort.attribute(),
                            filter: Some(filter.expr(now)),
                            newest_first: sort.descending(),
                            after,
                            sort_between: None,
                            after_by_condition: false,
                            limit,
                        },
                        |value| bouquet_key(sort.bouquet_id(value).unwrap_or_default()),
                    )
                    .await?;
                let bouquets = page
                    .items
                    .into_iter()
                    .map(|item| {
                        // Merged by the index's own value, as DynamoDB ordered the shard.
                        let place = match item.get(sort.attribute()) {
                            Some(AttributeValue::S(value)) => value.clone(),
                            _ => {
                                return Err(StoreError::corrupt(
                                    "an index entry without its sort key",
                                ))
                            }
                        };
                        Ok((place, decode_bouquet(item)?))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Some((bouquets, page.resume_after.is_some())))
            });
        let shards = futures::future::try_join_all(reads).await?;

        // Merge in the index's order and take `limit`; each shard resumes after its last item
        // taken.
        let mut merged: Vec<(usize, &String, &Bouquet)> = shards
            .iter()
            .enumerate()
            .flat_map(|(s, page)| {
                page.iter()
                    .flat_map(move |(items, _)| items.iter().map(move |(place, b)| (s, place, b)))
            })
            .collect();
        if sort.descending() {
            merged.sort_by(|a, b| b.1.cmp(a.1));
        } else {
            merged.sort_by(|a, b| a.1.cmp(b.1));
        }
        merged.truncate(limit);
        let mut next = positions.clone();
        for (shard, page) in shards.iter().enumerate() {
            let Some((items, more)) = page else { continue };
            let taken: Vec<&String> = merged
                .iter()
                .filter(|(s, _, _)| *s == shard)
                .map(|(_, place, _)| *place)
                .collect();
            next[shard] = match taken.last() {
                _ if taken.len() == items.len() && !more => ShardPosition::Done,
                Some(last) => ShardPosition::After((*last).clone()),
                None => positions[shard].clone(),
            };
        }
        let finished = next.iter().all(|p| *p == ShardPosition::Done);
        Ok(Page {
            items: merged.into_iter().map(|(_, _, b)| b.clone()).collect(),
            next_cursor: (!finished).then(|| sort.encode_cursor(next)),
        })
    }

    /// One vendor's bouquets that are available now, newest first.
    pub async fn vendor_catalogue(
        &self,
        vendor_id: VendorId,
        filter: &CatalogueFilter,
        cursor: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Page<Bouquet>, StoreError> {
        self.vendor_bouquet_page(vendor_id, Some(filter.expr(now)), true, cursor, limit)
            .await
    }
}

pub(crate) fn decode_bouquet(item: Item) -> Result<Bouquet, StoreError> {
    from_item::<BouquetItem>(item)?.into_domain()
}

impl Conflict {
    /// The bouquet as the failed condition found it (`None` when there was none, or, logged,
    /// when it cannot be read).
    pub fn bouquet(&self) -> Option<Bouquet> {
        let item = self.item.clone()?;
        decode_bouquet(item)
            .inspect_err(|error| tracing::warn!(target = ?self.target, %error, "unreadable bouquet in a conflict"))
            .ok()
    }
}

/// Single-partition cursors carry the sort value (an id) to resume after.
pub(crate) fn decode_id_cursor(cursor: Option<&str>) -> Result<Option<String>, StoreError> {
    match cursor {
        None => Ok(None),
        Some(text) => {
            let id: String = cursor::decode(text)?;
            // Every sort value of these indexes is a ULID.
            BouquetId::parse(&id).map_err(|_| StoreError::InvalidCursor)?;
            Ok(Some(id))
        }
    }
}
