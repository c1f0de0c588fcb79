//! Identity end to end on the emulator's Cognito (the template's own pool, per test): a
//! customer signs up and orders with the pool's ID token, validated against the pool's JWKS
//! by the local API Gateway; an administrator makes a user a vendor's member; nobody grants
//! themselves a role or a shop.

use std::sync::Arc;

use serde_json::json;

use bouquet_app::directory::{DirectoryError, DirectoryUser, UserDirectory};

use system_tests::http_client::HttpReply;
use system_tests::identity::TestPool;
use system_tests::{
    bearer, list_over_http, reserve_cart_over_http, token, vendor_over_http, Outcome, TestCloud,
};

async fn vendor_with_bouquet(api: std::net::SocketAddr) -> (String, String) {
    let (vendor_id, seller) = vendor_over_http(api, "Bloom").await;
    let listed = list_over_http(api, &seller, &vendor_id, "Peonies", "34.90").await;
    assert_eq!(listed.status, 201, "{:?}", listed.body);
    (
        vendor_id,
        listed.body["bouquetId"].as_str().unwrap().to_owned(),
    )
}

async fn add_member(
    api: std::net::SocketAddr,
    authorization: &str,
    vendor_id: &str,
    email: &str,
) -> HttpReply {
    bearer(api, authorization)
        .post(
            &format!("/v1/vendors/{vendor_id}/members"),
            &json!({ "email": email }),
        )
        .await
}

/// This test's cloud with `pool` as its directory, and its local API trusting the pool's ID
/// tokens.
async fn cloud_with_pool() -> (TestCloud, TestPool, std::net::SocketAddr) {
    let mut cloud = TestCloud::new().await;
    let pool = TestPool::new().await;
    cloud.directory = Arc::new(pool.directory());
    let (api, _) = cloud.local_api_trusting(Some(&pool.pool)).await;
    (cloud, pool, api)
}

/// How many users `pool` has.
async fn pool_users(pool: &TestPool) -> usize {
    let users = pool.client.list_users().user_pool_id(&pool.pool.id);
    users.send().await.unwrap().users().len()
}

/// Signs `email` up to `pool` (no attributes) and confirms it, as its owner does.
async fn confirmed(pool: &TestPool, email: &str) {
    pool.sign_up(email, &[]).await.unwrap();
    pool.confirm(email).await;
}

fn claim(token: &str, name: &str) -> Option<String> {
    let claims: serde_json::Value =
        jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(token)
            .unwrap()
            .claims;
    claims.get(name).map(|v| {
        v.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string())
    })
}

#[tokio::test]
async fn a_customer_signs_up_and_orders_with_the_pools_id_token() {
    let cloud = TestCloud::new().await;
    let pool = TestPool::new().await;
    let (api, _) = cloud.local_api_trusting(Some(&pool.pool)).await;
    let (vendor_id, bouquet) = vendor_with_bouquet(api).await;
    let seller = token("vendor", "seller-1", Some(&vendor_id));
    cloud
        .onboard_payouts_over_http(api, &seller, &vendor_id)
        .await;

    pool.sign_up("alice@example.com", &[])
        .await
        .expect("anyone signs up");
    pool.confirm("alice@example.com").await;
    let (id_token, access_token) = pool.sign_in("alice@example.com").await;
    assert_eq!(claim(&id_token, "token_use").as_deref(), Some("id"));
    assert_eq!(claim(&id_token, "iss"), Some(pool.pool.issuer.clone()));
    let alice = format!("Bearer {id_token}");

    let cart = bearer(api, &alice)
        .put(&format!("/v1/cart/items/{bouquet}"))
        .await;
    assert_eq!(cart.status, 200, "{:?}", cart.body);
    let order = reserve_cart_over_http(api, &alice, "k1").await;
    // The order is the pool user's: its customer is the token's sub.
    assert_eq!(
        order.body["customerId"].as_str().map(str::to_owned),
        claim(&id_token, "sub")
    );

    // A customer is not a vendor; an access token (no custom attributes) is not accepted.
    let vases = bearer(api, &alice)
        .get(&format!("/v1/vendors/{vendor_id}/vases"))
        .await;
    assert_eq!(vases.status_and_code(), (403, Some("auth.forbidden")));
    let access = bearer(api, &format!("Bearer {access_token}"))
        .get("/v1/cart")
        .await;
    assert_eq!(access.status, 401, "{:?}", access.body);
    // A token of another pool (same keys on the emulator, other issuer) is refused.
    let other = TestPool::new().await;
    confirmed(&other, "mallory@example.com").await;
    let (foreign, _) = other.sign_in("mallory@example.com").await;
    let refused = bearer(api, &format!("Bearer {foreign}"))
        .get("/v1/cart")
        .await;
    assert_eq!(refused.status, 401);
}

#[tokio::test]
async fn an_admin_makes_a_user_a_vendors_member_and_nobody_grants_it_to_themselves() {
    let (_cloud, pool, api) = cloud_with_pool().await;
    let (vendor_id, _) = vendor_with_bouquet(api).await;
    let (other_vendor, _) = vendor_with_bouquet(api).await;

    // Signing up with a shop, or setting one later, is refused by the app client.
    let forged = pool
        .sign_up("eve@example.com", &[("custom:vendorId", &vendor_id)])
        .await;
    assert!(forged.unwrap_err().contains("NotAuthorizedException"));
    confirmed(&pool, "flo@example.com").await;
    let (_, access) = pool.sign_in("flo@example.com").await;
    let self_promotion = pool
        .client
        .update_user_attributes()
        .access_token(access)
        .user_attributes(
            aws_sdk_cognitoidentityprovider::types::AttributeType::builder()
                .name("custom:vendorId")
                .value(&vendor_id)
                .build()
                .unwrap(),
        )
        .send()
        .await;
    assert!(self_promotion.is_err(), "a user set their own shop");
    assert_eq!(pool.user("flo@example.com").await.1, Vec::<String>::new());

    // An administrator of the pool (group admin) makes Flo a member: 200, updated.
    confirmed(&pool, "ops@example.com").await;
    pool.client
        .admin_add_user_to_group()
        .user_pool_id(&pool.pool.id)
        .username("ops@example.com")
        .group_name("admin")
        .send()
        .await
        .unwrap();
    let ops = format!("Bearer {}", pool.sign_in("ops@example.com").await.0);
    let added = add_member(api, &ops, &vendor_id, "flo@example.com").await;
    assert_eq!(added.status, 200, "{:?}", added.body);
    let (attributes, groups) = pool.user("flo@example.com").await;
    let sub = attributes
        .iter()
        .find(|(k, _)| k == "sub")
        .unwrap()
        .1
        .clone();
    assert_eq!(
        added.body,
        json!({ "email": "flo@example.com", "userId": sub, "vendorId": vendor_id, "role": "vendor", "status": "updated" })
    );
    assert!(attributes.contains(&("custom:vendorId".into(), vendor_id.clone())));
    assert_eq!(groups, vec!["vendor".to_owned()]);
    // Flo's next ID token makes her the shop's vendor, and only that shop's.
    let flo = format!("Bearer {}", pool.sign_in("flo@example.com").await.0);
    let own = bearer(api, &flo)
        .get(&format!("/v1/vendors/{vendor_id}/vases"))
        .await;
    assert_eq!(own.status, 200, "{:?}", own.body);
    let theirs = bearer(api, &flo)
        .get(&format!("/v1/vendors/{other_vendor}/vases"))
        .await;
    assert_eq!(theirs.status, 403);
    // Again: nothing changes (200). Another shop: 409, and she stays where she is.
    assert_eq!(
        add_member(api, &ops, &vendor_id, "flo@example.com")
            .await
            .status,
        200
    );
    let moved = add_member(api, &ops, &other_vendor, "flo@example.com").await;
    assert_eq!(moved.status_and_code(), (409, Some("member.other_vendor")));
    assert!(pool
        .user("flo@example.com")
        .await
        .0
        .contains(&("custom:vendorId".into(), vendor_id.clone())));

    // Someone without an account is invited: 201, a verified email, the shop and the group.
    let invited = add_member(api, &ops, &vendor_id, "new.florist@Example.com").await;
    invited.assert_state(201, "invited");
    let (attributes, groups) = pool.user("new.florist@example.com").await;
    assert!(attributes.contains(&("email_verified".into(), "true".into())));
    assert!(attributes.contains(&("custom:vendorId".into(), vendor_id.clone())));
    assert_eq!(groups, vec!["vendor".to_owned()]);

    // Refusals change nothing in the pool.
    let users_before = pool_users(&pool).await;
    let customer = format!("Bearer {}", {
        confirmed(&pool, "carl@example.com").await;
        pool.sign_in("carl@example.com").await.0
    });
    for (why, bearer, vendor, email, status, code) in [
        (
            "a customer",
            customer.as_str(),
            vendor_id.as_str(),
            "x@example.com",
            403,
            "auth.forbidden",
        ),
        (
            "a vendor",
            flo.as_str(),
            vendor_id.as_str(),
            "x@example.com",
            403,
            "auth.forbidden",
        ),
        (
            "no such vendor",
            ops.as_str(),
            "01JF0000000000000000000000",
            "x@example.com",
            404,
            "not_found",
        ),
        (
            "not an email",
            ops.as_str(),
            vendor_id.as_str(),
            "x@",
            400,
            "request.invalid",
        ),
        (
            "a malformed vendor id",
            ops.as_str(),
            "nope",
            "x@example.com",
            400,
            "request.invalid",
        ),
    ] {
        let refused = add_member(api, bearer, vendor, email).await;
        assert_eq!(
            refused.status_and_code(),
            (status, Some(code)),
            "{why}: {:?}",
            refused.body
        );
    }
    let users_after = pool_users(&pool).await;
    assert_eq!(users_after, users_before + 1, "only carl signed up");
}

#[tokio::test]
async fn concurrent_invitations_of_one_email_make_one_user() {
    let (_cloud, pool, api) = cloud_with_pool().await;
    let (vendor_id, _) = vendor_with_bouquet(api).await;
    let admin = token("admin", "admin-1", None);
    let answers = futures::future::join_all(
        (0..8).map(|_| add_member(api, &admin, &vendor_id, "rush@example.com")),
    )
    .await;
    let mut statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    statuses.sort();
    assert_eq!(
        statuses,
        vec![200, 200, 200, 200, 200, 200, 200, 201],
        "{answers:?}"
    );
    assert_eq!(pool_users(&pool).await, 1);
    assert_eq!(
        pool.user("rush@example.com").await.1,
        vec!["vendor".to_owned()]
    );
}

#[tokio::test]
async fn two_shops_racing_for_one_user_get_one_member_and_one_409() {
    let (_cloud, pool, api) = cloud_with_pool().await;
    let (shop_a, _) = vendor_with_bouquet(api).await;
    let (shop_b, _) = vendor_with_bouquet(api).await;
    confirmed(&pool, "both@example.com").await;
    let admin = token("admin", "admin-1", None);
    for round in 0..4 {
        let email = format!("race{round}@example.com");
        confirmed(&pool, &email).await;
        let (a, b) = tokio::join!(
            add_member(api, &admin, &shop_a, &email),
            add_member(api, &admin, &shop_b, &email)
        );
        let mut statuses = [a.status, b.status];
        statuses.sort();
        assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
        let winner = if a.status == 200 { &shop_a } else { &shop_b };
        let (attributes, groups) = pool.user(&email).await;
        assert!(
            attributes.contains(&("custom:vendorId".into(), winner.clone())),
            "the 200's shop is the user's shop: {attributes:?}"
        );
        assert_eq!(groups, vec!["vendor".to_owned()]);
    }
}

#[tokio::test]
async fn an_address_nobody_has_confirmed_names_no_member() {
    let (cloud, pool, api) = cloud_with_pool().await;
    let (shop, _) = vendor_with_bouquet(api).await;
    // Someone signs up with the florist's address but never enters the emailed code.
    pool.sign_up("florist@example.com", &[]).await.unwrap();
    let items_before = cloud.items().await.len();
    let refused = add_member(
        api,
        &token("admin", "admin-1", None),
        &shop,
        "florist@example.com",
    )
    .await;
    refused.assert_code(409, "member.unverified");
    let (attributes, groups) = pool.user("florist@example.com").await;
    assert!(!attributes.iter().any(|(k, _)| k == "custom:vendorId"));
    assert!(groups.is_empty());
    assert_eq!(
        cloud.items().await.len(),
        items_before,
        "no claim was written"
    );
}

/// A directory that fails `add_to_group` the first `failures` times (a call cut off there).
struct Flaky {
    inner: bouquet_app::directory::MemoryDirectory,
    failures: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl UserDirectory for Flaky {
    async fn find(&self, email: &str) -> Result<Option<DirectoryUser>, DirectoryError> {
        self.inner.find(email).await
    }
    async fn invite(&self, email: &str, vendor_id: &str) -> Result<DirectoryUser, DirectoryError> {
        self.inner.invite(email, vendor_id).await
    }
    async fn set_vendor(&self, username: &str, vendor_id: &str) -> Result<(), DirectoryError> {
        self.inner.set_vendor(username, vendor_id).await
    }
    async fn add_to_group(&self, username: &str, group: &str) -> Result<(), DirectoryError> {
        let left = self.failures.load(std::sync::atomic::Ordering::SeqCst);
        if left > 0 {
            self.failures
                .store(left - 1, std::sync::atomic::Ordering::SeqCst);
            return Err(DirectoryError::Unavailable("cut off".into()));
        }
        self.inner.add_to_group(username, group).await
    }
}

#[tokio::test]
async fn an_invitation_cut_off_before_the_group_grants_nothing_and_a_retry_finishes_it() {
    let mut cloud = TestCloud::new().await;
    let flaky = Arc::new(Flaky {
        inner: Default::default(),
        failures: 1.into(),
    });
    cloud.directory = flaky.clone();
    let (api, _) = cloud.local_api().await;
    let (shop, _) = vendor_with_bouquet(api).await;
    let admin = token("admin", "admin-1", None);
    let first = add_member(api, &admin, &shop, "new@example.com").await;
    assert_eq!(first.status, 500, "{:?}", first.body);
    // Invited, with the shop, but in no group: tokens say customer.
    assert_eq!(
        flaky.inner.invited.lock().unwrap().clone(),
        vec!["new@example.com".to_owned()]
    );
    assert!(flaky.inner.groups("new@example.com").is_empty());
    let retry = add_member(api, &admin, &shop, "new@example.com").await;
    retry.assert_state(200, "updated");
    assert_eq!(
        flaky.inner.groups("new@example.com"),
        vec!["vendor".to_owned()]
    );
    assert_eq!(flaky.inner.invited.lock().unwrap().len(), 1, "invited once");
}
