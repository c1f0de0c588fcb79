//! `GET /v1/bouquets`: the public catalogue of bouquets available now, newest first or
//! freshest first (`?sort=freshness`), by price (`?sort=price`, `?sort=-price`) or by its
//! shop's rating (`?sort=rating`), each with its shop's name and rating, or one
//! vendor's newest first (`?vendorId=`), in a
//! price range (`?minPrice=&maxPrice=`) or at least this fresh (`?minFreshness=`), or only
//! what can reach a door on a day (`?postcode=&country=&date=`, the three together: each
//! bouquet then carries its `deliveryFee` there, issue 54), for an occasion (`?occasion=`) or
//! whose words match (`?q=`, stemmed). Paginated with `?limit=` and `?cursor=`.

use bouquet_app::bouquets;
use bouquet_app::domain::delivery::WhereAndWhen;
use bouquet_app::domain::FieldError;
use bouquet_http::{ApiError, Ctx, Reply};
use serde_json::{json, Value};

bouquet_http::route!(GET "/v1/bouquets" => handle);

async fn handle(ctx: &Ctx) -> Result<Reply, ApiError> {
    let limit = ctx.limit()?;
    let (scope, filter) = bouquets::parse_browse(
        ctx.query("vendorId"),
        ctx.query("sort"),
        ctx.query("minPrice"),
        ctx.query("maxPrice"),
        ctx.query("minFreshness"),
        &ctx.app.config.catalogue_indexes,
    )?;
    let mut filter = filter;
    bouquets::parse_search(&mut filter, ctx.query("occasion"), ctx.query("q"))?;
    let place = where_and_when(ctx)?;
    let reaching = match &place {
        Some(place) => bouquets::shops_reaching(&ctx.app, place, ctx.now).await?,
        None => Vec::new(),
    };
    if place.is_some() {
        filter.shops = Some(reaching.iter().map(|(shop, _)| *shop).collect());
    }
    let page = bouquets::catalogue(&ctx.app, scope, &filter, ctx.cursor(), limit, ctx.now).await?;
    let mut items: Vec<Value> = bouquets::with_shops(&ctx.app, &page.items, ctx.now)
        .await?
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(ApiError::internal)?;
    if let Some(place) = &place {
        for (item, bouquet) in items.iter_mut().zip(&page.items) {
            if let Some((_, settings)) =
                reaching.iter().find(|(shop, _)| *shop == bouquet.vendor_id)
            {
                let fee = settings.fee_to(place, bouquet.price.currency(), ctx.now);
                item["deliveryFee"] = serde_json::to_value(fee).map_err(ApiError::internal)?;
            }
        }
    }
    // The edge may hold an anonymous page briefly; availability is re-checked at reservation.
    let cache = ctx.public_cache(5);
    Ok(
        Reply::ok(&json!({ "items": items, "nextCursor": page.next_cursor }))?
            .header("cache-control", cache),
    )
}

/// `?postcode=&country=&date=`: none, or the three together.
fn where_and_when(ctx: &Ctx) -> Result<Option<WhereAndWhen>, ApiError> {
    match (
        ctx.query("postcode"),
        ctx.query("country"),
        ctx.query("date"),
    ) {
        (None, None, None) => Ok(None),
        (Some(postcode), Some(country), Some(date)) => {
            Ok(Some(WhereAndWhen::parse(postcode, country, date)?))
        }
        (postcode, country, date) => Err(ApiError::Invalid(
            [
                ("query/postcode", postcode),
                ("query/country", country),
                ("query/date", date),
            ]
            .into_iter()
            .filter(|(_, given)| given.is_none())
            .map(|(field, _)| FieldError::new(field, "postcode, country and date go together"))
            .collect(),
        )),
    }
}
