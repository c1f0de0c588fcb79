use aws_sdk_dynamodb::types::AttributeValue;
use bouquet_app::bouquets::CatalogueScope;
use bouquet_app::domain::OrderStatus;
use bouquet_app::maintenance::backfill_index_keys;
use bouquet_app::store::CatalogueSort;

use crate::support::*;

/// Takes `attributes` off the item, as an item written before they existed lacks them.
async fn written_before(world: &World, pk: String, sk: &str, attributes: &str) {
    world
        .dynamodb
        .update_item()
        .table_name(&world.table)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .update_expression(format!("REMOVE {attributes}"))
        .send()
        .await
        .unwrap();
}

fn far_off() -> tokio::time::Instant {
    tokio::time::Instant::now() + std::time::Duration::from_secs(60)
}

#[tokio::test]
async fn a_backfill_gives_items_from_before_an_upgrade_their_index_keys_once() {
    let world = World::new().await;
    let shop = world.vendor().await;
    let (old, new) = (world.bouquet_of(&shop).await, world.bouquet_of(&shop).await);
    let order = world.reserved(&customer("ana"), &[&new]).await;
    written_before(
        &world,
        format!("BOUQUET#{}", old.bouquet_id),
        "BOUQUET",
        "freshnessSort, priceSort",
    )
    .await;
    written_before(
        &world,
        format!("VENDOR#{}", shop.vendor_id),
        "VENDOR",
        "vendorKey, vendorSort",
    )
    .await;
    written_before(
        &world,
        format!("ORDER#{}", order.order_id),
        "ORDER",
        "vendorStatusKey, vendorStatusSort",
    )
    .await;
    let by_price = || async {
        world
            .catalogue_page(CatalogueScope::All(CatalogueSort::PriceLowest))
            .await
            .items
            .into_iter()
            .map(|b| b.bouquet_id)
            .collect::<Vec<_>>()
    };
    assert!(
        !by_price().await.contains(&old.bouquet_id),
        "missing before"
    );
    let shops = world.app.store.vendors(None, 10).await.unwrap();
    assert!(
        shops.items.is_empty(),
        "the shop is missing from the list before"
    );

    let report = backfill_index_keys(&world.app, None, far_off())
        .await
        .unwrap();
    assert_eq!((report.lacking, report.rewritten, report.moved), (3, 3, 0));
    assert_eq!(report.next_cursor, None);
    assert!(by_price().await.contains(&old.bouquet_id));
    let shops = world.app.store.vendors(None, 10).await.unwrap();
    assert_eq!(shops.items.len(), 1);
    let open = world
        .app
        .store
        .vendor_orders_by_state(shop.vendor_id, &[OrderStatus::Reserved], None, None, 10)
        .await
        .unwrap();
    let ids: Vec<_> = open.items.iter().map(|o| o.order_id).collect();
    assert_eq!(ids, [order.order_id], "in the florist's board again");

    let again = backfill_index_keys(&world.app, None, far_off())
        .await
        .unwrap();
    assert_eq!((again.lacking, again.rewritten), (0, 0), "nothing left");
}
