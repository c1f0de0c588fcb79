//! Where each shop delivers, indexed by place (issue 54): one item per (country, postcode
//! prefix) pair of its area (`COVERAGE#{country}#{prefix}`, `SHOP#{vendorId}`), holding its
//! delivery settings without its contact address. Written in the transaction that saves the
//! settings (the pairs it left deleted, the pairs it covers put), and at onboarding for a shop
//! that set none (`*`: every country). A catalogue read for a postcode queries the handful of
//! partitions that postcode can be under ([`WhereAndWhen::coverage_keys`]): never the shops.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use bouquet_domain::delivery::{DeliverySettings, WhereAndWhen};
use bouquet_domain::VendorId;

use crate::error::{StoreError, Target};
use crate::items::{from_item, to_item, Item};
use crate::store::Store;
use crate::tx::{Expr, Tx};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CoverageItem {
    pk: String,
    sk: String,
    entity: String,
    vendor_id: String,
    settings: DeliverySettings,
}

fn coverage_pk((country, prefix): &(String, String)) -> String {
    format!("COVERAGE#{country}#{prefix}")
}

fn coverage_key(pair: &(String, String), vendor_id: VendorId) -> Item {
    crate::keys::key(coverage_pk(pair), &format!("SHOP#{vendor_id}"))
}

/// Moves the shop's coverage from `before`'s pairs to `after`'s in `tx`: deletes the pairs it
/// left, puts every pair it covers (with the settings they answer with).
pub(crate) fn move_coverage(
    tx: &mut Tx,
    table: &str,
    vendor_id: VendorId,
    before: &DeliverySettings,
    after: &DeliverySettings,
) -> Result<(), StoreError> {
    let covered = after.coverage();
    for left in before.coverage().iter().filter(|p| !covered.contains(p)) {
        tx.delete(
            Target::Coverage,
            table,
            coverage_key(left, vendor_id),
            Expr::default(),
        )?;
    }
    let public = DeliverySettings {
        contact_email: None,
        ..after.clone()
    };
    for pair in &covered {
        tx.put(
            Target::Coverage,
            table,
            to_item(&CoverageItem {
                pk: coverage_pk(pair),
                sk: format!("SHOP#{vendor_id}"),
                entity: "coverage".into(),
                vendor_id: vendor_id.to_string(),
                settings: public.clone(),
            })?,
            None,
        )?;
    }
    Ok(())
}

impl Store {
    /// The shops whose area could cover `place`, with their settings: one `Query` per
    /// coverage key of the postcode (at most 12, side by side), every page of each.
    pub async fn shops_covering(
        &self,
        place: &WhereAndWhen,
    ) -> Result<Vec<(VendorId, DeliverySettings)>, StoreError> {
        let queries = place.coverage_keys().into_iter().map(|pair| async move {
            let mut found = Vec::new();
            let mut start = None;
            loop {
                let page = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("pk = :pk")
                    .expression_attribute_values(":pk", AttributeValue::S(coverage_pk(&pair)))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(StoreError::backend)?;
                for item in page.items.unwrap_or_default() {
                    let item: CoverageItem = from_item(item)?;
                    found.push((
                        VendorId::parse(&item.vendor_id).map_err(StoreError::corrupt)?,
                        item.settings,
                    ));
                }
                start = page.last_evaluated_key;
                if start.is_none() {
                    return Ok::<_, StoreError>(found);
                }
            }
        });
        let mut shops = Vec::new();
        for found in futures::future::join_all(queries).await {
            for (vendor_id, settings) in found? {
                if !shops.iter().any(|(v, _): &(VendorId, _)| *v == vendor_id) {
                    shops.push((vendor_id, settings));
                }
            }
        }
        Ok(shops)
    }
}
