//! The template's user pool on the emulator (moto's `cognito-idp`): the pool with its sign-up
//! rules and custom attributes, the app client with its read/write attributes, and the groups.
//! Local sign-up and sign-in then run against it and its tokens validate against its JWKS, as
//! deployed; only the hosts differ (the JWKS is served by the emulator).

use aws_sdk_cognitoidentityprovider::types::{
    AdminCreateUserConfigType, AttributeDataType, ExplicitAuthFlowsType, PasswordPolicyType,
    PreventUserExistenceErrorTypes, SchemaAttributeType, UserAttributeUpdateSettingsType,
    UserPoolPolicyType, UsernameAttributeType, UsernameConfigurationType, VerifiedAttributeType,
};
use aws_sdk_cognitoidentityprovider::Client;
use serde_json::Value;

use bouquet_template::Template;

use crate::provisioned::{aws, Names, ProvisionError};

/// Every item of a Cognito list call, all its pages read (60 a page, Cognito's most). A macro:
/// the SDK's paginators share no trait a function could take.
macro_rules! every_item {
    ($list:expr) => {
        $list
            .max_results(60)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(aws)?
    };
}

/// A provisioned pool, as tokens and the functions see it.
#[derive(Clone, Debug)]
pub struct LocalUserPool {
    pub id: String,
    pub client_id: String,
    /// `iss` of its tokens: `https://cognito-idp.{region}.amazonaws.com/{id}`, as deployed.
    pub issuer: String,
    /// Its keys, served by the emulator.
    pub jwks_url: String,
    endpoint: String,
}

impl LocalUserPool {
    /// The pool `provision_resources` recorded in `names`, if the template has one.
    pub fn from_names(names: &Names) -> Option<Self> {
        let id = names.get("UserPool")?.clone();
        let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into());
        let endpoint =
            std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:4566".into());
        Some(Self {
            client_id: names.get("UserPoolClient")?.clone(),
            issuer: format!("https://cognito-idp.{region}.amazonaws.com/{id}"),
            jwks_url: format!(
                "{}/{id}/.well-known/jwks.json",
                endpoint.trim_end_matches('/')
            ),
            endpoint,
            id,
        })
    }

    /// Where Cognito's API answers for this pool (the emulator).
    pub fn api_endpoint(&self) -> &str {
        &self.endpoint
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn resource_of_type<'a>(template: &'a Template, kind: &str) -> Option<(&'a str, &'a Value)> {
    template.resources().find(|(_, r)| r["Type"] == kind)
}

/// Creates the template's `AWS::Cognito::UserPool` as `name` (or finds it: pool names are not
/// unique in Cognito, so the first of that name is taken), its client and its groups; records
/// `UserPool`, `UserPool.Arn` and `UserPoolClient` in `names`.
pub async fn create_user_pool(
    client: &Client,
    template: &Template,
    name: &str,
    names: &mut Names,
) -> Result<(), ProvisionError> {
    let Some((pool_id_logical, pool)) = resource_of_type(template, "AWS::Cognito::UserPool") else {
        return Ok(());
    };
    let p = &pool["Properties"];
    let existing = every_item!(client.list_user_pools())
        .into_iter()
        .find(|pool| pool.name() == Some(name))
        .and_then(|pool| pool.id);
    let pool_id = match existing {
        Some(id) => id,
        None => {
            let mut request = client
                .create_user_pool()
                .pool_name(name)
                .admin_create_user_config(
                    AdminCreateUserConfigType::builder()
                        .allow_admin_create_user_only(
                            p["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"]
                                .as_bool()
                                .unwrap_or(false),
                        )
                        .build(),
                )
                .username_configuration(
                    UsernameConfigurationType::builder()
                        .case_sensitive(
                            p["UsernameConfiguration"]["CaseSensitive"]
                                .as_bool()
                                .unwrap_or(true),
                        )
                        .build()
                        .map_err(aws)?,
                );
            for attribute in strings(&p["UsernameAttributes"]) {
                request =
                    request.username_attributes(UsernameAttributeType::from(attribute.as_str()));
            }
            let require_verification = strings(
                &p["UserAttributeUpdateSettings"]["AttributesRequireVerificationBeforeUpdate"],
            );
            if !require_verification.is_empty() {
                request = request.user_attribute_update_settings(
                    UserAttributeUpdateSettingsType::builder()
                        .set_attributes_require_verification_before_update(Some(
                            require_verification
                                .iter()
                                .map(|a| VerifiedAttributeType::from(a.as_str()))
                                .collect(),
                        ))
                        .build(),
                );
            }
            for attribute in strings(&p["AutoVerifiedAttributes"]) {
                request = request
                    .auto_verified_attributes(VerifiedAttributeType::from(attribute.as_str()));
            }
            if let Some(length) = p["Policies"]["PasswordPolicy"]["MinimumLength"].as_i64() {
                request = request.policies(
                    UserPoolPolicyType::builder()
                        .password_policy(
                            PasswordPolicyType::builder()
                                .minimum_length(length as i32)
                                .build(),
                        )
                        .build(),
                );
            }
            for attribute in p["Schema"].as_array().into_iter().flatten() {
                request = request.schema(
                    SchemaAttributeType::builder()
                        .set_name(attribute["Name"].as_str().map(str::to_owned))
                        .attribute_data_type(AttributeDataType::from(
                            attribute["AttributeDataType"].as_str().unwrap_or("String"),
                        ))
                        .mutable(attribute["Mutable"].as_bool().unwrap_or(true))
                        .build(),
                );
            }
            request
                .send()
                .await
                .map_err(aws)?
                .user_pool
                .and_then(|pool| pool.id)
                .ok_or_else(|| ProvisionError::Shape("CreateUserPool returned no id".into()))?
        }
    };
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into());
    names.insert(pool_id_logical.to_owned(), pool_id.clone());
    names.insert(
        format!("{pool_id_logical}.Arn"),
        format!("arn:aws:cognito-idp:{region}:123456789012:userpool/{pool_id}"),
    );
    for (logical, resource) in template.resources() {
        match resource["Type"].as_str() {
            Some("AWS::Cognito::UserPoolClient") => {
                let client_id =
                    create_client(client, &pool_id, &resource["Properties"], name).await?;
                names.insert(logical.to_owned(), client_id);
            }
            Some("AWS::Cognito::UserPoolGroup") => {
                let p = &resource["Properties"];
                let group = p["GroupName"]
                    .as_str()
                    .ok_or_else(|| ProvisionError::Shape(format!("{logical} has no GroupName")))?;
                let created = client
                    .create_group()
                    .user_pool_id(&pool_id)
                    .group_name(group)
                    .set_description(p["Description"].as_str().map(str::to_owned))
                    .set_precedence(p["Precedence"].as_i64().map(|n| n as i32))
                    .send()
                    .await;
                match created {
                    Ok(_) => {}
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|e| e.is_group_exists_exception()) => {}
                    Err(e) => return Err(aws(e)),
                }
                names.insert(logical.to_owned(), group.to_owned());
            }
            _ => {}
        }
    }
    Ok(())
}

async fn create_client(
    client: &Client,
    pool_id: &str,
    p: &Value,
    name: &str,
) -> Result<String, ProvisionError> {
    let existing = every_item!(client.list_user_pool_clients().user_pool_id(pool_id))
        .into_iter()
        .find(|c| c.client_name() == Some(name))
        .and_then(|c| c.client_id);
    if let Some(id) = existing {
        return Ok(id);
    }
    let mut request = client
        .create_user_pool_client()
        .user_pool_id(pool_id)
        .client_name(name)
        .generate_secret(p["GenerateSecret"].as_bool().unwrap_or(false))
        .set_read_attributes(Some(strings(&p["ReadAttributes"])).filter(|a| !a.is_empty()))
        .set_write_attributes(Some(strings(&p["WriteAttributes"])).filter(|a| !a.is_empty()));
    for flow in strings(&p["ExplicitAuthFlows"]) {
        request = request.explicit_auth_flows(ExplicitAuthFlowsType::from(flow.as_str()));
    }
    if let Some(mode) = p["PreventUserExistenceErrors"].as_str() {
        request = request.prevent_user_existence_errors(PreventUserExistenceErrorTypes::from(mode));
    }
    request
        .send()
        .await
        .map_err(aws)?
        .user_pool_client
        .and_then(|c| c.client_id)
        .ok_or_else(|| ProvisionError::Shape("CreateUserPoolClient returned no id".into()))
}
