//! The limits in front of the functions, as the template declares them (issue 38): the
//! edge's web ACL (the CLOUDFRONT-scope `EdgeWebAcl`: rate-based rules per source address,
//! WAF's custom 429; the regional one on the user pool is not enforced locally), the
//! secret header CloudFront adds to every request it sends the API (`X-Origin-Verify`), and
//! API Gateway's throttles (the stage's `DefaultRouteSettings` and per-route `RouteSettings`:
//! a token bucket each, `{"message":"Too Many Requests"}` past it).
//!
//! What WAF does approximately (it counts over a trailing window, re-evaluated every few
//! seconds) is done here in fixed windows per address: the same limit, a boundary that may let
//! up to twice through within one window's length. The rules' statements are read for what
//! the template uses (a rate-based rule per IP, scoped down by method and path prefix); any
//! other statement stops the dev stack rather than being ignored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::StatusCode;
use serde_json::Value;

use bouquet_template::Template;

use crate::apigw::Incoming;
use crate::edge_cache::Answer;
use crate::error::DevError;

/// A template value as the dev stack resolves it (`!Ref` a parameter, `!Sub`...).
pub type Resolve<'a> = &'a dyn Fn(&Value) -> String;

/// What a rate-based rule counts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Scope {
    method: Option<String>,
    path_prefix: Option<String>,
}

impl Scope {
    fn matches(&self, incoming: &Incoming) -> bool {
        self.method
            .as_deref()
            .is_none_or(|m| incoming.method.eq_ignore_ascii_case(m))
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|p| incoming.path.starts_with(p))
    }

    /// Reads a `ByteMatchStatement` on the method (EXACTLY) or the path (STARTS_WITH), or an
    /// `AndStatement` of them.
    fn read(statement: &Value, into: &mut Scope) -> Result<(), DevError> {
        if let Some(all) = statement["AndStatement"]["Statements"].as_array() {
            for part in all {
                Self::read(part, into)?;
            }
            return Ok(());
        }
        let byte_match = &statement["ByteMatchStatement"];
        let field = &byte_match["FieldToMatch"];
        let search = byte_match["SearchString"].as_str().map(str::to_owned);
        match (
            field.get("Method").is_some(),
            field.get("UriPath").is_some(),
            byte_match["PositionalConstraint"].as_str(),
        ) {
            (true, _, Some("EXACTLY")) => into.method = search,
            (_, true, Some("STARTS_WITH")) => into.path_prefix = search,
            _ => {
                return Err(DevError::Unsupported(format!(
                    "web ACL statement {statement}"
                )))
            }
        }
        Ok(())
    }
}

struct RateRule {
    name: String,
    limit: u64,
    window: Duration,
    scope: Scope,
    retry_after: Option<String>,
    body: String,
    /// Per source address: the window's start and what it counted.
    counts: Mutex<HashMap<String, (Instant, u64)>>,
}

/// One throttle: API Gateway's token bucket (`rate` a second, up to `burst` at once).
struct Bucket {
    rate: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(rate: f64, burst: f64, now: Instant) -> Self {
        Self {
            rate,
            burst,
            state: Mutex::new((burst, now)),
        }
    }

    fn take(&self, now: Instant) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, at) = *state;
        let refilled =
            (tokens + now.saturating_duration_since(at).as_secs_f64() * self.rate).min(self.burst);
        if refilled >= 1.0 {
            *state = (refilled - 1.0, now);
            true
        } else {
            *state = (refilled, now);
            false
        }
    }
}

#[derive(Default)]
pub struct EdgeLimits {
    /// The header CloudFront adds to what it sends the API.
    origin_header: Option<(String, String)>,
    rules: Vec<RateRule>,
    default_throttle: Option<Bucket>,
    route_throttles: HashMap<String, Bucket>,
}

fn number(value: &Value, resolve: Resolve<'_>) -> Option<f64> {
    if value.is_null() {
        return None;
    }
    resolve(value).parse().ok()
}

fn too_many(body: &str, retry_after: Option<&str>) -> Answer {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(seconds) = retry_after {
        headers.push(("retry-after".to_owned(), seconds.to_owned()));
    }
    (
        StatusCode::TOO_MANY_REQUESTS,
        headers,
        body.as_bytes().to_vec(),
    )
}

const THROTTLED: &str = r#"{"message":"Too Many Requests"}"#;

impl EdgeLimits {
    /// The template's web ACL (whatever its deploy condition: the rules are what a stack in
    /// us-east-1 creates and another stack is given), the API origin's custom headers and the
    /// HTTP API's throttles.
    pub fn from_template(template: &Template, resolve: Resolve<'_>) -> Result<Self, DevError> {
        let now = Instant::now();
        let mut limits = EdgeLimits::default();
        for (_, distribution) in template.resources_of_type("AWS::CloudFront::Distribution") {
            let origins = &distribution["Properties"]["DistributionConfig"]["Origins"];
            for origin in origins.as_array().into_iter().flatten() {
                if origin["Id"] != "api" {
                    continue;
                }
                if let Some(header) = origin["OriginCustomHeaders"]
                    .as_array()
                    .and_then(|h| h.first())
                {
                    limits.origin_header = Some((
                        header["HeaderName"].as_str().unwrap_or_default().to_owned(),
                        resolve(&header["HeaderValue"]),
                    ));
                }
            }
        }
        for (_, acl) in template.resources_of_type("AWS::WAFv2::WebACL") {
            let properties = &acl["Properties"];
            // The distribution's; a regional one guards something else (the user pool).
            if properties["Scope"] != "CLOUDFRONT" {
                continue;
            }
            for rule in properties["Rules"].as_array().into_iter().flatten() {
                let rate = &rule["Statement"]["RateBasedStatement"];
                if rate.is_null() || rate["AggregateKeyType"] != "IP" {
                    return Err(DevError::Unsupported(format!(
                        "web ACL rule {}: only rate-based rules per IP",
                        rule["Name"]
                    )));
                }
                let mut scope = Scope {
                    method: None,
                    path_prefix: None,
                };
                if !rate["ScopeDownStatement"].is_null() {
                    Scope::read(&rate["ScopeDownStatement"], &mut scope)?;
                }
                let response = &rule["Action"]["Block"]["CustomResponse"];
                let body_key = response["CustomResponseBodyKey"].as_str().unwrap_or("");
                let body = properties["CustomResponseBodies"][body_key]["Content"]
                    .as_str()
                    .unwrap_or(THROTTLED)
                    .to_owned();
                let retry_after = response["ResponseHeaders"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|h| {
                        h["Name"]
                            .as_str()
                            .is_some_and(|n| n.eq_ignore_ascii_case("retry-after"))
                    })
                    .map(|h| resolve(&h["Value"]));
                limits.rules.push(RateRule {
                    name: rule["Name"].as_str().unwrap_or_default().to_owned(),
                    limit: number(&rate["Limit"], resolve).unwrap_or(f64::MAX) as u64,
                    window: Duration::from_secs(
                        number(&rate["EvaluationWindowSec"], resolve).unwrap_or(300.0) as u64,
                    ),
                    scope,
                    retry_after,
                    body,
                    counts: Mutex::default(),
                });
            }
        }
        for (_, api) in template.resources_of_type("AWS::Serverless::HttpApi") {
            let properties = &api["Properties"];
            let bucket = |settings: &Value| {
                Some(Bucket::new(
                    number(&settings["ThrottlingRateLimit"], resolve)?,
                    number(&settings["ThrottlingBurstLimit"], resolve)?,
                    now,
                ))
            };
            limits.default_throttle = bucket(&properties["DefaultRouteSettings"]);
            for (route, settings) in properties["RouteSettings"]
                .as_object()
                .into_iter()
                .flatten()
            {
                if let Some(bucket) = bucket(settings) {
                    limits.route_throttles.insert(route.clone(), bucket);
                }
            }
        }
        Ok(limits)
    }

    /// The edge's verdict before anything else: WAF's 429 for an address past a rule, else
    /// the request as CloudFront forwards it (with the origin's secret header).
    pub fn admit(&self, incoming: &mut Incoming, now: Instant) -> Result<(), Answer> {
        for rule in &self.rules {
            if !rule.scope.matches(incoming) {
                continue;
            }
            let mut counts = rule.counts.lock().unwrap_or_else(|e| e.into_inner());
            let entry = counts.entry(incoming.source_ip.clone()).or_insert((now, 0));
            if now.saturating_duration_since(entry.0) >= rule.window {
                *entry = (now, 0);
            }
            entry.1 += 1;
            if entry.1 > rule.limit {
                tracing::info!(rule = %rule.name, ip = %incoming.source_ip, "blocked by the edge's web ACL");
                return Err(too_many(&rule.body, rule.retry_after.as_deref()));
            }
        }
        if let Some((name, value)) = &self.origin_header {
            incoming
                .headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            incoming
                .headers
                .push((name.to_ascii_lowercase(), value.clone()));
        }
        Ok(())
    }

    /// API Gateway's throttle of `route_key` (its own, else the stage's default).
    pub fn throttle(&self, route_key: &str, now: Instant) -> Result<(), Answer> {
        let bucket = self
            .route_throttles
            .get(route_key)
            .or(self.default_throttle.as_ref());
        match bucket {
            Some(bucket) if !bucket.take(now) => Err(too_many(THROTTLED, None)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incoming(method: &str, path: &str, ip: &str) -> Incoming {
        Incoming {
            method: method.into(),
            path: path.into(),
            raw_query: String::new(),
            headers: vec![("x-origin-verify".into(), "forged".into())],
            body: Vec::new(),
            source_ip: ip.into(),
        }
    }

    fn limits() -> EdgeLimits {
        let template = Template::repository().expect("template.yaml parses");
        EdgeLimits::from_template(&template, &|v| match v {
            Value::Object(map) if map.contains_key("Ref") => {
                let name = map["Ref"].as_str().unwrap_or_default();
                template.parameter_default(name).unwrap_or_default()
            }
            Value::Object(_) => "secret".into(),
            other => other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        })
        .expect("the template's limits are supported")
    }

    #[test]
    fn an_address_past_the_checkout_rule_gets_wafs_429_while_another_passes() {
        let limits = limits();
        let now = Instant::now();
        let per_minute: u64 = Template::repository()
            .unwrap()
            .parameter_default("EdgeCheckoutRequestsPerIpPerMinute")
            .unwrap()
            .parse()
            .unwrap();
        for _ in 0..per_minute {
            assert!(limits
                .admit(&mut incoming("POST", "/v1/orders", "10.0.0.1"), now)
                .is_ok());
        }
        let (status, headers, body) = limits
            .admit(&mut incoming("POST", "/v1/orders", "10.0.0.1"), now)
            .unwrap_err();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert!(headers.contains(&("retry-after".into(), "60".into())));
        assert_eq!(body, br#"{"message":"Too Many Requests"}"#);
        // Browsing is another rule's; another address is not touched; a minute later it passes.
        assert!(limits
            .admit(&mut incoming("GET", "/v1/bouquets", "10.0.0.1"), now)
            .is_ok());
        assert!(limits
            .admit(&mut incoming("POST", "/v1/orders", "10.0.0.2"), now)
            .is_ok());
        let later = now + Duration::from_secs(60);
        assert!(limits
            .admit(&mut incoming("POST", "/v1/orders", "10.0.0.1"), later)
            .is_ok());
    }

    #[test]
    fn the_edge_replaces_any_origin_header_the_client_sent_with_its_own() {
        let limits = limits();
        let mut request = incoming("GET", "/v1/bouquets", "10.0.0.3");
        limits.admit(&mut request, Instant::now()).unwrap();
        let sent: Vec<_> = request
            .headers
            .iter()
            .filter(|(k, _)| k == "x-origin-verify")
            .collect();
        assert_eq!(
            sent,
            vec![&("x-origin-verify".to_owned(), "secret".to_owned())]
        );
    }

    #[test]
    fn a_route_throttle_admits_its_burst_then_its_rate() {
        let bucket = Bucket::new(2.0, 3.0, Instant::now());
        let now = Instant::now();
        assert_eq!((0..5).filter(|_| bucket.take(now)).count(), 3, "the burst");
        assert!(
            bucket.take(now + Duration::from_millis(600)),
            "refilled at 2/s"
        );
        assert!(!bucket.take(now + Duration::from_millis(700)));
    }
}
