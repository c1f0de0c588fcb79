//! Creates the resources of `template.yaml` on the emulator, from the template's own
//! definitions (no second, hand-written schema). Idempotent: what exists is left alone.

use aws_sdk_dynamodb::Client;
use serde_json::Value;

use bouquet_template::Template;

pub(crate) use crate::provisioned::{aws, made_or_exists};
pub use crate::provisioned::{Names, ProvisionError};

pub use bouquet_template::dynamodb::Outcome;

/// Creates the `AWS::DynamoDB::Table` `logical_id` of `template` as `table_name`
/// ([`bouquet_template::dynamodb::create_table`]).
pub async fn create_table(
    client: &Client,
    template: &Template,
    logical_id: &str,
    table_name: &str,
) -> Result<Outcome, ProvisionError> {
    bouquet_template::dynamodb::create_table(client, template, logical_id, table_name)
        .await
        .map_err(|error| match error {
            bouquet_template::dynamodb::TableError::Shape(shape) => ProvisionError::Shape(shape),
            bouquet_template::dynamodb::TableError::Aws(error) => ProvisionError::Aws(error),
        })
}

/// The name a template resource gets locally: `{stack}-{LogicalId}`.
pub fn local_name(stack: &str, logical_id: &str) -> String {
    format!("{stack}-{logical_id}")
}

/// Resolves a template value (`!Ref`, `!GetAtt`, `!Sub`, literals) to its local meaning:
/// resources by `names` (logical id → local name), parameters by their defaults.
pub fn resolve(
    template: &Template,
    value: &Value,
    names: &std::collections::HashMap<String, String>,
) -> String {
    let lookup = |name: &str| -> String {
        match name {
            "AWS::Region" => std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into()),
            "AWS::AccountId" => "123456789012".into(),
            "AWS::Partition" => "aws".into(),
            "AWS::StackName" => "bouquet-local".into(),
            _ => names
                .get(name)
                .cloned()
                .or_else(|| template.parameter_default(name))
                .unwrap_or_else(|| name.to_owned()),
        }
    };
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Object(map) => {
            if let Some(Value::String(name)) = map.get("Ref") {
                lookup(name)
            } else if let Some(Value::Array(parts)) = map.get("Fn::GetAtt") {
                let path: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                let path = path.join(".");
                names.get(&path).cloned().unwrap_or_else(|| {
                    format!(
                        "arn:aws:local:{}:123456789012:{path}",
                        lookup("AWS::Region")
                    )
                })
            } else if let Some(arguments) = map.get("Fn::If") {
                match template.if_branch(arguments) {
                    Ok(Some(chosen)) => resolve(template, chosen, names),
                    Ok(None) => String::new(),
                    Err(error) => {
                        tracing::error!(%error, "template.yaml: an Fn::If the dev stack cannot resolve");
                        value.to_string()
                    }
                }
            } else if let Some(Value::String(text)) = map.get("Fn::Sub") {
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(start) = rest.find("${") {
                    out.push_str(&rest[..start]);
                    let Some(end) = rest[start..].find('}') else {
                        break;
                    };
                    let name = &rest[start + 2..start + end];
                    // `${!Literal}` is CloudFormation's escape for a literal `${Literal}`
                    // (IoT policy variables use it).
                    if let Some(literal) = name.strip_prefix('!') {
                        out.push_str(&format!("${{{literal}}}"));
                        rest = &rest[start + end + 1..];
                        continue;
                    }
                    out.push_str(
                        &names
                            .get(name)
                            .cloned()
                            .unwrap_or_else(|| lookup(name.split('.').next().unwrap_or(name))),
                    );
                    rest = &rest[start + end + 1..];
                }
                out.push_str(rest);
                out
            } else {
                value.to_string()
            }
        }
        other => other.to_string(),
    }
}

/// The URL of the provisioned queue whose ARN is `arn` (SQS calls take URLs, the template
/// names queues by ARN).
pub fn queue_url_of_arn(names: &Names, arn: &str) -> Option<String> {
    names
        .iter()
        .find(|(k, v)| k.ends_with(".Arn") && v.as_str() == arn)
        .and_then(|(k, _)| names.get(k.trim_end_matches(".Arn")))
        .cloned()
}

fn arn(service: &str, name: &str) -> String {
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into());
    format!("arn:aws:{service}:{region}:123456789012:{name}")
}

/// Creates an `AWS::SQS::Queue` (idempotent: SQS returns the existing queue).
pub async fn create_queue(
    client: &aws_sdk_sqs::Client,
    template: &Template,
    logical_id: &str,
    name: &str,
    names: &mut Names,
) -> Result<(), ProvisionError> {
    let properties = &template
        .resource(logical_id)
        .ok_or_else(|| ProvisionError::Missing(logical_id.into()))?["Properties"];
    let mut request = client.create_queue().queue_name(name);
    for (property, attribute) in [
        (
            "MessageRetentionPeriod",
            aws_sdk_sqs::types::QueueAttributeName::MessageRetentionPeriod,
        ),
        (
            "VisibilityTimeout",
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
        ),
    ] {
        if !properties[property].is_null() {
            request =
                request.attributes(attribute, resolve(template, &properties[property], names));
        }
    }
    let redrive = &properties["RedrivePolicy"];
    if !redrive.is_null() {
        // The dead-letter queue must exist first: provision_resources creates queues
        // without a redrive policy before the others.
        let policy = serde_json::json!({
            "deadLetterTargetArn": resolve(template, &redrive["deadLetterTargetArn"], names),
            "maxReceiveCount": resolve(template, &redrive["maxReceiveCount"], names),
        });
        request = request.attributes(
            aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
            policy.to_string(),
        );
    }
    let url = request
        .send()
        .await
        .map_err(aws)?
        .queue_url
        .unwrap_or_default();
    names.insert(logical_id.into(), url);
    names.insert(format!("{logical_id}.Arn"), arn("sqs", name));
    names.insert(format!("{logical_id}.QueueName"), name.into());
    Ok(())
}

/// Creates an `AWS::S3::Bucket`, named `name` in lower case (idempotent: an existing bucket
/// of ours is kept).
pub async fn create_bucket(
    client: &aws_sdk_s3::Client,
    logical_id: &str,
    name: &str,
    names: &mut Names,
) -> Result<(), ProvisionError> {
    let bucket = name.to_ascii_lowercase();
    let mut request = client.create_bucket().bucket(&bucket);
    // As on AWS, a bucket outside us-east-1 names its region.
    let region = client.config().region().map(|r| r.to_string());
    if let Some(region) = region.filter(|r| r != "us-east-1") {
        request = request.create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(
                    region.as_str(),
                ))
                .build(),
        );
    }
    made_or_exists(request.send().await, |e| {
        e.is_bucket_already_owned_by_you() || e.is_bucket_already_exists()
    })?;
    names.insert(logical_id.into(), bucket.clone());
    names.insert(
        format!("{logical_id}.Arn"),
        format!("arn:aws:s3:::{bucket}"),
    );
    Ok(())
}

/// Sends a bucket's `ObjectCreated` events to the queues its `NotificationConfiguration`
/// names, with their key filters, as S3 does once the stack is deployed.
pub async fn configure_bucket_notifications(
    client: &aws_sdk_s3::Client,
    template: &Template,
    logical_id: &str,
    names: &Names,
) -> Result<(), ProvisionError> {
    use aws_sdk_s3::types::{
        Event, FilterRule, FilterRuleName, NotificationConfiguration,
        NotificationConfigurationFilter, QueueConfiguration, S3KeyFilter,
    };
    let properties = &template
        .resource(logical_id)
        .ok_or_else(|| ProvisionError::Missing(logical_id.into()))?["Properties"];
    let Some(queues) = properties["NotificationConfiguration"]["QueueConfigurations"].as_array()
    else {
        return Ok(());
    };
    let mut configuration = NotificationConfiguration::builder();
    for queue in queues {
        let rules = queue["Filter"]["S3Key"]["Rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|rule| {
                FilterRule::builder()
                    .name(FilterRuleName::from(
                        rule["Name"].as_str().unwrap_or_default(),
                    ))
                    .value(resolve(template, &rule["Value"], names))
                    .build()
            });
        let filter = NotificationConfigurationFilter::builder()
            .key(
                S3KeyFilter::builder()
                    .set_filter_rules(Some(rules.collect()))
                    .build(),
            )
            .build();
        configuration = configuration.queue_configurations(
            QueueConfiguration::builder()
                .queue_arn(resolve(template, &queue["Queue"], names))
                .events(Event::from(queue["Event"].as_str().unwrap_or_default()))
                .filter(filter)
                .build()
                .map_err(|e| ProvisionError::Shape(e.to_string()))?,
        );
    }
    client
        .put_bucket_notification_configuration()
        .bucket(names.get(logical_id).cloned().unwrap_or_default())
        .notification_configuration(configuration.build())
        .send()
        .await
        .map_err(aws)?;
    Ok(())
}

/// Creates an `AWS::Events::EventBus` (idempotent).
pub async fn create_event_bus(
    client: &aws_sdk_eventbridge::Client,
    logical_id: &str,
    name: &str,
    names: &mut Names,
) -> Result<(), ProvisionError> {
    made_or_exists(client.create_event_bus().name(name).send().await, |e| {
        e.is_resource_already_exists_exception()
    })?;
    names.insert(logical_id.into(), name.into());
    names.insert(format!("{logical_id}.Name"), name.into());
    names.insert(
        format!("{logical_id}.Arn"),
        arn("events", &format!("event-bus/{name}")),
    );
    Ok(())
}

/// Records a table's names and stream ARN.
pub async fn table_names(
    client: &Client,
    logical_id: &str,
    name: &str,
    names: &mut Names,
) -> Result<(), ProvisionError> {
    let table = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .map_err(aws)?
        .table;
    names.insert(logical_id.into(), name.into());
    names.insert(
        format!("{logical_id}.Arn"),
        arn("dynamodb", &format!("table/{name}")),
    );
    if let Some(stream) = table.and_then(|t| t.latest_stream_arn) {
        names.insert(format!("{logical_id}.StreamArn"), stream);
    }
    Ok(())
}

/// The stack's email sender, verified as an operator verifies it in SES: the emulator, as SES
/// does, refuses mail from an identity that is not. Idempotent.
pub async fn verify_sender(
    client: &aws_sdk_sesv2::Client,
    sender: &str,
) -> Result<(), ProvisionError> {
    let sent = client
        .create_email_identity()
        .email_identity(sender)
        .send()
        .await;
    made_or_exists(sent, |e| e.is_already_exists_exception())
}

/// Every resource of the template the emulator serves: the user pool, tables, queues, buses.
/// Idempotent.
pub async fn provision_resources(
    template: &Template,
    stack: &str,
    sdk: &aws_config::SdkConfig,
) -> Result<Names, ProvisionError> {
    let dynamodb = Client::new(sdk);
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let s3 = bouquet_photos::s3::client(sdk);
    let mut names = Names::new();
    crate::cognito::create_user_pool(
        &aws_sdk_cognitoidentityprovider::Client::new(sdk),
        template,
        &local_name(stack, "UserPool"),
        &mut names,
    )
    .await?;
    if let Some(sender) = template.parameter_default("EmailSender") {
        verify_sender(&aws_sdk_sesv2::Client::new(sdk), &sender).await?;
    }
    let mut resources: Vec<(String, Value)> = template
        .resources()
        .map(|(id, r)| (id.to_owned(), r.clone()))
        .collect();
    // Dead-letter queues before the queues that name them.
    resources.sort_by_key(|(_, r)| !r["Properties"]["RedrivePolicy"].is_null());
    for (id, resource) in &resources {
        let name = local_name(stack, id);
        match resource["Type"].as_str() {
            Some("AWS::DynamoDB::Table") => {
                create_table(&dynamodb, template, id, &name).await?;
                table_names(&dynamodb, id, &name, &mut names).await?;
            }
            Some("AWS::SQS::Queue") => create_queue(&sqs, template, id, &name, &mut names).await?,
            Some("AWS::Events::EventBus") => {
                create_event_bus(&events, id, &name, &mut names).await?
            }
            Some("AWS::S3::Bucket") => create_bucket(&s3, id, &name, &mut names).await?,
            _ => {}
        }
    }
    // Once the queues exist, the buckets' events go to them.
    for (id, resource) in &resources {
        if resource["Type"] == "AWS::S3::Bucket" {
            configure_bucket_notifications(&s3, template, id, &names).await?;
        }
    }
    Ok(names)
}
