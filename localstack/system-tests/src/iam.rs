//! IAM as the least-privilege test sees it: every AWS request a function sends, turned into
//! the IAM actions and resources it needs ([`AccessRecorder`], an SDK interceptor for the
//! DynamoDB, SQS, IoT and EventBridge clients), and the functions' policies from
//! `template.yaml` ([`Policy`]) to check them against.
//!
//! The mapping follows the IAM service authorization reference: a `TransactWriteItems` is
//! authorised item by item (`Put` needs `dynamodb:PutItem`, `Update` `dynamodb:UpdateItem`,
//! `Delete` `dynamodb:DeleteItem`, `ConditionCheck` `dynamodb:ConditionCheckItem`), a `Query`
//! or `Scan` of an index needs the action on `table/<t>/index/<i>`, `SendMessageBatch` needs
//! `sqs:SendMessage`, IoT's `CreateKeysAndCertificate` and `DescribeEndpoint` take no resource
//! (`*`). A request the recorder does not know is recorded as `<service>:<Operation>` on `*`,
//! so it is only allowed by a policy that grants it on every resource: never silently.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, Input,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use serde_json::Value;

use bouquet_app::store::Store;
use bouquet_template::{Function, Template};

use crate::{emulator_sdk_config, TestCloud};

/// The account the emulator (and the dev stack's `AWS::AccountId`) uses.
pub const ACCOUNT: &str = "123456789012";

pub fn region() -> String {
    std::env::var("AWS_REGION").unwrap_or_else(|_| "eu-west-1".into())
}

pub fn arn(service: &str, resource: &str) -> String {
    format!("arn:aws:{service}:{}:{ACCOUNT}:{resource}", region())
}

pub fn table_arn(table: &str) -> String {
    if table.starts_with("arn:") {
        table.to_owned()
    } else {
        arn("dynamodb", &format!("table/{table}"))
    }
}

pub fn queue_arn(name: &str) -> String {
    arn("sqs", name)
}

pub fn event_bus_arn(name: &str) -> String {
    if name.starts_with("arn:") {
        name.to_owned()
    } else {
        arn("events", &format!("event-bus/{name}"))
    }
}

/// An SQS queue URL (`.../<account>/<name>`) as its ARN.
pub fn queue_url_arn(url: &str) -> String {
    let mut parts = url.trim_end_matches('/').rsplit('/');
    let name = parts.next().unwrap_or_default();
    let account = parts.next().unwrap_or(ACCOUNT);
    format!("arn:aws:sqs:{}:{account}:{name}", region())
}

/// One IAM action on one resource ARN (`*` for actions without resource-level permissions).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Access {
    pub action: String,
    pub resource: String,
}

impl Access {
    pub fn new(action: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            action: action.into(),
            resource: resource.into(),
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.action, self.resource)
    }
}

/// Records the IAM accesses of every request sent through the clients it is installed on
/// (once per operation, before any retry).
#[derive(Clone, Debug, Default)]
pub struct AccessRecorder {
    accesses: Arc<Mutex<Vec<Access>>>,
}

impl AccessRecorder {
    /// Forgets what was recorded so far.
    pub fn clear(&self) {
        if let Ok(mut accesses) = self.accesses.lock() {
            accesses.clear();
        }
    }

    /// What was recorded since the last `clear`/`take`, and forgets it.
    pub fn take(&self) -> BTreeSet<Access> {
        self.accesses
            .lock()
            .map(|mut accesses| accesses.drain(..).collect())
            .unwrap_or_default()
    }

    /// A DynamoDB client that records here.
    pub async fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }

    pub async fn sqs(&self) -> aws_sdk_sqs::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }

    pub async fn iot(&self) -> aws_sdk_iot::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_iot::Client::from_conf(
            aws_sdk_iot::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }

    /// API Gateway's management API on `endpoint` (the dev stack's WebSocket API).
    pub async fn connections(&self, endpoint: &str) -> aws_sdk_apigatewaymanagement::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_apigatewaymanagement::Client::from_conf(
            aws_sdk_apigatewaymanagement::config::Builder::from(&sdk)
                .endpoint_url(endpoint)
                .interceptor(self.clone())
                .build(),
        )
    }

    pub async fn cognito(&self) -> aws_sdk_cognitoidentityprovider::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_cognitoidentityprovider::Client::from_conf(
            aws_sdk_cognitoidentityprovider::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }

    pub async fn ses(&self) -> aws_sdk_sesv2::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_sesv2::Client::from_conf(
            aws_sdk_sesv2::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }

    /// S3, addressed by path as the functions address the emulator.
    pub async fn s3(&self) -> aws_sdk_s3::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&sdk)
                .force_path_style(true)
                .interceptor(self.clone())
                .build(),
        )
    }

    pub async fn eventbridge(&self) -> aws_sdk_eventbridge::Client {
        let sdk = emulator_sdk_config().await;
        aws_sdk_eventbridge::Client::from_conf(
            aws_sdk_eventbridge::config::Builder::from(&sdk)
                .interceptor(self.clone())
                .build(),
        )
    }
}

impl Intercept for AccessRecorder {
    fn name(&self) -> &'static str {
        "AccessRecorder"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let accesses = accesses(context.input()).unwrap_or_else(|| {
            let (service, operation) = cfg
                .load::<Metadata>()
                .map(|m| (m.service().to_owned(), m.name().to_owned()))
                .unwrap_or_else(|| ("unknown".into(), "Unknown".into()));
            vec![Access::new(
                format!("{}:{operation}", service_prefix(&service)),
                "*",
            )]
        });
        if let Ok(mut recorded) = self.accesses.lock() {
            recorded.extend(accesses);
        }
        Ok(())
    }
}

fn service_prefix(service: &str) -> String {
    match service {
        "EventBridge" => "events".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// The IAM accesses an operation input needs, for the operations the functions use; `None`
/// for any other.
pub fn accesses(input: &Input) -> Option<Vec<Access>> {
    dynamodb(input)
        .or_else(|| sqs(input))
        .or_else(|| iot(input))
        .or_else(|| connections(input))
        .or_else(|| eventbridge(input))
        .or_else(|| cognito(input))
        .or_else(|| ses(input))
        .or_else(|| s3(input))
}

/// S3's object operations: authorized on the object's ARN.
fn s3(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_s3::operation::delete_object::DeleteObjectInput;
    use aws_sdk_s3::operation::get_object::GetObjectInput;
    use aws_sdk_s3::operation::put_object::PutObjectInput;
    let object = |action: &str, bucket: Option<&str>, key: Option<&str>| {
        Some(vec![Access::new(
            action,
            format!(
                "arn:aws:s3:::{}/{}",
                bucket.unwrap_or_default(),
                key.unwrap_or_default()
            ),
        )])
    };
    if let Some(i) = input.downcast_ref::<GetObjectInput>() {
        return object("s3:GetObject", i.bucket(), i.key());
    }
    if let Some(i) = input.downcast_ref::<PutObjectInput>() {
        return object("s3:PutObject", i.bucket(), i.key());
    }
    let i = input.downcast_ref::<DeleteObjectInput>()?;
    object("s3:DeleteObject", i.bucket(), i.key())
}

/// SES v2's `SendEmail`: authorized on the sender's identity (and its configuration set).
fn ses(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_sesv2::operation::send_email::SendEmailInput;
    let i = input.downcast_ref::<SendEmailInput>()?;
    let mut accesses = vec![Access::new(
        "ses:SendEmail",
        arn(
            "ses",
            &format!("identity/{}", i.from_email_address().unwrap_or_default()),
        ),
    )];
    if let Some(set) = i.configuration_set_name() {
        accesses.push(Access::new(
            "ses:SendEmail",
            arn("ses", &format!("configuration-set/{set}")),
        ));
    }
    Some(accesses)
}

/// The user pool's Admin API: every action on `userpool/<id>`.
fn cognito(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_cognitoidentityprovider::operation::{
        admin_add_user_to_group::AdminAddUserToGroupInput, admin_create_user::AdminCreateUserInput,
        admin_get_user::AdminGetUserInput,
        admin_update_user_attributes::AdminUpdateUserAttributesInput,
    };
    let on_pool = |action: &str, pool: Option<&str>| {
        Some(vec![Access::new(
            format!("cognito-idp:{action}"),
            arn(
                "cognito-idp",
                &format!("userpool/{}", pool.unwrap_or_default()),
            ),
        )])
    };
    if let Some(i) = input.downcast_ref::<AdminGetUserInput>() {
        return on_pool("AdminGetUser", i.user_pool_id());
    }
    if let Some(i) = input.downcast_ref::<AdminCreateUserInput>() {
        return on_pool("AdminCreateUser", i.user_pool_id());
    }
    if let Some(i) = input.downcast_ref::<AdminUpdateUserAttributesInput>() {
        return on_pool("AdminUpdateUserAttributes", i.user_pool_id());
    }
    if let Some(i) = input.downcast_ref::<AdminAddUserToGroupInput>() {
        return on_pool("AdminAddUserToGroup", i.user_pool_id());
    }
    None
}

fn dynamodb(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_dynamodb::operation::{
        batch_get_item::BatchGetItemInput, batch_write_item::BatchWriteItemInput,
        delete_item::DeleteItemInput, get_item::GetItemInput, put_item::PutItemInput,
        query::QueryInput, scan::ScanInput, transact_get_items::TransactGetItemsInput,
        transact_write_items::TransactWriteItemsInput, update_item::UpdateItemInput,
    };
    let one = |action: &str, table: Option<&str>| {
        Some(vec![Access::new(
            action,
            table_arn(table.unwrap_or_default()),
        )])
    };
    let on_index = |action: &str, table: Option<&str>, index: Option<&str>| {
        let table = table_arn(table.unwrap_or_default());
        let resource = match index {
            Some(index) => format!("{table}/index/{index}"),
            None => table,
        };
        Some(vec![Access::new(action, resource)])
    };
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        return one("dynamodb:GetItem", i.table_name());
    }
    if let Some(i) = input.downcast_ref::<PutItemInput>() {
        return one("dynamodb:PutItem", i.table_name());
    }
    if let Some(i) = input.downcast_ref::<UpdateItemInput>() {
        return one("dynamodb:UpdateItem", i.table_name());
    }
    if let Some(i) = input.downcast_ref::<DeleteItemInput>() {
        return one("dynamodb:DeleteItem", i.table_name());
    }
    if let Some(i) = input.downcast_ref::<QueryInput>() {
        return on_index("dynamodb:Query", i.table_name(), i.index_name());
    }
    if let Some(i) = input.downcast_ref::<ScanInput>() {
        return on_index("dynamodb:Scan", i.table_name(), i.index_name());
    }
    if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        let tables = i.request_items().into_iter().flat_map(HashMap::keys);
        return Some(
            tables
                .map(|t| Access::new("dynamodb:BatchGetItem", table_arn(t)))
                .collect(),
        );
    }
    if let Some(i) = input.downcast_ref::<BatchWriteItemInput>() {
        let tables = i.request_items().into_iter().flat_map(HashMap::keys);
        return Some(
            tables
                .map(|t| Access::new("dynamodb:BatchWriteItem", table_arn(t)))
                .collect(),
        );
    }
    if let Some(i) = input.downcast_ref::<TransactWriteItemsInput>() {
        let mut found = Vec::new();
        for item in i.transact_items() {
            let parts = [
                ("dynamodb:PutItem", item.put().map(|p| p.table_name())),
                ("dynamodb:UpdateItem", item.update().map(|u| u.table_name())),
                ("dynamodb:DeleteItem", item.delete().map(|d| d.table_name())),
                (
                    "dynamodb:ConditionCheckItem",
                    item.condition_check().map(|c| c.table_name()),
                ),
            ];
            for (action, table) in parts {
                if let Some(table) = table {
                    found.push(Access::new(action, table_arn(table)));
                }
            }
        }
        return Some(found);
    }
    if let Some(i) = input.downcast_ref::<TransactGetItemsInput>() {
        return Some(
            i.transact_items()
                .iter()
                .filter_map(|item| item.get())
                .map(|g| Access::new("dynamodb:GetItem", table_arn(g.table_name())))
                .collect(),
        );
    }
    None
}

fn sqs(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_sqs::operation::{
        send_message::SendMessageInput, send_message_batch::SendMessageBatchInput,
    };
    let url = if let Some(i) = input.downcast_ref::<SendMessageInput>() {
        i.queue_url()
    } else if let Some(i) = input.downcast_ref::<SendMessageBatchInput>() {
        // IAM has no SendMessageBatch action: the batch is authorised as sqs:SendMessage.
        i.queue_url()
    } else {
        return None;
    };
    Some(vec![Access::new(
        "sqs:SendMessage",
        queue_url_arn(url.unwrap_or_default()),
    )])
}

fn iot(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_iot::operation::{
        attach_policy::AttachPolicyInput, attach_thing_principal::AttachThingPrincipalInput,
        create_keys_and_certificate::CreateKeysAndCertificateInput, create_thing::CreateThingInput,
        delete_certificate::DeleteCertificateInput, delete_thing::DeleteThingInput,
        describe_certificate::DescribeCertificateInput, describe_endpoint::DescribeEndpointInput,
        detach_policy::DetachPolicyInput, detach_thing_principal::DetachThingPrincipalInput,
        list_principal_things::ListPrincipalThingsInput,
        list_targets_for_policy::ListTargetsForPolicyInput,
        list_thing_principals::ListThingPrincipalsInput, list_things::ListThingsInput,
        update_certificate::UpdateCertificateInput,
    };
    let thing = |name: Option<&str>| arn("iot", &format!("thing/{}", name.unwrap_or_default()));
    let cert = |id: Option<&str>| arn("iot", &format!("cert/{}", id.unwrap_or_default()));
    let (action, resource) = if input.downcast_ref::<DescribeEndpointInput>().is_some() {
        ("iot:DescribeEndpoint", "*".to_owned())
    } else if input
        .downcast_ref::<CreateKeysAndCertificateInput>()
        .is_some()
    {
        ("iot:CreateKeysAndCertificate", "*".to_owned())
    } else if let Some(i) = input.downcast_ref::<CreateThingInput>() {
        ("iot:CreateThing", thing(i.thing_name()))
    } else if let Some(i) = input.downcast_ref::<DeleteThingInput>() {
        ("iot:DeleteThing", thing(i.thing_name()))
    } else if let Some(i) = input.downcast_ref::<AttachThingPrincipalInput>() {
        ("iot:AttachThingPrincipal", thing(i.thing_name()))
    } else if let Some(i) = input.downcast_ref::<DetachThingPrincipalInput>() {
        ("iot:DetachThingPrincipal", thing(i.thing_name()))
    } else if let Some(i) = input.downcast_ref::<AttachPolicyInput>() {
        // Authorised on the target the policy is attached to (here the certificate's ARN).
        (
            "iot:AttachPolicy",
            i.target().unwrap_or_default().to_owned(),
        )
    } else if let Some(i) = input.downcast_ref::<DetachPolicyInput>() {
        (
            "iot:DetachPolicy",
            i.target().unwrap_or_default().to_owned(),
        )
    } else if let Some(i) = input.downcast_ref::<UpdateCertificateInput>() {
        ("iot:UpdateCertificate", cert(i.certificate_id()))
    } else if let Some(i) = input.downcast_ref::<DeleteCertificateInput>() {
        ("iot:DeleteCertificate", cert(i.certificate_id()))
    } else if let Some(i) = input.downcast_ref::<DescribeCertificateInput>() {
        ("iot:DescribeCertificate", cert(i.certificate_id()))
    } else if let Some(i) = input.downcast_ref::<ListThingPrincipalsInput>() {
        ("iot:ListThingPrincipals", thing(i.thing_name()))
    } else if let Some(i) = input.downcast_ref::<ListTargetsForPolicyInput>() {
        (
            "iot:ListTargetsForPolicy",
            arn(
                "iot",
                &format!("policy/{}", i.policy_name().unwrap_or_default()),
            ),
        )
    } else if input.downcast_ref::<ListThingsInput>().is_some() {
        ("iot:ListThings", "*".to_owned())
    } else if input.downcast_ref::<ListPrincipalThingsInput>().is_some() {
        ("iot:ListPrincipalThings", "*".to_owned())
    } else {
        return None;
    };
    Some(vec![Access::new(action, resource)])
}

/// `PostToConnection` is authorised on the connection's ARN; the dev stack's API is
/// `local-ws`, stage `live`.
fn connections(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionInput;
    let i = input.downcast_ref::<PostToConnectionInput>()?;
    Some(vec![Access::new(
        "execute-api:ManageConnections",
        arn(
            "execute-api",
            &format!(
                "local-ws/live/POST/@connections/{}",
                i.connection_id().unwrap_or_default()
            ),
        ),
    )])
}

fn eventbridge(input: &Input) -> Option<Vec<Access>> {
    use aws_sdk_eventbridge::operation::put_events::PutEventsInput;
    let i = input.downcast_ref::<PutEventsInput>()?;
    Some(
        i.entries()
            .iter()
            .map(|e| {
                Access::new(
                    "events:PutEvents",
                    event_bus_arn(e.event_bus_name().unwrap_or("default")),
                )
            })
            .collect(),
    )
}

/// One policy statement, resolved to ARNs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub allow: bool,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
}

/// A function's `Policies`, resolved to this test's resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub statements: Vec<Statement>,
}

/// Local names of the template's resources, as `!Ref X`, `!GetAtt X.Attr` and `${X.Attr}`
/// resolve them (see `devstack::provision::resolve`).
pub type Names = HashMap<String, String>;

impl Policy {
    /// `function`'s `Policies`: inline documents, and the SAM policy templates the template
    /// uses, by their documented actions. Anything else is an error (teach this function
    /// what it grants), never an empty grant.
    pub fn of(template: &Template, function: &Function, names: &Names) -> Result<Self, String> {
        let resolve = |v: &Value| devstack::provision::resolve(template, v, names);
        let mut statements = Vec::new();
        let policies = match &function.properties["Policies"] {
            Value::Null => Vec::new(),
            Value::Array(list) => list.clone(),
            other => vec![other.clone()],
        };
        for policy in policies {
            let Value::Object(map) = &policy else {
                return Err(format!(
                    "{}: policy {policy} (a managed policy?) is not understood",
                    function.logical_id
                ));
            };
            if map.contains_key("Statement") {
                let list = match &map["Statement"] {
                    Value::Array(list) => list.clone(),
                    one => vec![one.clone()],
                };
                for statement in list {
                    // `!If [Condition, statement, !Ref AWS::NoValue]`: the branch the
                    // defaults choose (the dev stack's and these tests' parameters).
                    let statement = match statement.get("Fn::If") {
                        Some(arguments) => match template
                            .if_branch(arguments)
                            .map_err(|e| format!("{}: {e}", function.logical_id))?
                        {
                            Some(chosen) => chosen.clone(),
                            None => continue,
                        },
                        None => statement,
                    };
                    statements.push(
                        inline_statement(&statement, &resolve)
                            .map_err(|e| format!("{}: {e} in {statement}", function.logical_id))?,
                    );
                }
                continue;
            }
            for (name, parameters) in map {
                statements.push(sam_template(name, parameters, &resolve).ok_or_else(|| {
                    format!(
                        "{}: SAM policy template {name} is not understood",
                        function.logical_id
                    )
                })?);
            }
        }
        Ok(Self { statements })
    }

    /// Whether some Allow statement grants `access` and no Deny statement refuses it.
    pub fn allows(&self, access: &Access) -> bool {
        let matches = |s: &Statement| {
            s.actions
                .iter()
                .any(|a| glob(&a.to_ascii_lowercase(), &access.action.to_ascii_lowercase()))
                && s.resources.iter().any(|r| glob(r, &access.resource))
        };
        self.statements.iter().any(|s| s.allow && matches(s))
            && !self.statements.iter().any(|s| !s.allow && matches(s))
    }

    /// The accesses of `accesses` this policy does not allow.
    pub fn missing<'a>(&self, accesses: impl IntoIterator<Item = &'a Access>) -> Vec<Access> {
        accesses
            .into_iter()
            .filter(|a| !self.allows(a))
            .cloned()
            .collect()
    }

    /// The same policy without `action` (for checking that the check can fail).
    pub fn without_action(&self, action: &str) -> Self {
        Self {
            statements: self
                .statements
                .iter()
                .map(|s| Statement {
                    actions: s
                        .actions
                        .iter()
                        .filter(|a| !a.eq_ignore_ascii_case(action))
                        .cloned()
                        .collect(),
                    ..s.clone()
                })
                .collect(),
        }
    }
}

fn strings(value: &Value, resolve: &dyn Fn(&Value) -> String) -> Vec<String> {
    match value {
        Value::Array(list) => list.iter().map(resolve).collect(),
        Value::Null => Vec::new(),
        one => vec![resolve(one)],
    }
}

fn inline_statement(
    statement: &Value,
    resolve: &dyn Fn(&Value) -> String,
) -> Result<Statement, String> {
    if !statement["NotAction"].is_null() || !statement["NotResource"].is_null() {
        return Err("NotAction/NotResource is not supported".into());
    }
    if !statement["Condition"].is_null() {
        return Err("conditions are not supported".into());
    }
    let allow = match statement["Effect"].as_str() {
        Some("Allow") => true,
        Some("Deny") => false,
        _ => return Err("Effect must be Allow or Deny".into()),
    };
    Ok(Statement {
        allow,
        actions: strings(&statement["Action"], resolve),
        resources: strings(&statement["Resource"], resolve),
    })
}

/// SAM policy templates, by the actions their documentation lists (narrowed to the ones
/// these functions need: SQSSendMessagePolicy also grants `sqs:SendMessage*`).
fn sam_template(
    name: &str,
    parameters: &Value,
    resolve: &dyn Fn(&Value) -> String,
) -> Option<Statement> {
    let (actions, resources) = match name {
        "SQSSendMessagePolicy" => (
            vec!["sqs:SendMessage".to_owned()],
            vec![queue_arn(&resolve(&parameters["QueueName"]))],
        ),
        "SQSPollerPolicy" => (
            [
                "sqs:ChangeMessageVisibility",
                "sqs:ChangeMessageVisibilityBatch",
                "sqs:DeleteMessage",
                "sqs:DeleteMessageBatch",
                "sqs:GetQueueAttributes",
                "sqs:ReceiveMessage",
            ]
            .map(str::to_owned)
            .to_vec(),
            vec![queue_arn(&resolve(&parameters["QueueName"]))],
        ),
        "EventBridgePutEventsPolicy" => (
            vec!["events:PutEvents".to_owned()],
            vec![event_bus_arn(&resolve(&parameters["EventBusName"]))],
        ),
        _ => return None,
    };
    Some(Statement {
        allow: true,
        actions,
        resources,
    })
}

/// IAM's wildcard match: `*` any run of characters, `?` one character.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

impl TestCloud {
    /// A test cloud whose app (the store every handler uses) sends DynamoDB requests through
    /// `recorder` as well as the call counter. `cloud.client`, the test's own view of the
    /// table (e.g. `items()`), does not record.
    pub async fn recording(recorder: &AccessRecorder) -> Self {
        let mut cloud = Self::new().await;
        let sdk = emulator_sdk_config().await;
        let client = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .interceptor(cloud.calls.clone())
                .interceptor(recorder.clone())
                .build(),
        );
        cloud.app.store =
            Store::new(client, cloud.table.clone()).with_live_table(cloud.live_table.clone());
        cloud
    }
}
