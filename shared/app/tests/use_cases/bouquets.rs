use bouquet_app::bouquets::{self, BouquetError, CatalogueScope};
use bouquet_app::domain::bouquet::BouquetChange;
use bouquet_app::domain::identity::Identity;
use bouquet_app::domain::{Bouquet, BouquetId, BouquetStatus, Vendor};
use bouquet_app::store::CatalogueSort;
use bouquet_app::CatalogueIndexes;

use crate::support::*;

/// What `update-bouquet` does: who may change it first, then the change.
async fn change(
    world: &World,
    caller: &Identity,
    id: BouquetId,
    if_match: Option<u64>,
    change: BouquetChange,
) -> Result<Bouquet, BouquetError> {
    let read = bouquets::editable(&world.app, caller, id).await?;
    bouquets::change(&world.app, read, if_match, change, CORRELATION, world.now()).await
}

/// What `withdraw-bouquet` does.
async fn withdraw(
    world: &World,
    caller: &Identity,
    id: BouquetId,
    if_match: Option<u64>,
) -> Result<Bouquet, BouquetError> {
    let read = bouquets::editable(&world.app, caller, id).await?;
    bouquets::withdraw(&world.app, caller, read, if_match, CORRELATION, world.now()).await
}

fn new_price(amount: &str) -> BouquetChange {
    BouquetChange::validate(None, None, Some((amount, "EUR")), None, None).expect("a valid change")
}

#[tokio::test]
async fn its_vendor_changes_a_bouquet_at_the_version_it_saw() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let caller = vendor_caller(&vendor);
    let id = bouquet.bouquet_id;
    let needs_version = change(&world, &caller, id, None, new_price("30.00")).await;
    assert_matches!(needs_version, Err(BouquetError::VersionRequired));
    let changed = change(
        &world,
        &caller,
        id,
        Some(bouquet.version),
        new_price("30.00"),
    )
    .await
    .expect("changed");
    assert_eq!(
        (changed.price.minor(), changed.version),
        (3000, bouquet.version + 1)
    );
    // The version it saw is gone now: a second change at it is refused, nothing lost.
    let stale = change(
        &world,
        &caller,
        id,
        Some(bouquet.version),
        new_price("1.00"),
    )
    .await;
    assert_matches!(stale, Err(BouquetError::Changed));
    assert_eq!(world.bouquet_now(id).await.price.minor(), 3000);
}

#[tokio::test]
async fn who_may_change_it_is_decided_before_the_request_is_read() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    // A stranger (another vendor, a customer) is refused on the read alone: the function then
    // never parses the body or `If-Match`.
    for stranger in [vendor_caller(&world.vendor().await), customer_caller("ana")] {
        let refused = bouquets::editable(&world.app, &stranger, bouquet.bouquet_id).await;
        assert_matches!(refused, Err(BouquetError::Forbidden(_)));
    }
    let unknown =
        bouquets::editable(&world.app, &customer_caller("ana"), BouquetId::generate()).await;
    assert_matches!(unknown, Err(BouquetError::NotFound));
}

#[tokio::test]
async fn another_vendor_may_not_change_or_withdraw_it() {
    let world = World::new().await;
    let bouquet = world.bouquet().await;
    let stranger = vendor_caller(&world.vendor().await);
    let id = bouquet.bouquet_id;
    let changed = change(
        &world,
        &stranger,
        id,
        Some(bouquet.version),
        new_price("1.00"),
    )
    .await;
    assert_matches!(changed, Err(BouquetError::Forbidden(_)));
    let withdrawn = withdraw(&world, &stranger, id, None).await;
    assert_matches!(withdrawn, Err(BouquetError::Forbidden(_)));
    assert_eq!(world.bouquet_now(id).await, bouquet);
}

#[tokio::test]
async fn a_reserved_bouquet_is_neither_changed_nor_withdrawn() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    world.reserved(&customer("ana"), &[&bouquet]).await;
    let caller = vendor_caller(&vendor);
    let read = world.bouquet_now(bouquet.bouquet_id).await;
    let changed = change(
        &world,
        &caller,
        bouquet.bouquet_id,
        Some(read.version),
        new_price("1.00"),
    )
    .await;
    assert_matches!(changed, Err(BouquetError::NotAvailable));
    let withdrawn = withdraw(&world, &caller, bouquet.bouquet_id, None).await;
    assert_matches!(withdrawn, Err(BouquetError::NotAvailable));
}

#[tokio::test]
async fn a_withdrawn_bouquet_leaves_the_catalogue() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let bouquet = world.bouquet_of(&vendor).await;
    let listed = world
        .catalogue_page(CatalogueScope::Shop(vendor.vendor_id))
        .await;
    assert_eq!(listed.items.len(), 1);
    let withdrawn = withdraw(&world, &vendor_caller(&vendor), bouquet.bouquet_id, None)
        .await
        .expect("withdrawn");
    assert_eq!(withdrawn.status, BouquetStatus::Withdrawn);
    let listed = world
        .catalogue_page(CatalogueScope::Shop(vendor.vendor_id))
        .await;
    assert!(listed.items.is_empty(), "{:?}", listed.items);
    let unknown = bouquets::bouquet(&world.app, bouquet_app::domain::BouquetId::generate()).await;
    assert_matches!(unknown, Err(BouquetError::NotFound));
}

#[tokio::test]
async fn the_catalogue_filters_by_price_and_freshness_on_its_index_for_all_shops_or_one() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let mut ids = Vec::new();
    for amount in ["9.00", "19.50", "30.00"] {
        ids.push(world.listed(&vendor, amount, None).await.bouquet_id);
    }
    // The middle one is scored 80 by its vase (as ingest leaves it).
    world
        .dynamodb
        .update_item()
        .table_name(&world.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("BOUQUET#{}", ids[1])),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("BOUQUET".into()),
        )
        .update_expression("SET freshness = :f")
        .expression_attribute_values(
            ":f",
            aws_sdk_dynamodb::types::AttributeValue::N("80".into()),
        )
        .send()
        .await
        .unwrap();
    let names = |filter: bouquet_app::store::CatalogueFilter, vendor_id| {
        let app = world.app.clone();
        let now = world.now();
        async move {
            let mut found: Vec<_> = bouquets::catalogue(&app, vendor_id, &filter, None, 10, now)
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|b| b.bouquet_id)
                .collect();
            found.sort();
            found
        }
    };
    let between = bouquets::parse_filter(Some("10"), Some("30.00"), None).unwrap();
    for shop in [
        CatalogueScope::All(CatalogueSort::Newest),
        CatalogueScope::Shop(vendor.vendor_id),
    ] {
        assert_eq!(
            names(between.clone(), shop).await,
            vec![ids[1], ids[2]],
            "{shop:?}"
        );
    }
    let fresh = bouquets::parse_filter(None, None, Some("70")).unwrap();
    assert_eq!(
        names(fresh, CatalogueScope::All(CatalogueSort::Newest)).await,
        vec![ids[1]],
        "only scored ones count"
    );
    let refused = bouquets::parse_filter(Some("-1"), Some("5"), Some("101")).unwrap_err();
    let fields: Vec<&str> = refused.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["query/minPrice", "query/minFreshness"]);
    let crossed = bouquets::parse_filter(Some("20"), Some("10"), None).unwrap_err();
    assert_eq!(crossed[0].field, "query/maxPrice");
}

/// A bouquet in a vase of its own, scored by one reading at `water_level_pct`.
async fn scored_bouquet(world: &World, vendor: &Vendor, water_level_pct: f64) -> Bouquet {
    use bouquet_app::domain::{Reading, VaseMessage};
    let vase = world.vase_of(vendor).await;
    let bouquet = world.listed(vendor, "25.00", Some(vase.vase_id)).await;
    let reading = VaseMessage::Telemetry {
        vase_id: vase.vase_id,
        reading: Reading {
            sent_at: world.now(),
            water_level_pct,
            temperature_c: 18.0,
            humidity_pct: 60.0,
            light_lux: 500.0,
        },
        received_at: world.now(),
    };
    bouquet_app::vases::apply(&world.app, &reading, CORRELATION)
        .await
        .unwrap();
    world.bouquet_now(bouquet.bouquet_id).await
}

#[tokio::test]
async fn the_whole_catalogue_reads_freshest_first_across_its_shards_page_by_page() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let mut expected = Vec::new();
    for level in [95.0, 20.0, 60.0, 60.0, 35.0, 80.0, 5.0] {
        expected.push(scored_bouquet(&world, &vendor, level).await);
    }
    for _ in 0..2 {
        expected.push(world.bouquet_of(&vendor).await);
    }
    let scored: Vec<_> = expected.iter().filter_map(|b| b.freshness).collect();
    assert!(
        scored.len() == 7 && scored.windows(2).any(|w| w[0] != w[1]),
        "the readings gave several scores: {scored:?}"
    );
    // Freshest first, the newest first among equal scores, the unscored last.
    expected.sort_by_key(|b| {
        (
            std::cmp::Reverse(b.freshness.map(i16::from).unwrap_or(-1)),
            std::cmp::Reverse(b.bouquet_id),
        )
    });
    let everything = CatalogueScope::All(CatalogueSort::Freshness);

    let mut read = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = bouquets::catalogue(
            &world.app,
            everything,
            &Default::default(),
            cursor.as_deref(),
            2,
            world.now(),
        )
        .await
        .unwrap();
        assert!(page.items.len() <= 2);
        read.extend(page.items.iter().map(|b| b.bouquet_id));
        pages += 1;
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let expected_ids: Vec<_> = expected.iter().map(|b| b.bouquet_id).collect();
    assert_eq!(
        read, expected_ids,
        "in order, each once, over {pages} pages"
    );

    // A vendor's edit keeps the bouquet's place (the vase's score is not the vendor's);
    // a minimum freshness narrows the sorted read; a sale takes it out.
    let freshest = expected[0].clone();
    change(
        &world,
        &vendor_caller(&vendor),
        freshest.bouquet_id,
        Some(freshest.version),
        BouquetChange::validate(Some("Peonies, renamed"), None, None, None, None).unwrap(),
    )
    .await
    .unwrap();
    let filter = bouquets::parse_filter(None, None, Some("1")).unwrap();
    let first = bouquets::catalogue(&world.app, everything, &filter, None, 50, world.now())
        .await
        .unwrap();
    let first_ids: Vec<_> = first.items.iter().map(|b| b.bouquet_id).collect();
    assert_eq!(first_ids, expected_ids[..7]);
    assert_eq!(first.items[0].name, "Peonies, renamed");
    world.reserved(&customer("ana"), &[&freshest]).await;
    let after_sale = bouquets::catalogue(&world.app, everything, &filter, None, 50, world.now())
        .await
        .unwrap();
    assert_eq!(after_sale.items.len(), 6);
    assert_ne!(after_sale.items[0].bouquet_id, freshest.bouquet_id);

    // A cursor made for one order is refused by the other.
    let newest_page = bouquets::catalogue(
        &world.app,
        CatalogueScope::All(CatalogueSort::Newest),
        &Default::default(),
        None,
        2,
        world.now(),
    )
    .await
    .unwrap();
    let refused = bouquets::catalogue(
        &world.app,
        everything,
        &Default::default(),
        newest_page.next_cursor.as_deref(),
        2,
        world.now(),
    )
    .await;
    assert_matches!(refused, Err(bouquet_app::store::StoreError::InvalidCursor));
}

#[test]
fn a_catalogue_request_names_each_problem_with_its_parameter() {
    let browse = |vendor: Option<&str>, sort: Option<&str>, min_price: Option<&str>| {
        let all = CatalogueIndexes {
            price: true,
            rating: true,
        };
        bouquets::parse_browse(vendor, sort, min_price, None, None, &all)
    };
    for (sort, expected) in [
        (None, CatalogueSort::Newest),
        (Some("newest"), CatalogueSort::Newest),
        (Some("freshness"), CatalogueSort::Freshness),
        (Some("price"), CatalogueSort::PriceLowest),
        (Some("-price"), CatalogueSort::PriceHighest),
        (Some("rating"), CatalogueSort::Rating),
    ] {
        let (scope, _) = browse(None, sort, None).unwrap();
        assert_eq!(scope, CatalogueScope::All(expected), "{sort:?}");
    }
    let shop = bouquet_app::domain::VendorId::generate().to_string();
    let (scope, _) = browse(Some(&shop), Some("newest"), None).unwrap();
    assert!(matches!(scope, CatalogueScope::Shop(_)));

    let fields = |errors: Vec<bouquet_app::domain::FieldError>| -> Vec<String> {
        errors.into_iter().map(|e| e.field).collect()
    };
    let refused = browse(Some("x"), Some("cheapest"), Some("-1"));
    assert_eq!(
        fields(refused.unwrap_err()),
        ["query/vendorId", "query/sort", "query/minPrice"]
    );
    let shop_sorted = browse(Some(&shop), Some("freshness"), None);
    assert_eq!(fields(shop_sorted.unwrap_err()), ["query/sort"]);
    // Between the deploys of an upgrade an index is not there yet: its order is refused.
    let sorted_without = |sort, price, rating| {
        let indexes = CatalogueIndexes { price, rating };
        bouquets::parse_browse(None, Some(sort), None, None, None, &indexes)
    };
    let deferred = sorted_without("-price", false, true);
    assert_eq!(fields(deferred.unwrap_err()), ["query/sort"]);
    let deferred = sorted_without("rating", true, false);
    assert_eq!(fields(deferred.unwrap_err()), ["query/sort"]);
    assert!(sorted_without("rating", false, true).is_ok());
}

#[tokio::test]
async fn the_whole_catalogue_reads_by_price_either_way_page_by_page() {
    let world = World::new().await;
    let (bloom, petal) = (world.vendor().await, world.vendor().await);
    let mut listed = Vec::new();
    for (i, amount) in ["12.00", "9.50", "30.00", "12.00", "0.99", "150.00", "45.25"]
        .into_iter()
        .enumerate()
    {
        let shop = if i % 2 == 0 { &bloom } else { &petal };
        let bouquet = world.listed(shop, amount, None).await;
        listed.push((bouquet.price.minor(), bouquet.bouquet_id));
    }
    let read_all = |sort: CatalogueSort, filter: bouquet_app::store::CatalogueFilter| {
        let app = world.app.clone();
        let now = world.now();
        async move {
            let mut read = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = bouquets::catalogue(
                    &app,
                    CatalogueScope::All(sort),
                    &filter,
                    cursor.as_deref(),
                    3,
                    now,
                )
                .await
                .unwrap();
                read.extend(page.items.iter().map(|b| (b.price.minor(), b.bouquet_id)));
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => return read,
                }
            }
        }
    };
    let mut cheapest_first = listed.clone();
    cheapest_first.sort();
    assert_eq!(
        read_all(CatalogueSort::PriceLowest, Default::default()).await,
        cheapest_first
    );
    let dearest_first: Vec<_> = cheapest_first.iter().rev().copied().collect();
    assert_eq!(
        read_all(CatalogueSort::PriceHighest, Default::default()).await,
        dearest_first
    );
    // A price range narrows the sorted read; a changed price moves the bouquet.
    let range = bouquets::parse_filter(Some("10"), Some("50"), None).unwrap();
    let in_range: Vec<_> = cheapest_first
        .iter()
        .filter(|(minor, _)| (1000..=5000).contains(minor))
        .copied()
        .collect();
    assert_eq!(read_all(CatalogueSort::PriceLowest, range).await, in_range);
    let cheapest = cheapest_first[0].1;
    let read = bouquets::bouquet(&world.app, cheapest).await.unwrap();
    let owner = if read.vendor_id == bloom.vendor_id {
        &bloom
    } else {
        &petal
    };
    change(
        &world,
        &vendor_caller(owner),
        cheapest,
        Some(read.version),
        BouquetChange::validate(None, None, Some(("999.00", "EUR")), None, None).unwrap(),
    )
    .await
    .unwrap();
    let now_dearest = read_all(CatalogueSort::PriceHighest, Default::default()).await;
    assert_eq!(now_dearest[0], (99_900, cheapest));
    assert_eq!(now_dearest.len(), listed.len());
}

#[tokio::test]
async fn a_withdrawal_takes_the_bouquet_out_of_its_vase_and_leaves_a_vase_holding_another_alone() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let caller = vendor_caller(&vendor);
    let vase = world.vase_of(&vendor).await.vase_id;
    let first = world.listed(&vendor, "20.00", Some(vase)).await;
    // A second bouquet listed in the same vase takes its place there.
    let second = world.listed(&vendor, "22.00", Some(vase)).await;
    assert!(world.vase_now(vase).await.holds(second.bouquet_id));

    // The first one's vase holds another: the withdrawal leaves it alone (and succeeds).
    let withdrawn = withdraw(&world, &caller, first.bouquet_id, Some(first.version))
        .await
        .expect("withdrawn");
    assert_eq!(withdrawn.status, BouquetStatus::Withdrawn);
    assert!(world.vase_now(vase).await.holds(second.bouquet_id));

    // The bouquet standing in it: out of the vase with its score, in the same write; the
    // withdrawn bouquet keeps naming the vase it stood in.
    let withdrawn = withdraw(&world, &caller, second.bouquet_id, None)
        .await
        .expect("withdrawn");
    assert_eq!(withdrawn.vase_id, Some(vase));
    let emptied = world.vase_now(vase).await;
    assert_eq!(emptied.bouquet, None);
    assert_eq!(
        emptied
            .view(world.now(), std::time::Duration::from_secs(3600))
            .freshness,
        None
    );
    assert_eq!(
        world.bouquet_now(second.bouquet_id).await.vase_id,
        Some(vase)
    );
}
