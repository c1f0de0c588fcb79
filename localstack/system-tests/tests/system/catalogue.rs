//! The public catalogue: sharded index, merged newest first, paginated without gaps or
//! repeats, showing only what is available now (expired holds included).

use std::collections::BTreeSet;
use std::time::Duration;

use system_tests::{ApiRequest, TestCloud};

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
        .call(
            "withdraw-bouquet",
            ApiRequest::fixture("withdraw-bouquet")
                .vendor(&v1)
                .path("bouquetId", &listed[2]),
        )
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
