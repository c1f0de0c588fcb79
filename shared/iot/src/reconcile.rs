//! What the reconciliation sweep reads from IoT Core: the stack's vase things old enough to
//! have finished registering, and certificates carrying the vase policy that no thing holds.
//! Which of the things still have a vase is the caller's question (the table's); removing
//! is [`crate::retire`] and [`crate::revoke_unattached`].

use crate::{DeviceRegistry, IotError, Thing, POLICY_ATTRIBUTE, REGISTERED_AT_ATTRIBUTE};

/// The things of `policy`'s stack whose registration began before `registered_before`
/// (epoch seconds), at most `limit` of them. A thing without `registeredAt` predates the
/// attribute and counts as settled.
pub async fn settled_things(
    registry: &dyn DeviceRegistry,
    policy: &str,
    registered_before: i64,
    limit: usize,
) -> Result<Vec<Thing>, IotError> {
    let mut settled = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let page = registry.vase_things(policy, next.as_deref()).await?;
        settled.extend(page.items.into_iter().filter(|thing| {
            // The filter is IoT Core's; checked again so a looser listing cannot widen it.
            thing.attributes.get(POLICY_ATTRIBUTE).map(String::as_str) == Some(policy)
                && thing
                    .attributes
                    .get(REGISTERED_AT_ATTRIBUTE)
                    .and_then(|at| at.parse::<i64>().ok())
                    .is_none_or(|at| at < registered_before)
        }));
        next = page.next;
        if next.is_none() || settled.len() >= limit {
            settled.truncate(limit);
            return Ok(settled);
        }
    }
}

/// Certificates `policy` is attached to that no thing holds and that were created before
/// `created_before` (epoch seconds), at most `limit`: left by a registration or rotation
/// whose undo failed.
pub async fn unattached_certificates(
    registry: &dyn DeviceRegistry,
    policy: &str,
    created_before: i64,
    limit: usize,
) -> Result<Vec<String>, IotError> {
    let mut unattached = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let page = registry
            .policy_certificates(policy, next.as_deref())
            .await?;
        for arn in page.items {
            if unattached.len() >= limit {
                return Ok(unattached);
            }
            if !registry.principal_things(&arn).await?.is_empty() {
                continue;
            }
            let created_at = registry
                .certificate_created_at(crate::certificate_id(&arn))
                .await?;
            if created_at < created_before {
                unattached.push(arn);
            }
        }
        next = page.next;
        if next.is_none() {
            return Ok(unattached);
        }
    }
}
