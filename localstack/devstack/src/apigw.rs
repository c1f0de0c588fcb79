//! API Gateway's HTTP API, locally: route selection as API Gateway does it, and the
//! payload format 2.0 event a function receives.

use std::collections::{BTreeMap, HashMap};

use aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription,
    ApiGatewayV2httpRequest, ApiGatewayV2httpRequestContext,
    ApiGatewayV2httpRequestContextHttpDescription,
};
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue, Method};
use aws_lambda_events::query_map::QueryMap;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
    /// `{name+}`: the rest of the path.
    Greedy(String),
}

/// One route of the template: `METHOD /path/{param}`.
#[derive(Clone, Debug)]
pub struct RoutePattern {
    pub method: String,
    pub path: String,
    segments: Vec<Segment>,
}

impl RoutePattern {
    pub fn new(method: &str, path: &str) -> Self {
        let segments = path
            .trim_start_matches('/')
            .split('/')
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) if name.ends_with('+') => {
                        Segment::Greedy(name.trim_end_matches('+').to_owned())
                    }
                    Some(name) => Segment::Param(name.to_owned()),
                    None => Segment::Literal(s.to_owned()),
                },
            )
            .collect();
        Self {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            segments,
        }
    }

    pub fn route_key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The path parameters when `method` and `path` match this route.
    pub fn matches(&self, method: &str, path: &str) -> Option<BTreeMap<String, String>> {
        if self.method != "ANY" && !self.method.eq_ignore_ascii_case(method) {
            return None;
        }
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let mut params = BTreeMap::new();
        for (index, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Greedy(name) => {
                    let rest = parts
                        .get(index..)
                        .filter(|r| !r.is_empty() && !r[0].is_empty())?;
                    params.insert(name.clone(), percent_decode(&rest.join("/")));
                    return Some(params);
                }
                Segment::Literal(literal) => {
                    if parts.get(index) != Some(&literal.as_str()) {
                        return None;
                    }
                }
                Segment::Param(name) => {
                    let value = parts.get(index).filter(|v| !v.is_empty())?;
                    params.insert(name.clone(), percent_decode(value));
                }
            }
        }
        (parts.len() == self.segments.len()).then_some(params)
    }

    /// API Gateway prefers the most specific route: more literal segments, greedy last.
    fn specificity(&self) -> (usize, usize) {
        let literals = self
            .segments
            .iter()
            .filter(|s| matches!(s, Segment::Literal(_)))
            .count();
        let not_greedy = usize::from(
            !self
                .segments
                .iter()
                .any(|s| matches!(s, Segment::Greedy(_))),
        );
        (not_greedy, literals)
    }
}

/// Picks the route for a request, as API Gateway would among several matches.
pub fn select<'r, T>(
    routes: &'r [(RoutePattern, T)],
    method: &str,
    path: &str,
) -> Option<(&'r RoutePattern, &'r T, BTreeMap<String, String>)> {
    routes
        .iter()
        .filter_map(|(pattern, target)| {
            pattern
                .matches(method, path)
                .map(|params| (pattern, target, params))
        })
        .max_by_key(|(pattern, _, _)| pattern.specificity())
}

/// An HTTP request as it reached the local API.
#[derive(Clone, Debug, Default)]
pub struct Incoming {
    pub method: String,
    pub path: String,
    pub raw_query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub source_ip: String,
}

/// The payload format 2.0 event API Gateway sends for `incoming` on `route`, built from
/// `aws_lambda_events`' own type so a drift from what `lambda_http` reads is a compile error.
pub fn event(
    incoming: &Incoming,
    route: &RoutePattern,
    path_parameters: &BTreeMap<String, String>,
    claims: Option<&HashMap<String, String>>,
    request_id: &str,
    now: time::OffsetDateTime,
) -> Value {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut cookies = Vec::new();
    for (name, value) in &incoming.headers {
        let name = name.to_ascii_lowercase();
        if name == "cookie" {
            cookies.extend(
                value
                    .split(';')
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
            );
            continue;
        }
        headers
            .entry(name)
            .and_modify(|v| {
                v.push(',');
                v.push_str(value);
            })
            .or_insert_with(|| value.clone());
    }
    let mut query: BTreeMap<String, String> = BTreeMap::new();
    for pair in incoming.raw_query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (
            percent_decode(&k.replace('+', " ")),
            percent_decode(&v.replace('+', " ")),
        );
        query
            .entry(k)
            .and_modify(|e| {
                e.push(',');
                e.push_str(&v);
            })
            .or_insert(v);
    }
    let (body, base64) = match std::str::from_utf8(&incoming.body) {
        _ if incoming.body.is_empty() => (None, false),
        Ok(text) => (Some(text.to_owned()), false),
        Err(_) => (Some(STANDARD.encode(&incoming.body)), true),
    };
    let method = Method::from_bytes(incoming.method.as_bytes()).unwrap_or(Method::GET);

    let mut http = ApiGatewayV2httpRequestContextHttpDescription::default();
    http.method = method.clone();
    http.path = Some(incoming.path.clone());
    http.protocol = Some("HTTP/1.1".into());
    http.source_ip = Some(incoming.source_ip.clone());
    http.user_agent = Some(headers.get("user-agent").cloned().unwrap_or_default());

    let mut context = ApiGatewayV2httpRequestContext::default();
    context.account_id = Some("123456789012".into());
    context.apiid = Some("local".into());
    context.domain_name = Some(
        headers
            .get("host")
            .cloned()
            .unwrap_or_else(|| "localhost".into()),
    );
    context.domain_prefix = Some("local".into());
    context.http = http;
    context.request_id = Some(request_id.to_owned());
    context.route_key = Some(route.route_key());
    context.stage = Some("$default".into());
    context.time = Some(api_gateway_time(now));
    context.time_epoch = (now.unix_timestamp_nanos() / 1_000_000) as i64;
    if let Some(claims) = claims {
        let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
        jwt.claims = claims.clone();
        let mut authorizer = ApiGatewayRequestAuthorizer::default();
        authorizer.jwt = Some(jwt);
        context.authorizer = Some(authorizer);
    }

    let mut header_map = HeaderMap::new();
    for (name, value) in &headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            header_map.insert(name, value);
        }
    }
    let mut event = ApiGatewayV2httpRequest::default();
    // The deprecated v1 field lambda_http does not read for v2; kept equal to the method.
    #[allow(deprecated)]
    {
        event.http_method = method;
    }
    event.version = Some("2.0".into());
    event.route_key = Some(route.route_key());
    event.raw_path = Some(incoming.path.clone());
    event.raw_query_string = Some(incoming.raw_query.clone());
    event.cookies = (!cookies.is_empty()).then_some(cookies);
    event.headers = header_map;
    event.query_string_parameters = QueryMap::from(
        query
            .into_iter()
            .map(|(k, v)| (k, vec![v]))
            .collect::<HashMap<String, Vec<String>>>(),
    );
    event.path_parameters = path_parameters
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    event.request_context = context;
    event.body = body;
    event.is_base64_encoded = base64;
    serde_json::to_value(event).unwrap_or_default()
}

/// `02/Dec/2026:16:16:51 +0000`, API Gateway's `requestContext.time` format.
fn api_gateway_time(now: time::OffsetDateTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
        now.day(),
        MONTHS[usize::from(u8::from(now.month())) - 1],
        now.year(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(byte) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_the_most_specific_route() {
        let routes = vec![
            (RoutePattern::new("GET", "/v1/bouquets/{bouquetId}"), "one"),
            (RoutePattern::new("GET", "/v1/bouquets"), "list"),
            (RoutePattern::new("ANY", "/v1/{proxy+}"), "proxy"),
            (
                RoutePattern::new("GET", "/v1/bouquets/featured"),
                "featured",
            ),
        ];
        let pick = |m: &str, p: &str| select(&routes, m, p).map(|(_, t, params)| (*t, params));
        assert_eq!(pick("GET", "/v1/bouquets").unwrap().0, "list");
        let (target, params) = pick("GET", "/v1/bouquets/01ABC").unwrap();
        assert_eq!((target, params["bouquetId"].as_str()), ("one", "01ABC"));
        assert_eq!(pick("GET", "/v1/bouquets/featured").unwrap().0, "featured");
        let (target, params) = pick("DELETE", "/v1/a/b%20c").unwrap();
        assert_eq!((target, params["proxy"].as_str()), ("proxy", "a/b c"));
        assert!(pick("GET", "/v2/bouquets").is_none());
        assert!(pick("GET", "/v1/bouquets/").is_some_and(|(t, _)| t == "proxy"));
    }

    #[test]
    fn builds_the_v2_payload() {
        let incoming = Incoming {
            method: "POST".into(),
            path: "/v1/orders".into(),
            raw_query: "limit=5&tag=a&tag=b%2Fc".into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Cookie".into(), "a=1; b=2".into()),
            ],
            body: br#"{"bouquetIds":[]}"#.to_vec(),
            source_ip: "127.0.0.1".into(),
        };
        let route = RoutePattern::new("POST", "/v1/orders");
        let claims = HashMap::from([("sub".to_owned(), "c1".to_owned())]);
        let event = event(
            &incoming,
            &route,
            &BTreeMap::new(),
            Some(&claims),
            "req-1",
            time::OffsetDateTime::UNIX_EPOCH,
        );
        assert_eq!(event["routeKey"], "POST /v1/orders");
        assert_eq!(event["queryStringParameters"]["tag"], "a,b/c");
        assert_eq!(event["cookies"], json!(["a=1", "b=2"]));
        assert_eq!(event["headers"]["content-type"], "application/json");
        assert_eq!(
            event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"],
            "c1"
        );
        assert_eq!(
            event["requestContext"]["time"],
            "01/Jan/1970:00:00:00 +0000"
        );
        let request =
            lambda_http::request::from_str(&event.to_string()).expect("lambda_http accepts it");
        assert_eq!(request.uri().path(), "/v1/orders");
    }
}
