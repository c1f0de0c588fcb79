//! A bouquet in the catalogue: read, browsed, changed and withdrawn by its vendor. A change is a
//! conditional write on the version read, with its event; `If-Match` names the version the
//! vendor saw.

use crate::problem::ApiError;
use bouquet_domain::bouquet::BouquetChange;
use bouquet_domain::delivery::{DeliverySettings, WhereAndWhen};
use bouquet_domain::events::{DomainEvent, EventData};
use bouquet_domain::identity::{Identity, NotAllowed};
use bouquet_domain::{Bouquet, BouquetId, DomainError, FieldError, Timestamp, VaseId, VendorId};
use bouquet_store::retry::Retry;
use bouquet_store::{
    CatalogueFilter, CatalogueSort, Conflict, Page, StoreError, Target, MAX_FILTER_SHOPS,
};

use crate::{App, CatalogueIndexes};

#[derive(Debug, thiserror::Error)]
pub enum BouquetError {
    #[error("no such bouquet")]
    NotFound,
    #[error("the bouquet is another vendor's")]
    Forbidden(#[from] NotAllowed),
    /// A change needs the version the vendor saw.
    #[error("this change needs the version it was made to")]
    VersionRequired,
    #[error("the bouquet has changed since that version")]
    Changed,
    /// Reserved, sold or withdrawn: only an available bouquet changes.
    #[error("the bouquet can only be changed or withdrawn while it is available")]
    NotAvailable,
    #[error("the bouquet kept changing; retry shortly")]
    Busy,
    #[error(transparent)]
    Domain(DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<DomainError> for BouquetError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::BouquetNotAvailableForChange => BouquetError::NotAvailable,
            other => BouquetError::Domain(other),
        }
    }
}

/// One bouquet, as the catalogue shows it (eventually consistent).
pub async fn bouquet(app: &App, bouquet_id: BouquetId) -> Result<Bouquet, BouquetError> {
    app.store
        .bouquet(bouquet_id, false)
        .await?
        .ok_or(BouquetError::NotFound)
}

/// Which bouquets a catalogue page reads, in which order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogueScope {
    /// Every shop's, in one of the orders an index serves.
    All(CatalogueSort),
    /// One shop's, newest first (its own partition of `VendorIndex`; no other order is
    /// offered for it).
    Shop(VendorId),
}

/// A page of the available catalogue, narrowed by `filter`.
pub async fn catalogue(
    app: &App,
    scope: CatalogueScope,
    filter: &CatalogueFilter,
    cursor: Option<&str>,
    limit: usize,
    now: Timestamp,
) -> Result<Page<Bouquet>, StoreError> {
    // Narrowed to no shop (none reaches the place asked for): nothing to read.
    if filter.shops.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Page {
            items: Vec::new(),
            next_cursor: None,
        });
    }
    match scope {
        CatalogueScope::Shop(vendor_id) => {
            app.store
                .vendor_catalogue(vendor_id, filter, cursor, limit, now)
                .await
        }
        CatalogueScope::All(sort) => app.store.catalogue(filter, sort, cursor, limit, now).await,
    }
}

/// The shops that take a delivery to `place` (its postcode, country and date) at `now`, with
/// their settings: read from the coverage index (`coverage_keys`), then each checked as
/// checkout would check it (issue 54). At most [`MAX_FILTER_SHOPS`], the first found.
pub async fn shops_reaching(
    app: &App,
    place: &WhereAndWhen,
    now: Timestamp,
) -> Result<Vec<(VendorId, DeliverySettings)>, StoreError> {
    let mut reaching: Vec<_> = app
        .store
        .shops_covering(place)
        .await?
        .into_iter()
        .filter(|(_, settings)| settings.reaches(place, now))
        .collect();
    if reaching.len() > MAX_FILTER_SHOPS {
        tracing::warn!(
            shops = reaching.len(),
            "more shops reach this place than one catalogue filter names; the first are listed"
        );
        reaching.truncate(MAX_FILTER_SHOPS);
    }
    Ok(reaching)
}

/// Reads `?occasion=` (an occasion's name) and `?q=` (words) into `filter`; each problem a
/// field error named by its parameter.
pub fn parse_search(
    filter: &mut CatalogueFilter,
    occasion: Option<&str>,
    text: Option<&str>,
) -> Result<(), Vec<FieldError>> {
    let mut errors = Vec::new();
    if let Some(name) = occasion {
        match bouquet_domain::search::Occasion::parse(name) {
            Some(occasion) => filter.occasion = Some(occasion),
            None => errors.push(FieldError::new("query/occasion", "is not an occasion")),
        }
    }
    if let Some(text) = text {
        match bouquet_domain::search::query(text) {
            Ok(words) => filter.text = words,
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Reads a catalogue request's query: `vendorId`, `sort` (`newest`, the default, `freshness`,
/// `price`, `-price` or `rating`; the price and rating orders only where `indexes` says the
/// stack has their index) and the filters (`parse_filter`); every problem a field error named by its
/// parameter.
pub fn parse_browse(
    vendor_id: Option<&str>,
    sort: Option<&str>,
    min_price: Option<&str>,
    max_price: Option<&str>,
    min_freshness: Option<&str>,
    indexes: &CatalogueIndexes,
) -> Result<(CatalogueScope, CatalogueFilter), Vec<FieldError>> {
    let CatalogueIndexes {
        price: price_index,
        rating: rating_index,
    } = *indexes;
    let mut errors = Vec::new();
    let vendor_id = vendor_id.and_then(|raw| {
        VendorId::parse(raw)
            .map_err(|e| errors.push(FieldError::new("query/vendorId", e)))
            .ok()
    });
    let sort = match CatalogueSort::named(sort.unwrap_or("newest")) {
        Some(CatalogueSort::PriceLowest | CatalogueSort::PriceHighest) if !price_index => {
            errors.push(FieldError::new(
                "query/sort",
                "is not offered until this stack's price index is added (docs/deploying.md)",
            ));
            None
        }
        Some(CatalogueSort::Rating) if !rating_index => {
            errors.push(FieldError::new(
                "query/sort",
                "is not offered until this stack's rating index is added (docs/deploying.md)",
            ));
            None
        }
        Some(sort) => Some(sort),
        None => {
            errors.push(FieldError::new(
                "query/sort",
                "must be newest, freshness, price, -price or rating",
            ));
            None
        }
    };
    let scope = match (vendor_id, sort) {
        (Some(vendor_id), Some(CatalogueSort::Newest)) => Some(CatalogueScope::Shop(vendor_id)),
        (Some(_), Some(_)) => {
            errors.push(FieldError::new(
                "query/sort",
                "one shop's bouquets are listed newest first only",
            ));
            None
        }
        (None, Some(sort)) => Some(CatalogueScope::All(sort)),
        (_, None) => None,
    };
    let filter = parse_filter(min_price, max_price, min_freshness)
        .map_err(|more| errors.extend(more))
        .ok();
    match (scope, filter) {
        (Some(scope), Some(filter)) if errors.is_empty() => Ok((scope, filter)),
        _ => Err(errors),
    }
}

/// The catalogue page's bouquets as readers see them, each with its shop's name and rating
/// (one `BatchGetItem` for the page's shops).
pub async fn with_shops(
    app: &App,
    bouquets: &[Bouquet],
    now: Timestamp,
) -> Result<Vec<bouquet_domain::bouquet::BouquetView>, StoreError> {
    let vendors: Vec<VendorId> = bouquets.iter().map(|b| b.vendor_id).collect();
    let shops = app.store.shop_names_and_ratings(&vendors).await?;
    Ok(bouquets
        .iter()
        .map(|b| {
            let mut view = b.view(now);
            if let Some((name, rating)) = shops.get(&b.vendor_id) {
                view.vendor_name = name.clone();
                view.shop_rating = Some(*rating);
            }
            view
        })
        .collect())
}

/// Reads the catalogue's filters (`minPrice`, `maxPrice`: amounts such as `12.50`;
/// `minFreshness`: 0 to 100), each problem a field error named by its parameter.
pub fn parse_filter(
    min_price: Option<&str>,
    max_price: Option<&str>,
    min_freshness: Option<&str>,
) -> Result<CatalogueFilter, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut price = |name: &str, text: Option<&str>| {
        let text = text?;
        match bouquet_domain::Money::parse_amount(text, "EUR") {
            Ok(money) if money.minor() >= 0 => Some(money.minor()),
            _ => {
                errors.push(FieldError::new(
                    format!("query/{name}"),
                    "must be an amount such as 12.50",
                ));
                None
            }
        }
    };
    let min_price_minor = price("minPrice", min_price);
    let max_price_minor = price("maxPrice", max_price);
    let min_freshness = match min_freshness {
        None => None,
        Some(text) => match text.parse::<u8>() {
            Ok(n) if n <= 100 => Some(n),
            _ => {
                errors.push(FieldError::new(
                    "query/minFreshness",
                    "must be a whole number from 0 to 100",
                ));
                None
            }
        },
    };
    if let (Some(min), Some(max)) = (min_price_minor, max_price_minor) {
        if min > max {
            errors.push(FieldError::new(
                "query/maxPrice",
                "must not be below minPrice",
            ));
        }
    }
    if errors.is_empty() {
        Ok(CatalogueFilter {
            min_price_minor,
            max_price_minor,
            min_freshness,
            ..CatalogueFilter::default()
        })
    } else {
        Err(errors)
    }
}

/// The caller's bouquet as it is now, read for a change: its vendor only; at `if_match` when
/// given.
/// The bouquet `caller` may change or withdraw, read consistently: another vendor's is
/// refused before anything of the request is looked at (so a refusal is 403 or 404 whatever
/// the body or `If-Match` held). A suspended shop's request never gets here: the pipeline
/// refuses it ([`crate::shops::ShopStanding`]).
pub async fn editable(
    app: &App,
    caller: &Identity,
    bouquet_id: BouquetId,
) -> Result<Bouquet, BouquetError> {
    let bouquet = app
        .store
        .bouquet(bouquet_id, true)
        .await?
        .ok_or(BouquetError::NotFound)?;
    caller.require_vendor(bouquet.vendor_id)?;
    Ok(bouquet)
}

fn at_version(bouquet: Bouquet, if_match: Option<u64>) -> Result<Bouquet, BouquetError> {
    match if_match {
        Some(expected) if expected != bouquet.version => Err(BouquetError::Changed),
        _ => Ok(bouquet),
    }
}

/// Writes `changed` over `read` (and takes it out of `leaves_vase`, read holding it); a
/// refused write says why (`Ok(false)`: only the version moved, and the caller named none, or
/// only the vase moved on: read again).
async fn save(
    app: &App,
    read: &Bouquet,
    changed: &Bouquet,
    event: &DomainEvent,
    leaves_vase: Option<VaseId>,
    if_match: Option<u64>,
    now: Timestamp,
) -> Result<bool, BouquetError> {
    match app
        .store
        .save_bouquet(changed, read.version, event, leaves_vase, now)
        .await
    {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed(conflicts)) => {
            let bouquet = conflicts
                .iter()
                .find(|c| matches!(c.target, Target::Bouquet(_)));
            if bouquet.is_none()
                && conflicts
                    .iter()
                    .any(|c| matches!(c.target, Target::Vase(_)))
            {
                // The bouquet's condition held, the vase's did not: another bouquet was listed
                // in it since the read. Read both again.
                return Ok(false);
            }
            match bouquet.and_then(Conflict::bouquet) {
                Some(current) if current.is_available(now) && if_match.is_some() => {
                    Err(BouquetError::Changed)
                }
                Some(current) if current.is_available(now) => Ok(false),
                Some(_) => Err(BouquetError::NotAvailable),
                None => Err(BouquetError::NotFound),
            }
        }
        Err(other) => Err(other.into()),
    }
}

/// Its vendor changes an available bouquet (`read`, from [`editable`]) at the version
/// `if_match` (`BouquetChanged`).
pub async fn change(
    app: &App,
    read: Bouquet,
    if_match: Option<u64>,
    change: BouquetChange,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Bouquet, BouquetError> {
    if if_match.is_none() {
        return Err(BouquetError::VersionRequired);
    }
    let read = at_version(read, if_match)?;
    let bouquet_id = read.bouquet_id;
    let mut changed = read.clone();
    changed.change(change, now)?;
    let event = DomainEvent::new(
        bouquet_id,
        changed.version,
        now,
        correlation_id,
        EventData::BouquetChanged {
            bouquet_id,
            vendor_id: changed.vendor_id,
            name: changed.name.clone(),
            description: changed.description.clone(),
            price: changed.price,
        },
    );
    match save(app, &read, &changed, &event, None, if_match, now).await? {
        true => Ok(changed),
        false => Err(BouquetError::Changed),
    }
}

/// Its vendor withdraws an available bouquet (`read`, from [`editable`]) (`BouquetWithdrawn`);
/// without `if_match`, a change of version alone is retried. The bouquet leaves its vase in the
/// same transaction, if the vase still holds it (one listed in the vase since holds it
/// instead: that vase is left alone).
///
/// The withdrawn bouquet keeps its `vaseId`, as a sold one does: it says where the bouquet
/// stood and where its last score came from. What stands in a vase now is the vase item's
/// `bouquetId` alone (the telemetry, the vendor's vase list and decommissioning read that),
/// so that is the link removed.
pub async fn withdraw(
    app: &App,
    caller: &Identity,
    read: Bouquet,
    if_match: Option<u64>,
    correlation_id: &str,
    now: Timestamp,
) -> Result<Bouquet, BouquetError> {
    let bouquet_id = read.bouquet_id;
    let mut read = Some(read);
    let mut retry = Retry::optimistic();
    while retry.next().await {
        // The first try on what the caller's check read; a retry reads again.
        let current = match read.take() {
            Some(read) => read,
            None => editable(app, caller, bouquet_id).await?,
        };
        let current = at_version(current, if_match)?;
        let mut withdrawn = current.clone();
        withdrawn.withdraw(now)?;
        let leaves_vase = match current.vase_id {
            Some(vase_id) => app
                .store
                .vase(vase_id, true)
                .await?
                .filter(|vase| vase.holds(bouquet_id))
                .map(|vase| vase.vase_id),
            None => None,
        };
        let event = DomainEvent::new(
            bouquet_id,
            withdrawn.version,
            now,
            correlation_id,
            EventData::BouquetWithdrawn {
                bouquet_id,
                vendor_id: withdrawn.vendor_id,
            },
        );
        if save(
            app,
            &current,
            &withdrawn,
            &event,
            leaves_vase,
            if_match,
            now,
        )
        .await?
        {
            return Ok(withdrawn);
        }
    }
    Err(BouquetError::Busy)
}

impl From<BouquetError> for ApiError {
    fn from(error: BouquetError) -> Self {
        match error {
            BouquetError::NotFound => ApiError::NotFound("bouquet"),
            BouquetError::Forbidden(_) => ApiError::forbidden(),
            BouquetError::VersionRequired => ApiError::PreconditionRequired,
            BouquetError::Changed => ApiError::PreconditionFailed(
                "the bouquet has changed since that version; fetch it again",
            ),
            BouquetError::NotAvailable => DomainError::BouquetNotAvailableForChange.into(),
            BouquetError::Busy => ApiError::busy(),
            BouquetError::Domain(error) => error.into(),
            BouquetError::Store(error) => error.into(),
        }
    }
}
