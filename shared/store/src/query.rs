//! Index queries that return exactly `limit` matching items when there are that many.
//!
//! DynamoDB applies `Limit` before `FilterExpression`, so one call can return fewer matches
//! than asked for. This helper keeps reading and, when a page holds more matches than
//! needed, resumes the next page after the last item *returned* (any item's key is a valid
//! `ExclusiveStartKey`), so nothing is skipped or repeated.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::StoreError;
use crate::items::Item;
use crate::store::Store;
use crate::tx::Expr;

/// Give up filling a page after this many reads; the cursor continues where it stopped.
const MAX_READS_PER_PAGE: usize = 5;

pub struct IndexQuery<'a> {
    pub index: &'static str,
    pub partition_attr: &'static str,
    pub partition: String,
    pub sort_attr: &'static str,
    pub filter: Option<Expr>,
    pub newest_first: bool,
    /// Resume after this sort key value (exclusive).
    pub after: Option<&'a str>,
    /// Only sort key values between these two (inclusive), in the key condition.
    pub sort_between: Option<(String, String)>,
    /// Resume after `after` by a key condition (`<` newest first, `>` oldest first) rather
    /// than a start key: for an index whose sort values do not name the item's table key
    /// (a public cursor must not carry it). Sort values must be unique in the partition.
    pub after_by_condition: bool,
    pub limit: usize,
}

pub struct QueryPage {
    pub items: Vec<Item>,
    /// Sort key of the last item returned, when more items may follow.
    pub resume_after: Option<String>,
}

impl<'a> IndexQuery<'a> {
    /// One partition of `VendorIndex` (a shop's bouquets, vases or reviews; every shop), read
    /// oldest first from the start or after `after`, unfiltered.
    pub fn vendor_index(partition: String, after: Option<&'a str>, limit: usize) -> Self {
        IndexQuery {
            index: crate::keys::INDEX_VENDOR,
            partition_attr: "vendorKey",
            partition,
            sort_attr: "vendorSort",
            filter: None,
            newest_first: false,
            after,
            sort_between: None,
            after_by_condition: false,
            limit,
        }
    }
}

impl QueryPage {
    /// The page's items read into the domain, with the cursor that resumes after the last.
    pub(crate) fn into_page<I: crate::items::Stored>(
        self,
    ) -> Result<crate::cursor::Page<I::Domain>, StoreError> {
        Ok(crate::cursor::Page {
            items: self
                .items
                .into_iter()
                .map(I::read)
                .collect::<Result<_, _>>()?,
            next_cursor: self.resume_after.map(|sort| crate::cursor::encode(&sort)),
        })
    }
}

impl Store {
    /// `table_key` gives an item's table key (`pk`, `sk`) from its sort value; the index
    /// attributes of the start key are added here.
    pub(crate) async fn query_index(
        &self,
        q: IndexQuery<'_>,
        table_key: impl Fn(&str) -> Item,
    ) -> Result<QueryPage, StoreError> {
        let mut filter = q.filter.unwrap_or_default();
        filter = filter
            .name("#pk", q.partition_attr)
            .s(":pk", q.partition.clone());
        let start_key = |sort: &str| {
            let mut key = table_key(sort);
            key.insert(
                q.partition_attr.to_owned(),
                AttributeValue::S(q.partition.clone()),
            );
            key.insert(q.sort_attr.to_owned(), AttributeValue::S(sort.to_owned()));
            key
        };
        let mut key_condition = "#pk = :pk".to_owned();
        if let Some((low, high)) = &q.sort_between {
            key_condition.push_str(" AND #sk BETWEEN :low AND :high");
            filter = filter
                .name("#sk", q.sort_attr)
                .s(":low", low.clone())
                .s(":high", high.clone());
        }
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        match q.after {
            Some(after) if q.after_by_condition => {
                let op = if q.newest_first { "<" } else { ">" };
                key_condition.push_str(&format!(" AND #sk {op} :after"));
                filter = filter
                    .name("#sk", q.sort_attr)
                    .s(":after", after.to_owned());
            }
            after => start = after.map(start_key),
        }
        let mut items = Vec::new();
        for _ in 0..MAX_READS_PER_PAGE {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(q.index)
                .key_condition_expression(&key_condition)
                .set_filter_expression((!filter.text.is_empty()).then(|| filter.text.clone()))
                .set_expression_attribute_names(Some(filter.names.clone()))
                .set_expression_attribute_values(Some(filter.values.clone()))
                .scan_index_forward(!q.newest_first)
                .set_exclusive_start_key(start.take())
                .limit(q.limit as i32)
                .send()
                .await
                .map_err(StoreError::backend)?;
            items.extend(output.items.unwrap_or_default());
            let sort_of = |item: &Item| match item.get(q.sort_attr) {
                Some(AttributeValue::S(s)) => Some(s.clone()),
                _ => None,
            };
            if items.len() >= q.limit {
                items.truncate(q.limit);
                let resume_after = items.last().and_then(sort_of);
                return Ok(QueryPage {
                    items,
                    resume_after,
                });
            }
            match output.last_evaluated_key {
                Some(last) => start = Some(last),
                None => {
                    return Ok(QueryPage {
                        items,
                        resume_after: None,
                    })
                }
            }
        }
        // Read budget spent: resume after the last evaluated item.
        let resume_after = match start.as_ref().and_then(|k| k.get(q.sort_attr)) {
            Some(AttributeValue::S(s)) => Some(s.clone()),
            _ => items.last().and_then(|i| match i.get(q.sort_attr) {
                Some(AttributeValue::S(s)) => Some(s.clone()),
                _ => None,
            }),
        };
        Ok(QueryPage {
            items,
            resume_after,
        })
    }
}
