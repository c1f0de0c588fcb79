use bouquet_app::queries::{self, QueryError};

use crate::support::*;

#[tokio::test]
async fn an_order_is_read_by_its_customer_its_vendor_and_an_admin_only() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let order = world.reserved(&customer("ana"), &[&bouquet]).await;
    let admin = admin_caller();
    for caller in [customer_caller("ana"), vendor_caller(&vendor), admin] {
        let read = queries::order(&world.app, &caller, order.order_id).await;
        assert!(
            matches!(read, Ok(ref o) if o.order_id == order.order_id),
            "{caller:?}: {read:?}"
        );
    }
    let others = [customer_caller("ben"), vendor_caller(&world.vendor().await)];
    for caller in others {
        let read = queries::order(&world.app, &caller, order.order_id).await;
        assert!(
            matches!(read, Err(QueryError::NotFound("order"))),
            "{caller:?}: {read:?}"
        );
    }
}

#[tokio::test]
async fn lists_are_the_callers_own() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    world.reserved(&customer("ana"), &[&bouquet]).await;
    // The first page of ten of `caller`'s orders, unfiltered.
    let orders_of = |caller: bouquet_app::domain::identity::Identity| {
        let app = world.app.clone();
        async move { queries::orders(&app, &caller, &Default::default(), None, 10).await }
    };
    let mine = orders_of(customer_caller("ana")).await.unwrap();
    let theirs = orders_of(customer_caller("ben")).await.unwrap();
    let shop = orders_of(vendor_caller(&vendor)).await.unwrap();
    assert_eq!(
        (mine.items.len(), theirs.items.len(), shop.items.len()),
        (1, 0, 1)
    );
    assert!(matches!(
        orders_of(admin_caller()).await,
        Err(QueryError::Forbidden(_))
    ));

    let vase = world.vase_of(&vendor).await;
    let vases = queries::vases(
        &world.app,
        &vendor_caller(&vendor),
        vendor.vendor_id,
        None,
        10,
    )
    .await
    .unwrap();
    assert_eq!(
        vases.items.iter().map(|v| v.vase_id).collect::<Vec<_>>(),
        vec![vase.vase_id]
    );
    let stranger = vendor_caller(&world.vendor().await);
    let refused = queries::vases(&world.app, &stranger, vendor.vendor_id, None, 10).await;
    assert_matches!(refused, Err(QueryError::Forbidden(_)));
    let hidden =
        queries::readings(&world.app, &stranger, vase.vase_id, world.now(), None, 10).await;
    assert_matches!(hidden, Err(QueryError::NotFound("vase")));
}
