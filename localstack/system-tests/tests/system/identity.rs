//! Identity end to end on the emulator's Cognito (the template's own pool, per test): a
//! customer signs up and orders with the pool's ID token, validated against the pool's JWKS
//! by the local API Gateway; an administrator makes a user a vendor's member; nobody grants
//! themselves a role or a shop.

use std::sync::Arc;

use serde_json::json;

use system_tests::http_client::{send, HttpReply};
use system_tests::identity::TestPool;
use system_tests::{token, TestCloud};

async fn vendor_with_bouquet(api: std::net::SocketAddr) -> (String, String) {
    let admin = token("admin", "admin-1", None);
    let vendor = send(
        api,
        "POST",
        "/v1/vendors",
        &[("authorization", &admin)],
        Some(&json!({ "name": "Bloom" })),
    )
    .await;
    assert_eq!(vendor.status, 201, "{:?}", vendor.body);
    let vendor_id = vendor.body["vendorId"].as_str().unwrap().to_owned();
    let seller = token("vendor", "seller-1", Some(&vendor_id));
    let listed = send(
        api,
        "POST",
        &format!("/v1/vendors/{vendor_id}/bouquets"),
        &[("authorization", &seller)],
        Some(&json!({ "name": "Peonies", "price": { "amount": "34.90", "currency": "EUR" } })),
    )
    .await;
    assert_eq!(listed.status, 201, "{:?}", listed.body);
    (
        vendor_id,
        listed.body["bouquetId"].as_str().unwrap().to_owned(),
    )
}

async fn add_member(
    api: std::net::SocketAddr,
    bearer: &str,
    vendor_id: &str,
    email: &str,
) -> HttpReply {
    send(
        api,
        "POST",
        &format!("/v1/vendors/{vendor_id}/members"),
        &[("authorization", bearer)],
        Some(&json!({ "email": email })),
    )
    .await
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

    pool.sign_up("alice@example.com", &[])
        .await
        .expect("anyone signs up");
    pool.confirm("alice@example.com").await;
    let (id_token, access_token) = pool.sign_in("alice@example.com").await;
    assert_eq!(claim(&id_token, "token_use").as_deref(), Some("id"));
    assert_eq!(claim(&id_token, "iss"), Some(pool.pool.issuer.clone()));
    let alice = format!("Bearer {id_token}");

    let cart = send(
        api,
        "PUT",
        &format!("/v1/cart/items/{bouquet}"),
        &[("authorization", &alice)],
        None,
    )
    .await;
    assert_eq!(cart.status, 200, "{:?}", cart.body);
    let order = send(
        api,
        "POST",
        "/v1/orders",
        &[("authorization", &alice), ("idempotency-key", "k1")],
        None,
    )
    .await;
    assert_eq!(
        (order.status, order.body["status"].as_str()),
        (201, Some("reserved")),
        "{:?}",
        order.body
    );
    // The order is the pool user's: its customer is the token's sub.
    assert_eq!(
        order.body["customerId"].as_str().map(str::to_owned),
        claim(&id_token, "sub")
    );

    // A customer is not a vendor; an access token (no custom attributes) is not accepted.
    let vases = send(
        api,
        "GET",
        &format!("/v1/vendors/{vendor_id}/vases"),
        &[("authorization", &alice)],
        None,
    )
    .await;
    assert_eq!((vases.status, vases.code()), (403, Some("auth.forbidden")));
    let access = send(
        api,
        "GET",
        "/v1/cart",
        &[("authorization", &format!("Bearer {access_token}"))],
        None,
    )
    .await;
    assert_eq!(access.status, 401, "{:?}", access.body);
    // A token of another pool (same keys on the emulator, other issuer) is refused.
    let other = TestPool::new().await;
    other.sign_up("mallory@example.com", &[]).await.unwrap();
    other.confirm("mallory@example.com").await;
    let (foreign, _) = other.sign_in("mallory@example.com").await;
    let refused = send(
        api,
        "GET",
        "/v1/cart",
        &[("authorization", &format!("Bearer {foreign}"))],
        None,
    )
    .await;
    assert_eq!(refused.status, 401);
}

#[tokio::test]
async fn an_admin_makes_a_user_a_vendors_member_and_nobody_grants_it_to_themselves() {
    let mut cloud = TestCloud::new().await;
    let pool = TestPool::new().await;
    cloud.directory = Arc::new(pool.directory());
    let (api, _) = cloud.local_api_trusting(Some(&pool.pool)).await;
    let (vendor_id, _) = vendor_with_bouquet(api).await;
    let (other_vendor, _) = vendor_with_bouquet(api).await;

    // Signing up with a shop, or setting one later, is refused by the app client.
    let forged = pool
        .sign_up("eve@example.com", &[("custom:vendorId", &vendor_id)])
        .await;
    assert!(forged.unwrap_err().contains("NotAuthorizedException"));
    pool.sign_up("flo@example.com", &[]).await.unwrap();
    pool.confirm("flo@example.com").await;
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
    pool.sign_up("ops@example.com", &[]).await.unwrap();
    pool.confirm("ops@example.com").await;
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
    let own = send(
        api,
        "GET",
        &format!("/v1/vendors/{vendor_id}/vases"),
        &[("authorization", &flo)],
        None,
    )
    .await;
    assert_eq!(own.status, 200, "{:?}", own.body);
    let theirs = send(
        api,
        "GET",
        &format!("/v1/vendors/{other_vendor}/vases"),
        &[("authorization", &flo)],
        None,
    )
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
    assert_eq!(
        (moved.status, moved.code()),
        (409, Some("member.other_vendor"))
    );
    assert!(pool
        .user("flo@example.com")
        .await
        .0
        .contains(&("custom:vendorId".into(), vendor_id.clone())));

    // Someone without an account is invited: 201, a verified email, the shop and the group.
    let invited = add_member(api, &ops, &vendor_id, "new.florist@Example.com").await;
    assert_eq!(
        (invited.status, invited.body["status"].as_str()),
        (201, Some("invited")),
        "{:?}",
        invited.body
    );
    let (attributes, groups) = pool.user("new.florist@example.com").await;
    assert!(attributes.contains(&("email_verified".into(), "true".into())));
    assert!(attributes.contains(&("custom:vendorId".into(), vendor_id.clone())));
    assert_eq!(groups, vec!["vendor".to_owned()]);

    // Refusals change nothing in the pool.
    let users_before = pool
        .client
        .list_users()
        .user_pool_id(&pool.pool.id)
        .send()
        .await
        .unwrap()
        .users()
        .len();
    let customer = format!("Bearer {}", {
        pool.sign_up("carl@example.com", &[]).await.unwrap();
        pool.confirm("carl@example.com").await;
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
            (refused.status, refused.code()),
            (status, Some(code)),
            "{why}: {:?}",
            refused.body
        );
    }
    let users_after = pool
        .client
        .list_users()
        .user_pool_id(&pool.pool.id)
        .send()
        .await
        .unwrap()
        .users()
        .len();
    assert_eq!(users_after, users_before + 1, "only carl signed up");
}

#[tokio::test]
async fn concurrent_invitations_of_one_email_make_one_user() {
    let mut cloud = TestCloud::new().await;
    let pool = TestPool::new().await;
    cloud.directory = Arc::new(pool.directory());
    let (api, _) = cloud.local_api_trusting(Some(&pool.pool)).await;
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
    let users = pool
        .client
        .list_users()
        .user_pool_id(&pool.pool.id)
        .send()
        .await
        .unwrap();
    assert_eq!(users.users().len(), 1);
    assert_eq!(
        pool.user("rush@example.com").await.1,
        vec!["vendor".to_owned()]
    );
}
