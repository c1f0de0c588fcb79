//! A table of the template created on a DynamoDB endpoint exactly as declared (keys, attribute
//! definitions, GSIs, billing mode, stream and TTL): the dev stack provisions with it, and
//! tests make their own tables with it (no second, hand-written schema).

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use serde_json::Value;

use crate::Template;

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("template.yaml: {0}")]
    Shape(String),
    #[error("DynamoDB")]
    Aws(#[source] Box<dyn std::error::Error + Send + Sync>),
}

fn aws(error: impl std::error::Error + Send + Sync + 'static) -> TableError {
    TableError::Aws(Box::new(error))
}

/// A list's items as the parameters' defaults choose them: an item behind a condition
/// (`!If [cond, item, !Ref AWS::NoValue]`) is its branch, or left out.
fn chosen_items<'a>(template: &Template, list: &'a Value) -> Result<Vec<&'a Value>, TableError> {
    let mut items = Vec::new();
    for item in list.as_array().into_iter().flatten() {
        match item.get("Fn::If") {
            Some(arguments) => items.extend(
                template
                    .if_branch(arguments)
                    .map_err(|e| TableError::Shape(e.to_string()))?,
            ),
            None => items.push(item),
        }
    }
    Ok(items)
}

fn text<'a>(value: &'a Value, field: &str) -> Result<&'a str, TableError> {
    value[field]
        .as_str()
        .ok_or_else(|| TableError::Shape(format!("expected a string at {field} in {value}")))
}

fn key_schema(value: &Value) -> Result<Vec<KeySchemaElement>, TableError> {
    value
        .as_array()
        .ok_or_else(|| TableError::Shape("KeySchema must be a list".into()))?
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(text(k, "AttributeName")?)
                .key_type(KeyType::from(text(k, "KeyType")?))
                .build()
                .map_err(aws)
        })
        .collect()
}

/// Whether the call created the table or found it there.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    AlreadyThere,
}

/// Creates the `AWS::DynamoDB::Table` `logical_id` of `template` as `table_name`: keys,
/// attribute definitions, GSIs, billing mode, stream and TTL exactly as declared.
pub async fn create_table(
    client: &Client,
    template: &Template,
    logical_id: &str,
    table_name: &str,
) -> Result<Outcome, TableError> {
    let resource = template
        .resource(logical_id)
        .ok_or_else(|| TableError::Shape(format!("template.yaml has no resource {logical_id}")))?;
    if resource["Type"] != "AWS::DynamoDB::Table" {
        return Err(TableError::Shape(format!(
            "{logical_id} is not an AWS::DynamoDB::Table"
        )));
    }
    let p = &resource["Properties"];
    let mut request = client
        .create_table()
        .table_name(table_name)
        .billing_mode(BillingMode::from(
            p["BillingMode"].as_str().unwrap_or("PAY_PER_REQUEST"),
        ))
        .set_key_schema(Some(key_schema(&p["KeySchema"])?));
    for a in chosen_items(template, &p["AttributeDefinitions"])? {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(text(a, "AttributeName")?)
                .attribute_type(ScalarAttributeType::from(text(a, "AttributeType")?))
                .build()
                .map_err(aws)?,
        );
    }
    for index in chosen_items(template, &p["GlobalSecondaryIndexes"])? {
        let projection = &index["Projection"];
        let non_key: Option<Vec<String>> = projection["NonKeyAttributes"].as_array().map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(text(index, "IndexName")?)
                .set_key_schema(Some(key_schema(&index["KeySchema"])?))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(
                            projection["ProjectionType"].as_str().unwrap_or("ALL"),
                        ))
                        .set_non_key_attributes(non_key)
                        .build(),
                )
                .build()
                .map_err(aws)?,
        );
    }
    if let Some(view) = p["StreamSpecification"]["StreamViewType"].as_str() {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view))
                .build()
                .map_err(aws)?,
        );
    }
    match request.send().await {
        Ok(_) => {}
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return Ok(Outcome::AlreadyThere)
        }
        Err(error) => return Err(aws(error)),
    }
    // CreateTable takes no TTL setting; it is a second call, as CloudFormation makes it.
    let ttl = &p["TimeToLiveSpecification"];
    if ttl["Enabled"] == true {
        client
            .update_time_to_live()
            .table_name(table_name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(text(ttl, "AttributeName")?)
                    .enabled(true)
                    .build()
                    .map_err(aws)?,
            )
            .send()
            .await
            .map_err(aws)?;
    }
    Ok(Outcome::Created)
}
