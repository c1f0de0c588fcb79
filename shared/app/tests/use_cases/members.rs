use bouquet_app::directory::MemoryDirectory;
use bouquet_app::domain::identity::Email;
use bouquet_app::domain::VendorId;
use bouquet_app::members::{add_vendor_member, MembershipChange, MembershipError};

use crate::support::*;

#[tokio::test]
async fn an_unknown_email_is_invited_into_the_shop_and_a_second_call_changes_nothing() {
    let world = World::new().await;
    let vendor = world.vendor().await;
    let directory = MemoryDirectory::default();
    let email = Email::parse("flo@example.com").unwrap();
    // The same request twice.
    let add_flo = || {
        add_vendor_member(
            &world.app,
            &directory,
            vendor.vendor_id,
            &email,
            world.now(),
        )
    };
    let first = add_flo().await.unwrap();
    assert_eq!(first.change, MembershipChange::Invited);
    assert_eq!(
        directory.groups("flo@example.com"),
        vec!["vendor".to_owned()]
    );
    let again = add_flo().await.unwrap();
    assert_eq!(again.change, MembershipChange::Updated);
    assert_eq!(directory.invited.lock().unwrap().len(), 1, "invited once");
}

#[tokio::test]
async fn a_member_of_one_shop_is_not_given_to_another_nor_to_a_shop_that_does_not_exist() {
    let world = World::new().await;
    let (one, other) = (world.vendor().await, world.vendor().await);
    let directory = MemoryDirectory::default();
    let email = Email::parse("flo@example.com").unwrap();
    add_vendor_member(&world.app, &directory, one.vendor_id, &email, world.now())
        .await
        .unwrap();
    let taken =
        add_vendor_member(&world.app, &directory, other.vendor_id, &email, world.now()).await;
    assert_matches!(
        taken,
        Err(MembershipError::OtherVendor(ref v)) if *v == one.vendor_id.to_string()
    );
    let nowhere = add_vendor_member(
        &world.app,
        &directory,
        VendorId::generate(),
        &email,
        world.now(),
    )
    .await;
    assert_matches!(nowhere, Err(MembershipError::UnknownVendor));
}
