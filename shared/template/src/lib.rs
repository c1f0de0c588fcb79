//! Reads `template.yaml`, the SAM template that is the single source of wiring: which
//! functions exist, their routes and environment, and the table definition. The dev stack
//! provisions from it and the tests check the code against it.
//!
//! CloudFormation short tags (`!Ref X`, `!GetAtt A.B`, `!Sub s`) are turned into their long
//! JSON forms (`{"Ref": "X"}`, `{"Fn::GetAtt": ["A", "B"]}`, `{"Fn::Sub": "s"}`), and the
//! `AWS::LanguageExtensions` loops (`Fn::ForEach::Name`) are expanded as CloudFormation expands
//! them ([`expand_loops`]): every reader sees the resources a deployment creates.

#[cfg(feature = "dynamodb")]
pub mod dynamodb;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot read {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("template.yaml is not valid YAML: {0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("template.yaml: {0}")]
    Shape(String),
}

/// One `AWS::Serverless::Function`.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub logical_id: String,
    /// `Metadata.BuildProperties.Binary`: the crate under `functions/` and its binary.
    pub binary: String,
    pub properties: Value,
}

/// The template's WebSocket API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebSocketApi {
    pub logical_id: String,
    /// E.g. `$request.body.action`.
    pub route_selection: String,
    pub routes: Vec<WebSocketRoute>,
    /// The binary of the `$connect` authorizer.
    pub authorizer: Option<String>,
}

/// One route: its key (`$connect`, `subscribe`, ...), the binary its integration invokes,
/// and whether the function's answer goes back on the connection (a route response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebSocketRoute {
    pub key: String,
    pub binary: String,
    pub two_way: bool,
}

/// One `HttpApi` event of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRoute {
    pub method: String,
    pub path: String,
    pub function: String,
    pub binary: String,
    /// Whether the JWT authorizer guards the route (the API's default unless `NONE`).
    pub authorized: bool,
}

#[derive(Clone, Debug)]
pub struct Template {
    root: Value,
}

/// The repository's `template.yaml`.
pub fn repository_template_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml")
}

impl Template {
    pub fn load(path: &Path) -> Result<Self, TemplateError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| TemplateError::Io(path.to_owned(), e))?;
        Self::parse(&text)
    }

    pub fn repository() -> Result<Self, TemplateError> {
        Self::load(&repository_template_path())
    }

    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let yaml: serde_norway::Value = serde_norway::from_str(text)?;
        let mut root = to_json(yaml);
        for section in ["Conditions", "Resources", "Outputs"] {
            if let Some(entries) = root.get_mut(section) {
                *entries = expand_loops(entries)?;
            }
        }
        Ok(Self { root })
    }

    pub fn root(&self) -> &Value {
        &self.root
    }

    pub fn resources(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.root["Resources"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }

    pub fn resource(&self, logical_id: &str) -> Option<&Value> {
        self.root["Resources"].get(logical_id)
    }

    pub fn resources_of_type<'a>(
        &'a self,
        kind: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        self.resources().filter(move |(_, r)| r["Type"] == kind)
    }

    /// The template as deployed with `overrides` (`Name=Value`, as `sam deploy
    /// --parameter-overrides` takes them): each becomes its parameter's default, so every
    /// reader of the template (the functions' environment, the limits) follows it.
    pub fn with_parameter_overrides(mut self, overrides: &[String]) -> Result<Self, TemplateError> {
        for pair in overrides {
            let (name, value) = pair.split_once('=').ok_or_else(|| {
                TemplateError::Shape(format!("parameter override {pair:?} is not Name=Value"))
            })?;
            let parameter = self.root["Parameters"]
                .get_mut(name)
                .ok_or_else(|| TemplateError::Shape(format!("no parameter {name}")))?;
            parameter["Default"] = Value::String(value.to_owned());
        }
        Ok(self)
    }

    /// A parameter's default value, as a string.
    pub fn parameter_default(&self, name: &str) -> Option<String> {
        match &self.root["Parameters"][name]["Default"] {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The template's `Rules` that refuse `parameters` (each missing one takes its default),
    /// as CloudFormation checks them before it creates anything: the description of every
    /// failed assertion whose rule applies. Understands what rules may use here: `Ref` to a
    /// parameter, `Condition`, `Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, `Fn::Contains`.
    pub fn rule_failures(
        &self,
        parameters: &HashMap<&str, &str>,
    ) -> Result<Vec<String>, TemplateError> {
        let mut failures = Vec::new();
        let Some(rules) = self.root["Rules"].as_object() else {
            return Ok(failures);
        };
        for (name, rule) in rules {
            let applies = match &rule["RuleCondition"] {
                Value::Null => true,
                condition => self.truth(condition, parameters)?,
            };
            if !applies {
                continue;
            }
            for assertion in rule["Assertions"].as_array().into_iter().flatten() {
                if !self.truth(&assertion["Assert"], parameters)? {
                    failures.push(format!(
                        "{name}: {}",
                        assertion["AssertDescription"]
                            .as_str()
                            .unwrap_or("assertion failed")
                    ));
                }
            }
        }
        Ok(failures)
    }

    /// Whether the template's condition `name` holds for `parameters` (defaults for the rest).
    pub fn condition(
        &self,
        name: &str,
        parameters: &HashMap<&str, &str>,
    ) -> Result<bool, TemplateError> {
        let condition = &self.root["Conditions"][name];
        if condition.is_null() {
            return Err(TemplateError::Shape(format!("no condition {name}")));
        }
        self.truth(condition, parameters)
    }

    /// The branch `Fn::If` `[condition, then, else]` takes with every parameter at its
    /// default (how the dev stack and the tests run); `None` for `!Ref AWS::NoValue`.
    pub fn if_branch<'a>(&self, arguments: &'a Value) -> Result<Option<&'a Value>, TemplateError> {
        self.if_branch_with(arguments, &HashMap::new())
    }

    /// The branch `Fn::If` takes for `parameters` (defaults for the rest).
    pub fn if_branch_with<'a>(
        &self,
        arguments: &'a Value,
        parameters: &HashMap<&str, &str>,
    ) -> Result<Option<&'a Value>, TemplateError> {
        let Some([Value::String(condition), then, otherwise]) =
            arguments.as_array().map(Vec::as_slice)
        else {
            return Err(TemplateError::Shape(format!(
                "Fn::If takes [condition, then, else]: {arguments}"
            )));
        };
        let chosen = if self.condition(condition, parameters)? {
            then
        } else {
            otherwise
        };
        Ok((chosen["Ref"] != "AWS::NoValue").then_some(chosen))
    }

    fn rule_value(
        &self,
        value: &Value,
        parameters: &HashMap<&str, &str>,
    ) -> Result<Value, TemplateError> {
        match value {
            Value::Object(map) if map.len() == 1 => {
                let (function, argument) = map.iter().next().expect("one entry");
                let arguments = || {
                    argument.as_array().ok_or_else(|| {
                        TemplateError::Shape(format!("{function} takes a list: {argument}"))
                    })
                };
                match function.as_str() {
                    "Ref" => {
                        let name = argument.as_str().unwrap_or_default();
                        match parameters.get(name) {
                            Some(given) => Ok(Value::String((*given).to_owned())),
                            None => {
                                self.parameter_default(name)
                                    .map(Value::String)
                                    .ok_or_else(|| {
                                        TemplateError::Shape(format!(
                                            "Ref {name}: no such parameter value"
                                        ))
                                    })
                            }
                        }
                    }
                    "Fn::Equals" => {
                        let [a, b] = arguments()?.as_slice() else {
                            return Err(TemplateError::Shape("Fn::Equals takes two values".into()));
                        };
                        Ok(Value::Bool(
                            self.rule_value(a, parameters)? == self.rule_value(b, parameters)?,
                        ))
                    }
                    "Condition" | "Fn::Condition" => Ok(Value::Bool(
                        self.condition(argument.as_str().unwrap_or_default(), parameters)?,
                    )),
                    "Fn::Not" => Ok(Value::Bool(
                        !self.truth(arguments()?.first().unwrap_or(&Value::Null), parameters)?,
                    )),
                    "Fn::And" | "Fn::Or" => {
                        let values = arguments()?
                            .iter()
                            .map(|v| self.truth(v, parameters))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(Value::Bool(if function == "Fn::And" {
                            values.iter().all(|v| *v)
                        } else {
                            values.iter().any(|v| *v)
                        }))
                    }
                    "Fn::Contains" => {
                        let [list, item] = arguments()?.as_slice() else {
                            return Err(TemplateError::Shape(
                                "Fn::Contains takes two values".into(),
                            ));
                        };
                        let item = self.rule_value(item, parameters)?;
                        let list = self.rule_value(list, parameters)?;
                        Ok(Value::Bool(
                            list.as_array().is_some_and(|l| l.contains(&item)),
                        ))
                    }
                    other => Err(TemplateError::Shape(format!(
                        "a rule uses {other}, which this reader does not evaluate"
                    ))),
                }
            }
            Value::Array(items) => items
                .iter()
                .map(|v| self.rule_value(v, parameters))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn truth(
        &self,
        value: &Value,
        parameters: &HashMap<&str, &str>,
    ) -> Result<bool, TemplateError> {
        match self.rule_value(value, parameters)? {
            Value::Bool(b) => Ok(b),
            other => Err(TemplateError::Shape(format!("not a condition: {other}"))),
        }
    }

    pub fn functions(&self) -> Result<Vec<Function>, TemplateError> {
        self.resources_of_type("AWS::Serverless::Function")
            .map(|(id, r)| {
                let binary = r["Metadata"]["BuildProperties"]["Binary"]
                    .as_str()
                    .ok_or_else(|| {
                        TemplateError::Shape(format!("{id} has no Metadata.BuildProperties.Binary"))
                    })?;
                Ok(Function {
                    logical_id: id.to_owned(),
                    binary: binary.to_owned(),
                    properties: r["Properties"].clone(),
                })
            })
            .collect()
    }

    /// Every `HttpApi` route, with whether the JWT authorizer protects it.
    pub fn http_routes(&self) -> Result<Vec<HttpRoute>, TemplateError> {
        let mut routes = Vec::new();
        for function in self.functions()? {
            let Some(events) = function.properties["Events"].as_object() else {
                continue;
            };
            for event in events.values().filter(|e| e["Type"] == "HttpApi") {
                let p = &event["Properties"];
                let api_default = p["ApiId"]["Ref"]
                    .as_str()
                    .and_then(|api| self.resource(api))
                    .map(|api| !api["Properties"]["Auth"]["DefaultAuthorizer"].is_null())
                    .unwrap_or(false);
                let authorized = match p["Auth"]["Authorizer"].as_str() {
                    Some("NONE") => false,
                    Some(_) => true,
                    None => api_default,
                };
                routes.push(HttpRoute {
                    method: p["Method"].as_str().unwrap_or("ANY").to_ascii_uppercase(),
                    path: p["Path"]
                        .as_str()
                        .ok_or_else(|| {
                            TemplateError::Shape(format!(
                                "{} has an HttpApi event without Path",
                                function.logical_id
                            ))
                        })?
                        .to_owned(),
                    function: function.logical_id.clone(),
                    binary: function.binary.clone(),
                    authorized,
                });
            }
        }
        Ok(routes)
    }

    /// The WebSocket API (`AWS::ApiGatewayV2::Api`, `ProtocolType: WEBSOCKET`): its routes
    /// and its `$connect` authorizer, each resolved to the function its integration invokes.
    /// `None` when the template has none.
    pub fn websocket_api(&self) -> Result<Option<WebSocketApi>, TemplateError> {
        let Some((api_id, api)) = self
            .resources_of_type("AWS::ApiGatewayV2::Api")
            .find(|(_, r)| r["Properties"]["ProtocolType"] == "WEBSOCKET")
        else {
            return Ok(None);
        };
        let functions = self.functions()?;
        // `arn:...:functions/${XFunction.Arn}/invocations` -> the binary of XFunction.
        let invoked = |uri: &Value, what: &str| -> Result<String, TemplateError> {
            let text = uri["Fn::Sub"].as_str().unwrap_or_default();
            let logical = text
                .split("${")
                .find_map(|rest| rest.split_once(".Arn}"))
                .map(|(id, _)| id)
                .ok_or_else(|| {
                    TemplateError::Shape(format!("{what}: not a function ARN: {uri}"))
                })?;
            functions
                .iter()
                .find(|f| f.logical_id == logical)
                .map(|f| f.binary.clone())
                .ok_or_else(|| TemplateError::Shape(format!("{what}: no function {logical}")))
        };
        let mut routes = Vec::new();
        let mut authorizer = None;
        for (id, route) in self.resources_of_type("AWS::ApiGatewayV2::Route") {
            let p = &route["Properties"];
            if p["ApiId"]["Ref"] != api_id {
                continue;
            }
            let key = p["RouteKey"]
                .as_str()
                .ok_or_else(|| TemplateError::Shape(format!("{id} has no RouteKey")))?;
            let target = p["Target"]["Fn::Sub"].as_str().unwrap_or_default();
            let integration = target
                .strip_prefix("integrations/${")
                .and_then(|t| t.strip_suffix('}'))
                .and_then(|i| self.resource(i))
                .ok_or_else(|| {
                    TemplateError::Shape(format!("{id}: Target is not integrations/${{X}}"))
                })?;
            if let Some(auth) = p["AuthorizerId"]["Ref"]
                .as_str()
                .and_then(|a| self.resource(a))
            {
                authorizer = Some(invoked(&auth["Properties"]["AuthorizerUri"], id)?);
            }
            routes.push(WebSocketRoute {
                key: key.to_owned(),
                binary: invoked(&integration["Properties"]["IntegrationUri"], id)?,
                two_way: !p["RouteResponseSelectionExpression"].is_null(),
            });
        }
        routes.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Some(WebSocketApi {
            logical_id: api_id.to_owned(),
            route_selection: api["Properties"]["RouteSelectionExpression"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            routes,
            authorizer,
        }))
    }

    /// Every event of type `kind` (e.g. `DynamoDB`, `SQS`): (function, the event).
    pub fn events_of_type(&self, kind: &str) -> Result<Vec<(Function, Value)>, TemplateError> {
        let mut found = Vec::new();
        for function in self.functions()? {
            let events: Vec<Value> = function.properties["Events"]
                .as_object()
                .into_iter()
                .flat_map(|e| e.values().cloned())
                .filter(|e| e["Type"] == kind)
                .collect();
            for event in events {
                found.push((function.clone(), event));
            }
        }
        Ok(found)
    }

    /// Every `Schedule` event: (function binary, schedule expression such as `rate(1 minute)`).
    pub fn schedules(&self) -> Result<Vec<(Function, String)>, TemplateError> {
        let mut schedules = Vec::new();
        for function in self.functions()? {
            let Some(events) = function.properties["Events"].as_object() else {
                continue;
            };
            for event in events
                .values()
                .filter(|e| e["Type"] == "Schedule" || e["Type"] == "ScheduleV2")
            {
                let expression = event["Properties"]["Schedule"]
                    .as_str()
                    .or_else(|| event["Properties"]["ScheduleExpression"].as_str())
                    .ok_or_else(|| {
                        TemplateError::Shape(format!(
                            "{} has a schedule without an expression",
                            function.logical_id
                        ))
                    })?;
                schedules.push((function.clone(), expression.to_owned()));
            }
        }
        Ok(schedules)
    }

    /// The environment a function gets: `Globals.Function.Environment` overlaid with its own,
    /// plus what Lambda adds from `LoggingConfig` (`AWS_LAMBDA_LOG_FORMAT`,
    /// `AWS_LAMBDA_LOG_LEVEL`), each value resolved by `resolve` (for `!Ref` and friends).
    pub fn environment(
        &self,
        function: &Function,
        resolve: &dyn Fn(&Value) -> String,
    ) -> Vec<(String, String)> {
        let mut vars: Map<String, Value> = self.root["Globals"]["Function"]["Environment"]
            ["Variables"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        if let Some(own) = function.properties["Environment"]["Variables"].as_object() {
            vars.extend(own.clone());
        }
        // What Lambda sets from the logging configuration (advanced logging controls).
        let logging = |field: &str| {
            let own = &function.properties["LoggingConfig"][field];
            if own.is_null() {
                self.root["Globals"]["Function"]["LoggingConfig"][field].clone()
            } else {
                own.clone()
            }
        };
        if logging("LogFormat") == "JSON" {
            vars.insert("AWS_LAMBDA_LOG_FORMAT".into(), Value::from("JSON"));
            let level = logging("ApplicationLogLevel");
            vars.insert(
                "AWS_LAMBDA_LOG_LEVEL".into(),
                if level.is_null() {
                    Value::from("INFO")
                } else {
                    level
                },
            );
        }
        vars.iter().map(|(k, v)| (k.clone(), resolve(v))).collect()
    }
}

fn to_json(yaml: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(n).unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s,
                        other => serde_norway::to_string(&other)
                            .unwrap_or_default()
                            .trim()
                            .to_owned(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let name = tag.trim_start_matches('!');
            let value = to_json(tagged.value);
            match name {
                "Ref" => serde_json::json!({ "Ref": value }),
                "GetAtt" => {
                    let parts = match value {
                        Value::String(s) => s
                            .splitn(2, '.')
                            .map(|p| Value::String(p.to_owned()))
                            .collect(),
                        other => vec![other],
                    };
                    serde_json::json!({ "Fn::GetAtt": parts })
                }
                other => serde_json::json!({ format!("Fn::{other}"): value }),
            }
        }
    }
}

/// `section` (the `Resources`, `Conditions` or `Outputs` map) with each `Fn::ForEach::Name`
/// entry replaced by what it makes: `[identifier, collection, {key: fragment}]` gives, for
/// each item of the collection, the key and fragment with every `${identifier}` and
/// `&{identifier}` in their strings replaced by the item and every `{"Ref": identifier}` by
/// the item itself. Loops nest. A key made twice is an error, as CloudFormation's is.
pub fn expand_loops(section: &Value) -> Result<Value, TemplateError> {
    let Some(entries) = section.as_object() else {
        return Ok(section.clone());
    };
    let mut out = Map::new();
    for (key, value) in entries {
        if !key.starts_with("Fn::ForEach::") {
            put_once(&mut out, key.clone(), value.clone())?;
            continue;
        }
        let shape = || {
            TemplateError::Shape(format!(
                "{key} takes [identifier, [items], {{key: fragment}}]"
            ))
        };
        let [identifier, collection, fragment] =
            value.as_array().map(Vec::as_slice).unwrap_or_default()
        else {
            return Err(shape());
        };
        let (Some(identifier), Some(items), Some(fragment)) = (
            identifier.as_str(),
            collection.as_array(),
            fragment.as_object(),
        ) else {
            return Err(shape());
        };
        for item in items {
            let item = item.as_str().ok_or_else(shape)?;
            let made = substitute(&Value::Object(fragment.clone()), identifier, item);
            for (made_key, made_value) in expand_loops(&made)?.as_object().into_iter().flatten() {
                put_once(&mut out, made_key.clone(), made_value.clone())?;
            }
        }
    }
    Ok(Value::Object(out))
}

fn put_once(out: &mut Map<String, Value>, key: String, value: Value) -> Result<(), TemplateError> {
    if out.contains_key(&key) {
        return Err(TemplateError::Shape(format!("{key} is defined twice")));
    }
    out.insert(key, value);
    Ok(())
}

fn substitute(value: &Value, identifier: &str, item: &str) -> Value {
    let text = |s: &str| {
        s.replace(&format!("${{{identifier}}}"), item)
            .replace(&format!("&{{{identifier}}}"), item)
    };
    match value {
        Value::String(s) => Value::String(text(s)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, identifier, item))
                .collect(),
        ),
        Value::Object(map)
            if map.len() == 1 && map.get("Ref") == Some(&Value::from(identifier)) =>
        {
            Value::String(item.to_owned())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (text(k), substitute(v, identifier, item)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod loop_tests {
    use super::*;

    #[test]
    fn a_loop_makes_one_entry_per_item_with_the_identifier_replaced_everywhere() {
        let template = Template::parse(
            "Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]\n\
             Resources:\n\
             \x20 Kept: {Type: AWS::SNS::Topic}\n\
             \x20 Fn::ForEach::Logs:\n\
             \x20   - Name\n\
             \x20   - [A, B]\n\
             \x20   - ${Name}FunctionLogs:\n\
             \x20       Type: AWS::Logs::LogGroup\n\
             \x20       Properties:\n\
             \x20         LogGroupName: !Sub '/aws/lambda/${${Name}Function}'\n\
             \x20         Tags: [{Key: fn, Value: !Ref Name}, {Key: arn, Value: !GetAtt '${Name}Function.Arn'}]\n\
             \x20     Fn::ForEach::Alarms:\n\
             \x20       - Metric\n\
             \x20       - [Errors, Throttles]\n\
             \x20       - ${Name}Function${Metric}:\n\
             \x20           Properties: {MetricName: '&{Metric}', Value: !Ref '${Name}Function'}\n",
        )
        .unwrap();
        let names: Vec<&str> = template.resources().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            [
                "AFunctionErrors",
                "AFunctionLogs",
                "AFunctionThrottles",
                "BFunctionErrors",
                "BFunctionLogs",
                "BFunctionThrottles",
                "Kept"
            ]
        );
        let logs = template.resource("BFunctionLogs").unwrap();
        assert_eq!(
            logs["Properties"]["LogGroupName"],
            serde_json::json!({"Fn::Sub": "/aws/lambda/${BFunction}"})
        );
        assert_eq!(logs["Properties"]["Tags"][0]["Value"], "B");
        assert_eq!(
            logs["Properties"]["Tags"][1]["Value"],
            serde_json::json!({"Fn::GetAtt": ["BFunction", "Arn"]})
        );
        let alarm = template.resource("AFunctionThrottles").unwrap();
        assert_eq!(alarm["Properties"]["MetricName"], "Throttles");
        assert_eq!(
            alarm["Properties"]["Value"],
            serde_json::json!({"Ref": "AFunction"})
        );
    }

    #[test]
    fn a_loop_that_makes_an_existing_key_or_has_no_list_is_refused() {
        let twice = "Resources:\n  AFunctionLogs: {}\n  Fn::ForEach::L: [N, [A], {'${N}FunctionLogs': {}}]\n";
        assert!(matches!(
            Template::parse(twice),
            Err(TemplateError::Shape(_))
        ));
        let bad = "Resources:\n  Fn::ForEach::L: [N, {Ref: List}, {'${N}X': {}}]\n";
        assert!(matches!(Template::parse(bad), Err(TemplateError::Shape(_))));
    }
}

#[cfg(test)]
mod rule_tests {
    use super::*;

    #[test]
    fn conditions_and_if_branches_follow_the_parameter_defaults() {
        let template = Template::parse(
            "Parameters: {Issuer: {Type: String, Default: ''}}\n\
             Conditions:\n  Own: !Equals [!Ref Issuer, '']\n  NotOwn: !Not [!Condition Own]\n\
             Resources: {}\n",
        )
        .unwrap();
        assert!(template.condition("Own", &HashMap::new()).unwrap());
        assert!(!template.condition("NotOwn", &HashMap::new()).unwrap());
        assert!(template
            .condition("Own", &HashMap::from([("Issuer", "https://idp")]))
            .map(|own| !own)
            .unwrap());
        let chosen = |json: &str| {
            let arguments: Value = serde_json::from_str(json).unwrap();
            template.if_branch(&arguments).map(|b| b.cloned())
        };
        assert_eq!(
            chosen(r#"["Own", "pool", "none"]"#).unwrap(),
            Some(Value::from("pool"))
        );
        assert_eq!(
            chosen(r#"["NotOwn", "pool", {"Ref": "AWS::NoValue"}]"#).unwrap(),
            None
        );
        assert!(
            chosen(r#"["Missing", "a", "b"]"#).is_err(),
            "an unknown condition is an error"
        );
        assert!(chosen(r#"["Own", "a"]"#).is_err());
    }

    #[test]
    fn the_simulated_gateway_deploys_only_opted_into_and_never_to_prod() {
        let template = Template::repository().unwrap();
        let failures = |pairs: &[(&str, &str)]| {
            template
                .rule_failures(&pairs.iter().copied().collect())
                .unwrap()
        };
        let named = |refused: Vec<String>| -> Vec<String> {
            refused
                .iter()
                .map(|r| r.split(':').next().unwrap_or_default().to_owned())
                .collect()
        };
        // Fail closed: simulated without the opt-in is refused on any stage, prod or not.
        assert_eq!(
            named(failures(&[
                ("Stage", "dev"),
                ("PaymentProvider", "simulated")
            ])),
            vec!["SimulatedPaymentsAreOptedInto"]
        );
        assert_eq!(
            named(failures(&[
                ("Stage", "prod-eu"),
                ("PaymentProvider", "simulated")
            ])),
            vec!["SimulatedPaymentsAreOptedInto"],
            "a stage not named exactly prod is no way around it"
        );
        assert!(failures(&[
            ("Stage", "dev"),
            ("PaymentProvider", "simulated"),
            ("AllowSimulatedPayments", "true")
        ])
        .is_empty());
        assert_eq!(
            named(failures(&[
                ("Stage", "prod"),
                ("PaymentProvider", "simulated"),
                ("AllowSimulatedPayments", "true")
            ])),
            vec!["ProductionTakesRealPayments"]
        );
        // The default provider is Stripe: the defaults deploy, prod included.
        assert!(failures(&[("Stage", "prod")]).is_empty());
        assert!(failures(&[]).is_empty(), "the defaults deploy");
    }

    #[test]
    fn a_rule_it_cannot_read_is_an_error_not_a_pass() {
        let template = Template::parse(
            "Parameters: {A: {Type: String, Default: x}}\nRules:\n  R:\n    Assertions:\n      - Assert: {'Fn::EachMemberEquals': [[], x]}\n",
        )
        .unwrap();
        assert!(template.rule_failures(&HashMap::new()).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_short_tags() {
        let t = Template::parse("A: !Ref Table\nB: !GetAtt Table.Arn\nC: !Sub '${Table.Arn}/index/*'\nD: !Join [',', [a, b]]\n").unwrap();
        assert_eq!(t.root()["A"], serde_json::json!({"Ref": "Table"}));
        assert_eq!(
            t.root()["B"],
            serde_json::json!({"Fn::GetAtt": ["Table", "Arn"]})
        );
        assert_eq!(
            t.root()["C"],
            serde_json::json!({"Fn::Sub": "${Table.Arn}/index/*"})
        );
        assert_eq!(
            t.root()["D"],
            serde_json::json!({"Fn::Join": [",", ["a", "b"]]})
        );
    }

    #[test]
    fn reads_the_repository_template() {
        let t = Template::repository().unwrap();
        let routes = t.http_routes().unwrap();
        let mut public: Vec<_> = routes
            .iter()
            .filter(|r| !r.authorized)
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        public.sort();
        // Stripe signs its webhook instead of sending a JWT; a shop's delivery settings are
        // shown at checkout; its rating and reviews to anyone choosing a florist.
        assert_eq!(
            public,
            [
                "GET /v1/bouquets",
                "GET /v1/bouquets/{bouquetId}",
                "GET /v1/vendors/{vendorId}/delivery-settings",
                "GET /v1/vendors/{vendorId}/reviews",
                "POST /v1/payments/webhook"
            ]
        );
        assert!(t.resource("MarketTable").is_some());
    }
}
