//! The public catalogue: sharded index, merged newest first, paginated without gaps or
//! repeats, showing only what is available now (expired holds included).

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use system_tests::{by_vendor, fixture, ApiRequest, PathParams, TestCloud};

/// What one catalogue page costs, whatever its order: a Query per catalogue shard (in
/// parallel), and one BatchGetItem for the page's shop names.
fn one_page_read() -> std::collections::HashMap<String, usize> {
    std::collections::HashMap::from([
        (
            "Query".to_owned(),
            bouquet_app::store::CATALOGUE_SHARDS as usize,
        ),
        ("BatchGetItem".to_owned(), 1),
    ])
}

async fn all_pages(cloud: &TestCloud, limit: usize, vendor: Option<&str>) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut request = ApiRequest::fixture("list-bouquets").query("limit", &limit.to_string());
        if let Some(vendor) = vendor {
            request = request.query("vendorId", vendor);
        }
        if let Some(cursor) = &cursor {
            request = request.query("cursor", cursor);
        }
        let page = cloud.call("list-bouquets", request).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let items = page.body["items"].as_array().unwrap();
        assert!(items.len() <= limit);
        ids.extend(
            items
                .iter()
                .map(|b| b["bouquetId"].as_str().unwrap().to_owned()),
        );
        pages += 1;
        match page.body["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (ids, pages),
        }
        assert!(pages < 50, "pagination does not end");
    }
}

#[tokio::test]
async fn pages_cover_every_available_bouquet_once_newest_first() {
    let cloud = TestCloud::new().await;
    let (v1, v2) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    let mut listed = Vec::new();
    for i in 0..11 {
        listed.push(
            cloud
                .bouquet(if i % 3 == 0 { &v2 } else { &v1 }, "10.00")
                .await,
        );
    }
    // One held (hidden), one withdrawn (gone), one held past its deadline (shown again).
    assert_eq!(cloud.reserve("customer-1", &[&listed[1]]).await.status, 201);
    let withdrawn = cloud
        .send(by_vendor("withdraw-bouquet", &v1).bouquet_id(&listed[2]))
        .await;
    assert_eq!(withdrawn.status, 200);
    cloud.clock.advance(Duration::from_secs(16 * 60));
    assert_eq!(cloud.reserve("customer-2", &[&listed[4]]).await.status, 201);

    let expected: Vec<String> = listed
        .iter()
        .rev()
        .filter(|id| **id != listed[2] && **id != listed[4])
        .cloned()
        .collect();
    for limit in [1, 3, 4, 20] {
        let (ids, pages) = all_pages(&cloud, limit, None).await;
        assert_eq!(
            ids, expected,
            "limit {limit}: every available bouquet once, newest first"
        );
        assert!(pages >= expected.len().div_ceil(limit), "limit {limit}");
    }
    let (ids, _) = all_pages(&cloud, 2, Some(&v2)).await;
    let of_v2: Vec<String> = listed
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, _)| i % 3 == 0)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(ids, of_v2, "one vendor's catalogue");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
}

/// A crowd on the storefront through the template's CloudFront caching (the dev stack's edge
/// cache): 300 anonymous readers of one catalogue page at once cost the table one page read,
/// made-up query strings do not get past the cache, and a signed-in vendor always reads fresh.
#[tokio::test]
async fn a_crowd_reading_the_catalogue_through_the_edge_costs_one_page_read() {
    use devstack::apigw::Incoming;
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    for _ in 0..3 {
        cloud.bouquet(&vendor, "10.00").await;
    }
    let api = cloud.edge_api();
    let get = |query: &str, authorization: Option<String>| Incoming {
        method: "GET".into(),
        path: "/v1/bouquets".into(),
        raw_query: query.into(),
        headers: authorization
            .map(|a| vec![("authorization".to_owned(), a)])
            .unwrap_or_default(),
        source_ip: "203.0.113.7".into(),
        ..Incoming::default()
    };
    cloud.calls.reset();
    let answers = futures::future::join_all((0..300).map(|i| {
        let api = api.clone();
        // Some add a made-up query string: it is not in the key and not forwarded.
        let request = get(
            if i % 3 == 0 {
                "limit=24&bust=1"
            } else {
                "limit=24"
            },
            None,
        );
        async move { api.handle(request).await }
    }))
    .await;
    let pages: std::collections::BTreeSet<Vec<u8>> =
        answers.iter().map(|(_, _, body)| body.clone()).collect();
    assert!(answers.iter().all(|(status, _, _)| status.as_u16() == 200));
    assert_eq!(pages.len(), 1, "everyone got the same page");
    let page: Value = serde_json::from_slice(pages.first().unwrap()).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 3);
    assert!(
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["vendorName"].as_str().is_some_and(|n| !n.is_empty())),
        "each card names its shop: {page}"
    );
    let edge = api.edge_cache().unwrap();
    assert_eq!((edge.misses(), edge.hits()), (1, 299));
    assert_eq!(api.invocations(), 1, "one origin request");
    assert_eq!(
        cloud.calls.by_operation(),
        one_page_read(),
        "one page read: a Query per catalogue shard, and the page's shop names"
    );
    // Another page is another key.
    api.handle(get("limit=5", None)).await;
    assert_eq!(api.invocations(), 2);
    // A signed-in vendor managing its shop reads through, every time, and is never kept.
    let seller = system_tests::token("vendor", "seller-1", Some(&vendor));
    for _ in 0..2 {
        let (status, headers, _) = api.handle(get("limit=24", Some(seller.clone()))).await;
        assert_eq!(status.as_u16(), 200);
        assert!(headers
            .iter()
            .any(|(k, v)| k == "cache-control" && v == "private, no-store"));
    }
    assert_eq!(api.invocations(), 4);
}

/// One bouquet through the edge as a storefront crowd opens its card: 200 anonymous readers
/// cost one read, a reader holding the current ETag is answered by the edge, and its vendor's
/// PATCH (If-Match, Idempotency-Key, a body) passes the cached behavior and is read back
/// fresh, while anonymous readers keep the edge's copy for at most its 5 seconds.
#[tokio::test]
async fn a_crowd_opening_one_bouquet_through_the_edge_costs_one_read_and_its_vendor_writes_through()
{
    use devstack::apigw::Incoming;
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "10.00").await;
    let api = cloud.edge_api();
    let path = format!("/v1/bouquets/{bouquet}");
    let request = |method: &str, headers: Vec<(&str, String)>, body: &str| Incoming {
        method: method.into(),
        path: path.clone(),
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        body: body.as_bytes().to_vec(),
        source_ip: "203.0.113.7".into(),
        ..Incoming::default()
    };
    let answers = futures::future::join_all((0..200).map(|_| {
        let api = api.clone();
        let get = request("GET", vec![], "");
        async move { api.handle(get).await }
    }))
    .await;
    assert!(answers.iter().all(|(status, _, _)| status.as_u16() == 200));
    let header = |headers: &[(String, String)], name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let (_, headers, body) = &answers[0];
    assert_eq!(
        header(headers, "cache-control").as_deref(),
        Some("public, max-age=5")
    );
    let etag = header(headers, "etag").expect("an ETag");
    assert_eq!(etag, "\"1\"");
    let first: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(first["price"]["amount"], "10.00");
    assert_eq!(api.invocations(), 1, "one origin request for the crowd");

    let (status, _, body) = api
        .handle(request("GET", vec![("if-none-match", etag.clone())], ""))
        .await;
    assert_eq!((status.as_u16(), body.len()), (304, 0));
    assert_eq!(
        api.invocations(),
        1,
        "the edge answered the conditional read"
    );

    let seller = system_tests::token("vendor", "seller-1", Some(&vendor));
    let (status, _, body) = api
        .handle(request(
            "PATCH",
            vec![
                ("authorization", seller.clone()),
                ("content-type", "application/json".into()),
                ("if-match", etag.clone()),
                ("idempotency-key", "edge-patch-1".into()),
            ],
            r#"{"price": {"amount": "12.50", "currency": "EUR"}}"#,
        ))
        .await;
    assert_eq!(status.as_u16(), 200, "{}", String::from_utf8_lossy(&body));
    let (status, headers, body) = api
        .handle(request("GET", vec![("authorization", seller)], ""))
        .await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(
        header(&headers, "cache-control").as_deref(),
        Some("private, no-store")
    );
    let fresh: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (fresh["version"].as_u64(), fresh["price"]["amount"].as_str()),
        (Some(2), Some("12.50"))
    );
    // The anonymous copy is the edge's until its max-age runs out.
    let (_, headers, body) = api.handle(request("GET", vec![], "")).await;
    assert_eq!(
        header(&headers, "x-cache").as_deref(),
        Some("Hit from cloudfront")
    );
    let kept: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(kept["version"], 1);
    assert_eq!(api.invocations(), 3);
}

#[tokio::test]
async fn the_catalogue_refuses_filters_it_cannot_read() {
    let cloud = TestCloud::new().await;
    for (query, field) in [
        (("minPrice", "abc"), "query/minPrice"),
        (("minFreshness", "101"), "query/minFreshness"),
        (("sort", "cheapest"), "query/sort"),
    ] {
        let answer = cloud
            .send(fixture("list-bouquets").query(query.0, query.1))
            .await;
        assert_eq!(
            (answer.status, answer.body["errors"][0]["field"].as_str()),
            (400, Some(field)),
            "{}",
            answer.body
        );
    }
}

#[tokio::test]
async fn the_catalogue_reads_freshest_first_as_the_vases_scored_it_and_by_price() {
    let cloud = TestCloud::new().await;
    let (vendor, a, b, unscored) = cloud.scored_shop().await;
    let read = |sort: &'static str, limit: &'static str, cursor: Option<String>| {
        let mut request = ApiRequest::fixture("list-bouquets")
            .query("sort", sort)
            .query("limit", limit);
        if let Some(cursor) = cursor {
            request = request.query("cursor", &cursor);
        }
        cloud.call("list-bouquets", request)
    };
    cloud.calls.reset();
    let first = read("freshness", "2", None).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        cloud.calls.by_operation(),
        one_page_read(),
        "a sorted page costs what the newest does: a Query per shard, and the shop names"
    );
    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["bouquetId"].as_str().unwrap().to_owned())
            .collect()
    };
    let scores: Vec<Value> = first.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["freshness"].clone())
        .collect();
    assert_eq!(scores, [100, 85]);
    assert_eq!(ids(&first.body), [b.clone(), a.clone()]);
    let cursor = first.body["nextCursor"].as_str().unwrap().to_owned();
    let second = read("freshness", "2", Some(cursor.clone())).await;
    assert_eq!(
        ids(&second.body),
        std::slice::from_ref(&unscored),
        "the unscored last"
    );
    assert!(second.body["nextCursor"].is_null());
    // Newest first by default; a cursor of one order is refused by the other.
    let newest = read("newest", "5", None).await;
    assert_eq!(ids(&newest.body), [unscored, b, a]);
    let crossed = read("newest", "2", Some(cursor)).await;
    assert_eq!(
        (crossed.status, crossed.body["errors"][0]["field"].as_str()),
        (400, Some("cursor"))
    );
    // By price, either way (5.00 and the two in vases at their fixture price).
    cloud.calls.reset();
    let cheapest = read("price", "5", None).await;
    assert_eq!(
        cloud.calls.by_operation().get("Query"),
        Some(&(bouquet_app::store::CATALOGUE_SHARDS as usize))
    );
    let dearest = read("-price", "5", None).await;
    assert_eq!(
        (cheapest.status, dearest.status),
        (200, 200),
        "{}",
        cheapest.body
    );
    let prices = |page: &Value| -> Vec<i64> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (b["price"]["amount"]
                    .as_str()
                    .unwrap()
                    .parse::<f64>()
                    .unwrap()
                    * 100.0) as i64
            })
            .collect()
    };
    let mut ascending = prices(&cheapest.body);
    assert_eq!(ascending.len(), 3);
    assert!(ascending.windows(2).all(|w| w[0] <= w[1]), "{ascending:?}");
    ascending.reverse();
    assert_eq!(prices(&dearest.body), ascending);
    let mut backwards = ids(&cheapest.body);
    backwards.reverse();
    assert_eq!(ids(&dearest.body), backwards, "one order, read either way");
    // One shop's page is newest first only.
    let shop_sorted = cloud
        .send(
            fixture("list-bouquets")
                .query("vendorId", &vendor)
                .query("sort", "freshness"),
        )
        .await;
    assert_eq!(
        (
            shop_sorted.status,
            shop_sorted.body["errors"][0]["field"].as_str()
        ),
        (400, Some("query/sort"))
    );
}

/// Issue 54: `?postcode=&country=&date=` lists only the bouquets of shops that deliver there
/// that day, each with its delivery fee there; the three go together.
#[tokio::test]
async fn the_catalogue_lists_only_what_reaches_the_door_on_the_day_with_its_fee() {
    let cloud = TestCloud::new().await;
    let (paris, lyon) = (cloud.vendor("Paris").await, cloud.vendor("Lyon").await);
    for (shop, prefix, fee) in [(&paris, "75", "4.00"), (&lyon, "69", "6.50")] {
        let settings = json!({"countries": ["FR"], "postcodePrefixes": [prefix],
            "days": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday"],
            "horizonDays": 14, "sameDayCutoff": "11:00", "timeZone": "Europe/Paris",
            "fees": {"standard": fee}});
        let saved = cloud
            .call(
                "put-delivery-settings",
                ApiRequest::fixture("put-delivery-settings")
                    .own_shop(shop)
                    .json(settings),
            )
            .await;
        assert_eq!(saved.status, 200, "{}", saved.body);
    }
    let [in_paris] = cloud.bouquets(&paris, ["30.00"]).await;
    let [in_lyon] = cloud.bouquets(&lyon, ["25.00"]).await;
    let listed = |postcode: &'static str, date: &'static str| {
        cloud.call(
            "list-bouquets",
            ApiRequest::fixture("list-bouquets")
                .query("postcode", postcode)
                .query("country", "fr")
                .query("date", date),
        )
    };
    // Thursday 2026-12-03, the day after T0: Lyon's bouquet only, at Lyon's fee.
    let lyon_thursday = listed("69003", "2026-12-03").await;
    assert_eq!(lyon_thursday.status, 200, "{}", lyon_thursday.body);
    let items = lyon_thursday.body["items"].as_array().expect("items");
    let ids: Vec<&str> = items
        .iter()
        .filter_map(|b| b["bouquetId"].as_str())
        .collect();
    assert!(
        ids.contains(&in_lyon.as_str()) && !ids.contains(&in_paris.as_str()),
        "{ids:?}"
    );
    assert!(
        items.iter().all(|b| b["deliveryFee"]["amount"] == "6.50"),
        "{items:?}"
    );
    // Sunday: neither shop delivers.
    let sunday = listed("69003", "2026-12-06").await;
    assert_eq!(sunday.body["items"], json!([]), "{}", sunday.body);
    // The three go together; a malformed one is named.
    let partial = cloud
        .send(fixture("list-bouquets").query("postcode", "69003"))
        .await;
    let fields: Vec<&str> = partial.body["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert_eq!(
        (partial.status, fields),
        (400, vec!["query/country", "query/date"])
    );
    let bad_date = listed("69003", "03/12/2026").await;
    assert_eq!(
        bad_date.body["errors"][0]["field"], "query/date",
        "{}",
        bad_date.body
    );
}
