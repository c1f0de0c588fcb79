//! The administrators' shops (issue 31): every shop listed without a Scan, and a suspension
//! that takes a shop's bouquets off the catalogue and off sale while its open orders go on,
//! undone by a reinstatement; both idempotent, both announced.

use serde_json::json;

use bouquet_app::shops::ShopStanding;
use system_tests::in_process::HTTP_FUNCTIONS;
use system_tests::{fixture, ApiRequest, Outcome, PathParams, TestCloud};

async fn in_catalogue(cloud: &TestCloud, vendor: &str) -> Vec<String> {
    let page = cloud
        .send(fixture("list-bouquets").query("vendorId", vendor))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bouquetId"].as_str().unwrap().to_owned())
        .collect()
}

async fn set_suspended(
    cloud: &TestCloud,
    vendor: &str,
    suspended: bool,
) -> system_tests::ApiResponse {
    let binary = if suspended {
        "suspend-vendor"
    } else {
        "reinstate-vendor"
    };
    cloud.send(fixture(binary).admin().vendor_id(vendor)).await
}

#[tokio::test]
async fn a_suspended_shop_leaves_the_catalogue_and_its_open_orders_go_on() {
    let cloud = TestCloud::new().await;
    let shop = cloud.vendor("Bloom").await;
    let other = cloud.vendor("Thorn").await;
    let (kept, held, spare) = (
        cloud.bouquet(&shop, "10.00").await,
        cloud.bouquet(&shop, "12.00").await,
        cloud.bouquet(&shop, "14.00").await,
    );
    let elsewhere = cloud.bouquet(&other, "9.00").await;
    // An order placed before the suspension.
    let order = cloud.reserve("ana", &[&held]).await;
    assert_eq!(order.status, 201, "{}", order.body);
    let order_id = order.body["orderId"].as_str().unwrap().to_owned();

    // Only an administrator suspends.
    let vendor_try = cloud.send(fixture("suspend-vendor").own_shop(&shop)).await;
    assert_eq!(vendor_try.status, 403);
    let suspended = set_suspended(&cloud, &shop, true).await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    assert!(suspended.body["vendor"]["suspendedAt"].is_string());
    assert_eq!(
        suspended.body["bouquetsMoved"], 3,
        "every bouquet of the shop"
    );

    assert_eq!(in_catalogue(&cloud, &shop).await, Vec::<String>::new());
    let everyone = cloud
        .send(fixture("list-bouquets").query("limit", "100"))
        .await;
    let listed = everyone.body["items"].to_string();
    assert!(
        !listed.contains(&kept) && !listed.contains(&spare),
        "off the catalogue"
    );
    assert!(listed.contains(&elsewhere), "other shops are not touched");
    // Not for sale, not changeable, nothing new listed.
    let refused = cloud.reserve("ben", &[&kept]).await;
    assert_eq!(
        refused.status_and_code(),
        (409, Some("bouquet.unavailable"))
    );
    let one = cloud.send(fixture("get-bouquet").bouquet_id(&kept)).await;
    assert_eq!(one.body["suspended"], true);
    let listing = cloud
        .send(
            fixture("create-bouquet")
                .own_shop(&shop)
                .json(json!({"name": "Irises", "price": {"amount": "8.00", "currency": "EUR"}})),
        )
        .await;
    assert_eq!(listing.status_and_code(), (409, Some("vendor.suspended")));
    // The order placed before goes on: it is paid, and its bouquet sold.
    let paid = cloud.pay_by_card("ana", &order_id).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(cloud.bouquet_status(&held).await.as_deref(), Some("sold"));

    // Again: nothing more to do, no second event.
    let again = set_suspended(&cloud, &shop, true).await;
    assert_eq!(
        (again.status, again.body["bouquetsMoved"].as_u64()),
        (200, Some(0))
    );
    let names = cloud.event_names().await;
    assert_eq!(names.iter().filter(|n| *n == "VendorSuspended").count(), 1);

    // Reinstated: what was on sale is on sale again; the sold one stays sold.
    let back = set_suspended(&cloud, &shop, false).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert!(back.body["vendor"]["suspendedAt"].is_null());
    let mut listed_again = in_catalogue(&cloud, &shop).await;
    listed_again.sort();
    let mut expected = vec![kept.clone(), spare.clone()];
    expected.sort();
    assert_eq!(listed_again, expected);
    assert_eq!(cloud.bouquet_status(&held).await.as_deref(), Some("sold"));
    let reserved = cloud.reserve("ben", &[&kept]).await;
    assert_eq!(reserved.status, 201, "{}", reserved.body);
    let names = cloud.event_names().await;
    assert_eq!(names.iter().filter(|n| *n == "VendorReinstated").count(), 1);
}

#[tokio::test]
async fn administrators_list_every_shop_with_its_suspension() {
    let cloud = TestCloud::new().await;
    let first = cloud.vendor("Aster").await;
    let second = cloud.vendor("Briar").await;
    set_suspended(&cloud, &second, true).await;
    let page = cloud
        .send(fixture("list-vendors").admin().query("limit", "1"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["items"][0]["vendorId"], first.as_str());
    assert!(page.body["items"][0]["suspendedAt"].is_null());
    let cursor = page.body["nextCursor"].as_str().unwrap().to_owned();
    let next = cloud
        .send(
            fixture("list-vendors")
                .admin()
                .query("limit", "1")
                .query("cursor", &cursor),
        )
        .await;
    assert_eq!(next.body["items"][0]["vendorId"], second.as_str());
    assert!(next.body["items"][0]["suspendedAt"].is_string());
    for caller in [
        ApiRequest::fixture("list-vendors").vendor(&first),
        ApiRequest::fixture("list-vendors").customer("ana"),
    ] {
        assert_eq!(cloud.call("list-vendors", caller).await.status, 403);
    }
    assert_eq!(
        set_suspended(&cloud, "01JF0000000000000000000000", true)
            .await
            .status,
        404
    );
}

/// Issues 38 and 51: the pipeline refuses every write a suspended shop makes (409
/// `vendor.suspended`), on every write route the template declares (`HTTP_FUNCTIONS` is the
/// template's list: `template_consistency`), present and future, before the handler reads
/// anything of the request; only the routes that say they go on (its open orders' steps)
/// are let through, and its open orders go on.
#[tokio::test]
async fn a_suspended_shop_writes_nothing_on_any_route_and_its_orders_go_on() {
    let cloud = TestCloud::new().await;
    let shop = cloud.vendor("Bloom").await;
    let order = cloud.paid_order(&shop, "ana").await;
    let suspended = set_suspended(&cloud, &shop, true).await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let before = cloud.items().await.len();

    let mut refused = Vec::new();
    let mut let_through = Vec::new();
    for (binary, route, _) in HTTP_FUNCTIONS.iter().filter(|(_, r, _)| r.writes()) {
        let mut callers = vec![("its member", fixture(binary).vendor(&shop))];
        if route.standing == ShopStanding::ShopInPath {
            callers.push(("an administrator", fixture(binary).admin()));
        }
        for (who, request) in callers {
            let request = if route.path.contains("{vendorId}") {
                request.vendor_id(&shop)
            } else {
                request
            };
            let answer = cloud.call(binary, request).await;
            let code = answer.status_and_code();
            if route.standing == ShopStanding::OpenOrders {
                assert_ne!(code, (409, Some("vendor.suspended")), "{binary} goes on");
                let_through.push(*binary);
            } else {
                assert_eq!(
                    code,
                    (409, Some("vendor.suspended")),
                    "{binary} as {who}: {}",
                    answer.body
                );
                refused.push(*binary);
            }
        }
    }
    // The list is the template's, whole: every shop write of issue 38 and those it missed.
    for binary in [
        "create-bouquet",
        "update-bouquet",
        "withdraw-bouquet",
        "request-photo-upload",
        "register-vase",
        "rotate-vase-certificate",
        "decommission-vase",
        "put-delivery-settings",
        "add-vendor-member",
        "start-payout-onboarding",
        "answer-review",
    ] {
        assert!(refused.contains(&binary), "{binary} was not refused");
    }
    let_through.sort_unstable();
    assert_eq!(
        let_through,
        [
            "accept-order",
            "dispatch-order",
            "fulfil-order",
            "reject-order",
            "request-delivery-photo-upload"
        ]
    );
    assert_eq!(cloud.items().await.len(), before, "nothing was written");

    let vendor = |binary: &str| fixture(binary).vendor(&shop);
    // Its open order goes on: accepted, out for delivery, delivered.
    for binary in ["accept-order", "dispatch-order", "fulfil-order"] {
        let step = cloud.call(binary, vendor(binary).order_id(&order)).await;
        assert_eq!(step.status, 200, "{binary}: {}", step.body);
    }
}
