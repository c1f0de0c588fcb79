//! The request API Gateway sends each route, made from its operation in `infra/openapi.yaml`
//! (the one with `x-function: <binary>`): its method and path; every required parameter and
//! each optional one the document gives an example of, at that example; the body's example;
//! and, unless the operation is public, a caller in its first role. A new route's fixture is
//! its OpenAPI operation: nothing else to write.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::repository_root;

/// The claims' issuer and audience as the tests' local authorizer writes them.
const ISSUER: &str = "bouquet-local";
const AUDIENCE: &str = "bouquet-api";

fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let path = repository_root().join("infra/openapi.yaml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_norway::from_str(&text).expect("infra/openapi.yaml is YAML")
    })
}

/// `#/components/...` resolved in the document; anything else as it is.
fn resolved(value: &Value) -> &Value {
    match value["$ref"].as_str() {
        Some(reference) => reference
            .trim_start_matches("#/")
            .split('/')
            .fold(document(), |node, key| &node[key]),
        None => value,
    }
}

/// The operation serving `binary`: its method, path and definition.
pub fn operation(binary: &str) -> Option<(String, String, &'static Value)> {
    let paths = document()["paths"].as_object()?;
    paths.iter().find_map(|(path, operations)| {
        operations.as_object()?.iter().find_map(|(method, op)| {
            (op["x-function"] == binary).then(|| (method.to_uppercase(), path.clone(), op))
        })
    })
}

fn example_text(parameter: &Value) -> Option<String> {
    let example = parameter
        .get("example")
        .or_else(|| parameter["schema"].get("example"))?;
    Some(match example {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// The claims API Gateway's JWT authorizer passes on for a caller in `role`.
fn claims(role: &str) -> Value {
    let (sub, vendor) = match role {
        "vendor" => (
            "vendor-user-1",
            example_text(resolved(
                &json!({"$ref": "#/components/parameters/VendorId"}),
            )),
        ),
        "admin" => ("admin-1", None),
        _ => ("customer-1", None),
    };
    let mut claims = json!({
        "sub": sub, "role": role, "iss": ISSUER, "aud": AUDIENCE, "exp": "4102444800",
    });
    if let Some(vendor) = vendor {
        claims["vendorId"] = json!(vendor);
    }
    claims
}

/// The API Gateway v2 event of `binary`'s route, or `None` when no operation names it.
pub fn route_event(binary: &str) -> Option<Value> {
    let (method, template, op) = operation(binary)?;
    let mut raw_path = template.clone();
    let mut path_parameters = Map::new();
    let mut query = Vec::new();
    let mut headers = json!({
        "accept": "application/json",
        "host": "abc123.execute-api.eu-west-1.amazonaws.com",
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-674de5a3-3b7e0c2a1f9d4e5b6c7a8d9e",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
        "x-correlation-id": format!("fixture-{binary}"),
    });
    for parameter in op["parameters"].as_array().into_iter().flatten() {
        let parameter = resolved(parameter);
        let name = parameter["name"].as_str().unwrap_or_default();
        let example = example_text(parameter);
        let required = parameter["required"] == true;
        let value = match (example, required) {
            (Some(value), _) => value,
            (None, true) => panic!(
                "infra/openapi.yaml: {method} {template}'s required parameter {name} needs an example (its fixture is made from it)"
            ),
            (None, false) => continue,
        };
        match parameter["in"].as_str() {
            Some("path") => {
                raw_path = raw_path.replace(&format!("{{{name}}}"), &value);
                path_parameters.insert(name.to_owned(), json!(value));
            }
            Some("query") => query.push((name.to_owned(), value)),
            Some("header") => headers[name.to_ascii_lowercase()] = json!(value),
            _ => {}
        }
    }
    let public = op["security"].as_array().is_some_and(Vec::is_empty);
    let role = op["security"][0]["cognito"][0].as_str();
    let authorizer = match (public, role) {
        (false, Some(role)) => {
            headers["authorization"] = json!("Bearer eyJhbGciOiJIUzI1NiJ9.fixture.signature");
            Some(json!({ "jwt": { "claims": claims(role), "scopes": null } }))
        }
        _ => None,
    };
    let body = op["requestBody"]["content"]
        .as_object()
        .and_then(|content| content.values().find_map(|media| media.get("example")));
    if body.is_some() {
        headers["content-type"] = json!("application/json");
    }
    let route_key = format!("{method} {template}");
    let raw_query = query
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut context = json!({
        "accountId": "123456789012",
        "apiId": "abc123",
        "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
        "domainPrefix": "abc123",
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.7",
            "userAgent": "curl/8.5.0",
        },
        "requestId": "C1a2b3c4d5e6f7=",
        "routeKey": route_key,
        "stage": "$default",
        "time": "02/Dec/2026:16:16:51 +0000",
        "timeEpoch": 1_796_228_211_000u64,
    });
    if let Some(authorizer) = authorizer {
        context["authorizer"] = authorizer;
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": false,
    });
    if !path_parameters.is_empty() {
        event["pathParameters"] = Value::Object(path_parameters);
    }
    if !query.is_empty() {
        event["queryStringParameters"] = query
            .into_iter()
            .map(|(name, value)| (name, json!(value)))
            .collect::<Map<_, _>>()
            .into();
    }
    if let Some(body) = body {
        event["body"] = json!(body.to_string());
    }
    Some(event)
}
