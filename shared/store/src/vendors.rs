use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use bouquet_domain::delivery::DeliverySettings;
use bouquet_domain::events::DomainEvent;
use bouquet_domain::review::Rating;
use bouquet_domain::{Timestamp, Vendor, VendorId};
use serde::{Deserialize, Serialize};

use crate::cursor::Page;
use crate::error::{StoreError, Target};
use crate::idempotency::IdempotencyPut;
use crate::items::{from_item, to_item, VendorItem};
use crate::keys;
use crate::query::IndexQuery;
use crate::store::Store;
use crate::tx::{Expr, Tx};

/// A vendor's delivery settings as stored: one item beside the vendor's.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeliverySettingsItem {
    pk: String,
    sk: String,
    entity: String,
    vendor_id: String,
    settings: DeliverySettings,
    version: u64,
    updated_at: i64,
}

/// A vendor's delivery settings with their version (what `If-Match` names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedSettings {
    pub settings: DeliverySettings,
    pub version: u64,
}

fn delivery_settings_key(vendor_id: VendorId) -> crate::items::Item {
    keys::key(
        keys::vendor_pk(&vendor_id.to_string()),
        keys::DELIVERY_SETTINGS_SK,
    )
}

/// The outcome of [`Store::claim_member`].
#[derive(Debug, PartialEq, Eq)]
pub enum MemberClaim {
    Claimed,
    /// The user is already claimed by this other shop.
    OtherVendor(String),
}

impl Store {
    /// Puts a new vendor with its event (and idempotency record): one transaction.
    pub async fn create_vendor(
        &self,
        vendor: &Vendor,
        event: &DomainEvent,
        idempotency: Option<&IdempotencyPut>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut tx = Tx::with_idempotency(&self.table, idempotency, now)?;
        // Until it sets its area, the shop is indexed as delivering everywhere (as it does).
        let unset = DeliverySettings::unset();
        crate::coverage::move_coverage(&mut tx, &self.table, vendor.vendor_id, &unset, &unset)?;
        self.create_with_event(
            tx,
            Target::Vendor(vendor.vendor_id),
            to_item(&VendorItem::from_domain(vendor))?,
            event,
        )
        .await
    }

    /// Claims the user signing in as `email` for `vendor_id`'s shop: one conditional `PutItem`
    /// (`MEMBER#<email>`, the email lowercased as Cognito compares it), so of two shops racing
    /// for one user exactly one wins, before either touches the user directory. Claiming again
    /// for the same shop succeeds (retries).
    pub async fn claim_member(
        &self,
        email: &str,
        vendor_id: VendorId,
        now: Timestamp,
    ) -> Result<MemberClaim, StoreError> {
        let shop = vendor_id.to_string();
        let mut item = keys::key(format!("MEMBER#{}", email.to_lowercase()), keys::MEMBER_SK);
        item.insert("vendorId".into(), AttributeValue::S(shop.clone()));
        item.insert(
            "claimedAt".into(),
            AttributeValue::N(now.as_millis().to_string()),
        );
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR vendorId = :vendor")
            .expression_attribute_values(":vendor", AttributeValue::S(shop))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(MemberClaim::Claimed),
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(failed) => {
                    Ok(MemberClaim::OtherVendor(
                        failed
                            .item()
                            .and_then(|item| item.get("vendorId"))
                            .and_then(|v| v.as_s().ok())
                            .cloned()
                            .unwrap_or_default(),
                    ))
                }
                other => Err(StoreError::service(other)),
            },
        }
    }

    /// The names of `vendors` (one `BatchGetItem`; an unknown vendor is left out): what the
    /// catalogue shows on each card.
    pub async fn vendor_names(
        &self,
        vendors: &[VendorId],
    ) -> Result<std::collections::HashMap<VendorId, String>, StoreError> {
        let mut unique: Vec<VendorId> = vendors.to_vec();
        unique.sort();
        unique.dedup();
        if unique.is_empty() {
            return Ok(Default::default());
        }
        let keys = unique.iter().map(|v| keys::vendor_key(*v)).collect();
        let found = self.batch_get(keys).await?;
        Ok(unique
            .into_iter()
            .filter_map(|v| {
                let item = found.get(&keys::vendor_pk(&v.to_string()))?;
                Some((v, item.get("name")?.as_s().ok()?.clone()))
            })
            .collect())
    }

    /// The name (when the shop exists) and the rating of each of `vendors`: one
    /// `BatchGetItem` of their shop and rating items, for the catalogue's cards.
    pub async fn shop_names_and_ratings(
        &self,
        vendors: &[VendorId],
    ) -> Result<std::collections::HashMap<VendorId, (Option<String>, Rating)>, StoreError> {
        let mut unique: Vec<VendorId> = vendors.to_vec();
        unique.sort();
        unique.dedup();
        let keys = unique
            .iter()
            .flat_map(|v| {
                let pk = keys::vendor_pk(&v.to_string());
                [
                    keys::key(pk.clone(), keys::VENDOR_SK),
                    keys::key(pk, crate::reviews::RATING_SK),
                ]
            })
            .collect();
        let found = self.batch_get_all(&self.table, keys).await?;
        let mut shops: std::collections::HashMap<VendorId, (Option<String>, Rating)> =
            unique.iter().map(|v| (*v, Default::default())).collect();
        for item in found {
            let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
            let Some(vendor) = text("pk")
                .and_then(|pk| pk.strip_prefix("VENDOR#").map(str::to_owned))
                .and_then(|id| VendorId::parse(&id).ok())
            else {
                continue;
            };
            let shop = shops.entry(vendor).or_default();
            match text("sk").as_deref() {
                Some(keys::VENDOR_SK) => shop.0 = text("name"),
                Some(crate::reviews::RATING_SK) => shop.1 = crate::reviews::rating_of(&item).0,
                _ => {}
            }
        }
        Ok(shops)
    }

    /// One shop; `consistent` when a conditional write will follow.
    pub async fn vendor(
        &self,
        vendor_id: VendorId,
        consistent: bool,
    ) -> Result<Option<Vendor>, StoreError> {
        self.get_stored::<VendorItem>(keys::vendor_key(vendor_id), consistent)
            .await
    }

    /// Replaces a shop read at `read_version` with `changed`, with its event (none when
    /// nothing a reader sees changed, e.g. a repeated account report).
    pub async fn save_vendor(
        &self,
        changed: &Vendor,
        read_version: u64,
        event: Option<&DomainEvent>,
    ) -> Result<(), StoreError> {
        self.put_with_event(
            Target::Vendor(changed.vendor_id),
            to_item(&VendorItem::from_domain(changed))?,
            Expr::at_version(read_version),
            event,
        )
        .await
    }

    /// A page of every shop, oldest first (`VendorIndex`, partition `VENDORS`: no Scan).
    pub async fn vendors(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Vendor>, StoreError> {
        let after = crate::bouquets::decode_id_cursor(cursor)?;
        self.query_index(
            IndexQuery::vendor_index(keys::ALL_VENDORS_KEY.into(), after.as_deref(), limit),
            |id| keys::key(keys::vendor_pk(id), keys::VENDOR_SK),
        )
        .await?
        .into_page::<VendorItem>()
    }

    /// The vendor's name, if it exists.
    pub async fn vendor_name(&self, vendor_id: VendorId) -> Result<Option<String>, StoreError> {
        Ok(self
            .get_item(keys::vendor_key(vendor_id), false)
            .await?
            .and_then(|item| item.get("name").and_then(|n| n.as_s().ok()).cloned()))
    }

    /// Whether the vendor exists (a cheap check before work outside DynamoDB).
    pub async fn vendor_exists(&self, vendor_id: VendorId) -> Result<bool, StoreError> {
        Ok(self
            .get_item(keys::vendor_key(vendor_id), false)
            .await?
            .is_some())
    }

    /// The vendor's delivery settings, if it ever set them.
    pub async fn delivery_settings(
        &self,
        vendor_id: VendorId,
        consistent: bool,
    ) -> Result<Option<VersionedSettings>, StoreError> {
        let Some(item) = self
            .get_item(delivery_settings_key(vendor_id), consistent)
            .await?
        else {
            return Ok(None);
        };
        let item: DeliverySettingsItem = from_item(item)?;
        Ok(Some(VersionedSettings {
            settings: item.settings,
            version: item.version,
        }))
    }

    /// Puts the vendor's delivery settings at `saved.version` if the stored ones are still at
    /// `read_version` (0: none yet), with their event: one transaction.
    /// `before`: the settings read (the defaults when none), whose coverage moves to the new.
    pub async fn save_delivery_settings(
        &self,
        vendor_id: VendorId,
        saved: &VersionedSettings,
        before: &DeliverySettings,
        read_version: u64,
        event: &DomainEvent,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let key = delivery_settings_key(vendor_id);
        let item = to_item(&DeliverySettingsItem {
            pk: keys::vendor_pk(&vendor_id.to_string()),
            sk: keys::DELIVERY_SETTINGS_SK.into(),
            entity: "deliverySettings".into(),
            vendor_id: vendor_id.to_string(),
            settings: saved.settings.clone(),
            version: saved.version,
            updated_at: now.as_millis(),
        })?;
        debug_assert_eq!(item.get("pk"), key.get("pk"));
        let mut tx = Tx::new();
        tx.put(
            Target::Vendor(vendor_id),
            &self.table,
            item,
            Some(Expr::at_version_or_new(read_version)),
        )?;
        crate::coverage::move_coverage(&mut tx, &self.table, vendor_id, before, &saved.settings)?;
        tx.commit_with_event(self, Some(event)).await
    }
}
