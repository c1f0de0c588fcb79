//! Issue 54: the catalogue lists only what can reach the customer's door on the chosen day,
//! found through the shops' coverage index, as checkout would accept it.

use bouquet_app::bouquets::{self, CatalogueScope};
use bouquet_app::domain::delivery::{DeliverySettings, WhereAndWhen};
use bouquet_app::domain::{Bouquet, VendorId};
use bouquet_app::store::{CatalogueFilter, CatalogueSort};

use crate::support::*;

/// A shop's settings: France, these postcode prefixes, every day but Sunday, 14 days ahead,
/// same day until noon in Paris.
fn area(prefixes: &[&str]) -> DeliverySettings {
    let mut settings = DeliverySettings::unset();
    settings.countries = vec!["FR".into()];
    settings.postcode_prefixes = prefixes.iter().map(|p| (*p).to_owned()).collect();
    settings.days = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ]
    .map(str::to_owned)
    .to_vec();
    settings.time_zone = "Europe/Paris".into();
    settings
}

/// The shops reaching `postcode` on `date` (`YYYY-MM-DD`), now.
async fn reaching(world: &World, postcode: &str, date: &str) -> Vec<VendorId> {
    let place = WhereAndWhen::parse(postcode, "FR", date).expect("a valid place");
    let mut shops: Vec<VendorId> = bouquets::shops_reaching(&world.app, &place, world.now())
        .await
        .expect("read")
        .into_iter()
        .map(|(shop, _)| shop)
        .collect();
    shops.sort();
    shops
}

/// The whole catalogue's first page, newest first, narrowed by `filter`.
async fn catalogue_of(world: &World, filter: &CatalogueFilter) -> Vec<Bouquet> {
    bouquets::catalogue(
        &world.app,
        CatalogueScope::All(CatalogueSort::Newest),
        filter,
        None,
        20,
        world.now(),
    )
    .await
    .expect("the catalogue reads")
    .items
}

/// The whole catalogue's first page, narrowed to `shops`.
async fn listed_for(world: &World, shops: Vec<VendorId>) -> Vec<Bouquet> {
    let filter = CatalogueFilter {
        shops: Some(shops),
        ..CatalogueFilter::default()
    };
    catalogue_of(world, &filter).await
}

#[tokio::test]
async fn a_lyon_address_never_sees_a_paris_only_shop_and_a_shop_without_an_area_reaches_everyone() {
    let world = World::new().await;
    let (paris, lyon, anywhere) = (
        world.vendor().await,
        world.vendor().await,
        world.vendor().await,
    );
    world.first_settings(&paris, area(&["75", "92"])).await;
    world.first_settings(&lyon, area(&["69"])).await;
    let (in_paris, in_lyon, everywhere) = (
        world.bouquet_of(&paris).await,
        world.bouquet_of(&lyon).await,
        world.bouquet_of(&anywhere).await,
    );
    // T0 is Wednesday 2026-12-02 16:16 UTC: Thursday is the next day both shops deliver.
    let mut expected = vec![lyon.vendor_id, anywhere.vendor_id];
    expected.sort();
    assert_eq!(reaching(&world, "69003", "2026-12-03").await, expected);
    let shown: Vec<_> = listed_for(&world, expected.clone()).await;
    assert!(shown.iter().any(|b| b.bouquet_id == in_lyon.bouquet_id));
    assert!(shown.iter().any(|b| b.bouquet_id == everywhere.bouquet_id));
    assert!(
        !shown.iter().any(|b| b.bouquet_id == in_paris.bouquet_id),
        "a Lyon address never sees a Paris-only shop"
    );
    let mut in_75 = vec![paris.vendor_id, anywhere.vendor_id];
    in_75.sort();
    assert_eq!(reaching(&world, "75011", "2026-12-03").await, in_75);
    // Sunday: neither area shop delivers; today, past every shop's noon cut-off: no one.
    assert_eq!(
        reaching(&world, "75011", "2026-12-06").await,
        vec![anywhere.vendor_id]
    );
    assert_eq!(reaching(&world, "75011", "2026-12-02").await, vec![]);
}

#[tokio::test]
async fn a_shop_that_moves_its_area_is_found_where_it_delivers_now_and_nowhere_else() {
    let world = World::new().await;
    let shop = world.vendor().await;
    world.first_settings(&shop, area(&["75"])).await;
    assert_eq!(
        reaching(&world, "75011", "2026-12-03").await,
        vec![shop.vendor_id]
    );
    assert_eq!(reaching(&world, "69003", "2026-12-03").await, vec![]);
    bouquet_app::delivery::change_settings(
        &world.app,
        &vendor_caller(&shop),
        shop.vendor_id,
        area(&["69"]),
        Some(1),
        CORRELATION,
        world.now(),
    )
    .await
    .expect("moved");
    assert_eq!(reaching(&world, "75011", "2026-12-03").await, vec![]);
    assert_eq!(
        reaching(&world, "69003", "2026-12-03").await,
        vec![shop.vendor_id]
    );
}

#[tokio::test]
async fn the_catalogue_finds_bouquets_by_occasion_and_by_their_words_inflected() {
    use bouquet_app::domain::bouquet::NewBouquet;
    use bouquet_app::domain::search::Occasion;
    let world = World::new().await;
    let shop = world.vendor().await;
    let mut roses = NewBouquet::validate(
        "Red roses",
        Some("Hand-tied roses for an anniversary"),
        ("45.00", "EUR"),
        None,
    )
    .unwrap();
    roses.occasions = vec![Occasion::Anniversary, Occasion::Love];
    let roses = done(world.list_bouquet(shop.vendor_id, roses).await.unwrap());
    let lilies = NewBouquet::validate(
        "White lilies",
        Some("Calm and bright"),
        ("30.00", "EUR"),
        None,
    )
    .unwrap();
    let lilies = done(world.list_bouquet(shop.vendor_id, lilies).await.unwrap());
    let found = |occasion: Option<&str>, q: Option<&str>| {
        let mut filter = CatalogueFilter::default();
        bouquets::parse_search(&mut filter, occasion, q).expect("a valid search");
        let world = &world;
        async move {
            catalogue_of(world, &filter)
                .await
                .into_iter()
                .map(|b| b.bouquet_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found(Some("love"), None).await, vec![roses.bouquet_id]);
    assert_eq!(found(None, Some("rose")).await, vec![roses.bouquet_id]);
    assert_eq!(
        found(None, Some("ANNIVERSARIES red")).await,
        vec![roses.bouquet_id]
    );
    assert_eq!(found(None, Some("lily")).await, vec![lilies.bouquet_id]);
    assert_eq!(found(Some("sympathy"), Some("roses")).await, vec![]);
    let mut filter = CatalogueFilter::default();
    let refused = bouquets::parse_search(&mut filter, Some("halloween"), Some("a")).unwrap_err();
    let fields: Vec<&str> = refused.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["query/occasion", "query/q"]);
}
