//! Reading orders: a customer sees its own, a vendor its shop's; pagination.

use system_tests::{by_customer, by_vendor, fixture, PathParams, TestCloud};

#[tokio::test]
async fn customers_and_vendors_see_their_own_orders() {
    let cloud = TestCloud::new().await;
    let (v1, v2) = (cloud.vendor("Bloom").await, cloud.vendor("Petal").await);
    let mut mine = Vec::new();
    for _ in 0..3 {
        let b = cloud.bouquet(&v1, "10.00").await;
        mine.push(cloud.reserved_order_id("customer-1", &[&b]).await);
    }
    let other = cloud.bouquet(&v2, "10.00").await;
    let theirs = cloud.reserved_order_id("customer-2", &[&other]).await;

    let page1 = cloud
        .send(by_customer("list-orders", "customer-1").query("limit", "2"))
        .await;
    assert_eq!(page1.status, 200);
    let cursor = page1.body["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let page2 = cloud
        .send(
            by_customer("list-orders", "customer-1")
                .query("limit", "2")
                .query("cursor", &cursor),
        )
        .await;
    let ids: Vec<String> = [&page1, &page2]
        .iter()
        .flat_map(|p| {
            p.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["orderId"].as_str().unwrap().to_owned())
        })
        .collect();
    let newest_first: Vec<String> = mine.iter().rev().cloned().collect();
    assert_eq!(ids, newest_first);
    assert!(page2.body["nextCursor"].is_null());

    let vendor_view = cloud.send(by_vendor("list-orders", &v2)).await;
    let vendor_ids: Vec<&str> = vendor_view.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["orderId"].as_str().unwrap())
        .collect();
    assert_eq!(vendor_ids, [theirs.as_str()]);
    let by_vendor = cloud
        .send(by_vendor("get-order", &v2).order_id(&theirs))
        .await;
    assert_eq!(by_vendor.status, 200);
    let admin = cloud.send(fixture("list-orders").admin()).await;
    assert_eq!(admin.status, 403);
}
