//! CloudFront in front of the local API, as the template's `WebDistribution` configures it:
//! its cache behaviors in order (the first whose `PathPattern` matches wins), and for each
//! behavior whose cache policy is one of the template's own `AWS::CloudFront::CachePolicy`
//! resources, a shared cache of `GET`/`HEAD` answers as CloudFront documents it:
//!
//! - the key is the path, the query strings and headers the policy names (nothing else);
//! - a `200` is kept for the origin's `Cache-Control` `s-maxage` or `max-age`, held between the
//!   policy's `MinTTL` and `MaxTTL`, or `DefaultTTL` without one; `no-store`, `no-cache` and
//!   `private` are not kept (the template's policies have `MinTTL: 0`);
//! - concurrent misses on one key are collapsed into one origin request (request collapsing);
//! - the origin gets only the query strings and headers the cache key and the behavior's own
//!   origin request policy name (with the body's `Content-Type` and `Content-Length`);
//! - a viewer's `If-None-Match` equal to the kept answer's `ETag` is answered `304` at the edge;
//! - answers carry `X-Cache` (`Hit from cloudfront` / `Miss from cloudfront`) and `Age`.
//!
//! A behavior with a managed policy (CachingDisabled with AllViewerExceptHostHeader) passes
//! everything to the origin. A method a behavior does not allow is refused with `403`, as
//! CloudFront refuses it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use serde_json::Value;

use bouquet_template::Template;

use crate::apigw::Incoming;

pub type Answer = (StatusCode, Vec<(String, String)>, Vec<u8>);

/// What CloudFront sends a custom origin whatever the policies say: the body's description.
const ALWAYS_FORWARDED: [&str; 2] = ["content-type", "content-length"];

#[derive(Clone, Debug, PartialEq, Eq)]
enum QueryKey {
    None,
    All,
    Only(Vec<String>),
    AllExcept(Vec<String>),
}

#[derive(Clone, Debug)]
struct Policy {
    min: Duration,
    default: Duration,
    max: Duration,
    query: QueryKey,
    /// Header names in the key, lower case.
    headers: Vec<String>,
}

#[derive(Clone, Debug)]
struct Behavior {
    pattern: String,
    /// `AllowedMethods`, upper case.
    methods: Vec<String>,
    policy: Option<Policy>,
    /// Header names the behavior's own origin request policy adds, lower case.
    origin_headers: Vec<String>,
}

struct Entry {
    answer: Answer,
    stored: Instant,
    ttl: Duration,
}

#[derive(Default)]
pub struct EdgeCache {
    behaviors: Vec<Behavior>,
    /// The origins' `OriginCustomHeaders` names, lower case: CloudFront adds them to every
    /// origin request whatever the policies say (`edge_limits` sets their values).
    custom_headers: Vec<String>,
    entries: Mutex<HashMap<String, Entry>>,
    /// One lock per key being fetched: the request collapsing.
    fetching: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn seconds(value: &Value, default: u64) -> Duration {
    Duration::from_secs(
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or(default),
    )
}

/// The headers an origin request policy of the template's own names (none for a managed one).
fn origin_headers(template: &Template, id: &Value) -> Vec<String> {
    let Some(logical) = id["Ref"].as_str() else {
        return Vec::new();
    };
    template
        .resource(logical)
        .map(|policy| {
            names(&policy["Properties"]["OriginRequestPolicyConfig"]["HeadersConfig"]["Headers"])
        })
        .unwrap_or_default()
        .into_iter()
        .map(|h| h.to_ascii_lowercase())
        .collect()
}

fn policy(template: &Template, id: &Value) -> Option<Policy> {
    let logical = id["Ref"].as_str()?;
    let config = &template.resource(logical)?["Properties"]["CachePolicyConfig"];
    let keyed = &config["ParametersInCacheKeyAndForwardedToOrigin"];
    let query = &keyed["QueryStringsConfig"];
    let query = match query["QueryStringBehavior"].as_str() {
        Some("all") => QueryKey::All,
        Some("whitelist") => QueryKey::Only(names(&query["QueryStrings"])),
        Some("allExcept") => QueryKey::AllExcept(names(&query["QueryStrings"])),
        _ => QueryKey::None,
    };
    let headers = match keyed["HeadersConfig"]["HeaderBehavior"].as_str() {
        Some("whitelist") => names(&keyed["HeadersConfig"]["Headers"])
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
        _ => Vec::new(),
    };
    Some(Policy {
        min: seconds(&config["MinTTL"], 0),
        default: seconds(&config["DefaultTTL"], 86_400),
        max: seconds(&config["MaxTTL"], 31_536_000),
        query,
        headers,
    })
}

/// The items of the list `key` of every distribution's `DistributionConfig`.
fn distribution_list<'a>(template: &'a Template, key: &'a str) -> impl Iterator<Item = Value> + 'a {
    template
        .resources_of_type("AWS::CloudFront::Distribution")
        .flat_map(move |(_, r)| {
            r["Properties"]["DistributionConfig"][key]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
}

/// CloudFront's path patterns: `*` any run of characters, `?` one; case-sensitive.
fn glob(pattern: &[u8], path: &[u8]) -> bool {
    match (pattern.first(), path.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], path) || (!path.is_empty() && glob(pattern, &path[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &path[1..]),
        (Some(p), Some(c)) if p == c => glob(&pattern[1..], &path[1..]),
        _ => false,
    }
}

/// How long an answer with `cache_control` may be kept under `policy` (zero: not at all).
fn ttl(policy: &Policy, cache_control: Option<&str>) -> Duration {
    let Some(header) = cache_control else {
        return policy.default;
    };
    let directives: Vec<String> = header
        .split(',')
        .map(|d| d.trim().to_ascii_lowercase())
        .collect();
    if directives
        .iter()
        .any(|d| d == "no-store" || d == "no-cache" || d == "private")
    {
        return Duration::ZERO;
    }
    let age = |name: &str| {
        directives
            .iter()
            .find_map(|d| d.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok())
    };
    match age("s-maxage").or_else(|| age("max-age")) {
        Some(seconds) => Duration::from_secs(seconds).clamp(policy.min, policy.max),
        None => policy.default,
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl EdgeCache {
    /// The template's distribution's behaviors (none when it has no distribution).
    pub fn from_template(template: &Template) -> Self {
        let behaviors = distribution_list(template, "CacheBehaviors")
            .filter_map(|b| {
                Some(Behavior {
                    pattern: b["PathPattern"].as_str()?.to_owned(),
                    methods: names(&b["AllowedMethods"]),
                    policy: policy(template, &b["CachePolicyId"]),
                    origin_headers: origin_headers(template, &b["OriginRequestPolicyId"]),
                })
            })
            .collect();
        let custom_headers = distribution_list(template, "Origins")
            .flat_map(|origin| {
                origin["OriginCustomHeaders"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|h| Some(h["HeaderName"].as_str()?.to_ascii_lowercase()))
            .collect();
        Self {
            behaviors,
            custom_headers,
            ..Self::default()
        }
    }

    /// Answers served from the cache, and requests that reached the origin through it.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn misses(&self) -> usize {
        self.misses.load(Ordering::SeqCst)
    }

    /// The behavior `path` falls under: the first whose pattern matches.
    fn behavior_for(&self, path: &str) -> Option<&Behavior> {
        self.behaviors
            .iter()
            .find(|b| glob(b.pattern.as_bytes(), path.as_bytes()))
    }

    /// The cache policy of the behavior `path` falls under, if it caches.
    fn policy_for(&self, path: &str) -> Option<&Policy> {
        self.behavior_for(path)?.policy.as_ref()
    }

    /// Whether the behavior `path` falls under takes `method` (a path under no behavior is
    /// the console's default, which is not this cache's business).
    pub fn allows(&self, method: &str, path: &str) -> bool {
        self.behavior_for(path)
            .is_none_or(|b| b.methods.iter().any(|m| m.eq_ignore_ascii_case(method)))
    }

    /// Whether a viewer's header `name` on `path` reaches the origin.
    pub fn reaches_origin(&self, path: &str, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let Some(behavior) = self.behavior_for(path) else {
            return true;
        };
        let Some(policy) = &behavior.policy else {
            return true;
        };
        ALWAYS_FORWARDED.contains(&name.as_str())
            || policy.headers.contains(&name)
            || behavior.origin_headers.contains(&name)
    }

    /// The request as the origin gets it: under a caching behavior, only the query strings
    /// the cache key names, the headers [`Self::reaches_origin`] lets through and the
    /// origin's custom headers.
    pub fn forwarded(&self, incoming: &Incoming) -> Incoming {
        let Some(policy) = self.policy_for(&incoming.path) else {
            return incoming.clone();
        };
        let kept: Vec<(String, String)> = form_urlencoded::parse(incoming.raw_query.as_bytes())
            .into_owned()
            .filter(|(name, _)| Self::keyed(policy, name))
            .collect();
        Incoming {
            raw_query: form_urlencoded::Serializer::new(String::new())
                .extend_pairs(kept)
                .finish(),
            headers: incoming
                .headers
                .iter()
                .filter(|(name, _)| {
                    self.reaches_origin(&incoming.path, name)
                        || self.custom_headers.contains(&name.to_ascii_lowercase())
                })
                .cloned()
                .collect(),
            ..incoming.clone()
        }
    }

    fn keyed(policy: &Policy, name: &str) -> bool {
        match &policy.query {
            QueryKey::None => false,
            QueryKey::All => true,
            QueryKey::Only(names) => names.iter().any(|n| n == name),
            QueryKey::AllExcept(names) => !names.iter().any(|n| n == name),
        }
    }

    fn key(policy: &Policy, incoming: &Incoming) -> String {
        let mut query: Vec<(String, String)> =
            form_urlencoded::parse(incoming.raw_query.as_bytes())
                .into_owned()
                .filter(|(name, _)| Self::keyed(policy, name))
                .collect();
        query.sort();
        let headers: Vec<String> = policy
            .headers
            .iter()
            .map(|name| format!("{name}={}", header(&incoming.headers, name).unwrap_or("")))
            .collect();
        format!("{}?{:?}#{:?}", incoming.path, query, headers)
    }

    /// `incoming` (as the viewer sent it) answered from the cache, or by `origin` with the
    /// request [`Self::forwarded`] makes of it (and kept when it may be).
    pub async fn serve<F, A>(&self, incoming: &Incoming, origin: F) -> Answer
    where
        F: FnOnce(Incoming) -> A,
        A: Future<Output = Answer>,
    {
        let method = incoming.method.as_str();
        if !self.allows(method, &incoming.path) {
            return (
                StatusCode::FORBIDDEN,
                vec![("content-type".into(), "text/plain".into())],
                b"This distribution is not configured to allow the HTTP request method".to_vec(),
            );
        }
        let forwarded = self.forwarded(incoming);
        let policy = match self.policy_for(&incoming.path) {
            Some(policy) if method == "GET" || method == "HEAD" => policy.clone(),
            _ => return origin(forwarded).await,
        };
        let key = Self::key(&policy, incoming);
        let answer = match self.fresh(&key) {
            Some(answer) => answer,
            None => self.fetch(&policy, key, origin(forwarded)).await,
        };
        not_modified(incoming, answer)
    }

    async fn fetch<F>(&self, policy: &Policy, key: String, origin: F) -> Answer
    where
        F: Future<Output = Answer>,
    {
        let lock = self
            .fetching
            .lock()
            .unwrap()
            .entry(key.clone())
            .or_default()
            .clone();
        let _fetching = lock.lock().await;
        // Another request fetched it while this one waited.
        if let Some(answer) = self.fresh(&key) {
            return answer;
        }
        self.misses.fetch_add(1, Ordering::SeqCst);
        let (status, mut headers, body) = origin.await;
        let keep = if status == StatusCode::OK {
            ttl(policy, header(&headers, "cache-control"))
        } else {
            Duration::ZERO
        };
        if !keep.is_zero() {
            self.entries.lock().unwrap().insert(
                key.clone(),
                Entry {
                    answer: (status, headers.clone(), body.clone()),
                    stored: Instant::now(),
                    ttl: keep,
                },
            );
        }
        self.fetching.lock().unwrap().remove(&key);
        headers.push(("x-cache".into(), "Miss from cloudfront".into()));
        (status, headers, body)
    }

    fn fresh(&self, key: &str) -> Option<Answer> {
        let entries = self.entries.lock().unwrap();
        let entry = entries.get(key)?;
        let age = entry.stored.elapsed();
        if age >= entry.ttl {
            return None;
        }
        self.hits.fetch_add(1, Ordering::SeqCst);
        let (status, mut headers, body) = entry.answer.clone();
        headers.push(("x-cache".into(), "Hit from cloudfront".into()));
        headers.push(("age".into(), age.as_secs().to_string()));
        Some((status, headers, body))
    }
}

/// The edge's answer to a conditional GET: `304` when the viewer holds the answer's `ETag`.
fn not_modified(incoming: &Incoming, answer: Answer) -> Answer {
    let (status, headers, body) = answer;
    let held = header(&incoming.headers, "if-none-match");
    if status == StatusCode::OK && held.is_some() && held == header(&headers, "etag") {
        let kept = headers
            .into_iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
            .collect();
        return (StatusCode::NOT_MODIFIED, kept, Vec::new());
    }
    (status, headers, body)
}

/// One header a CloudFront response headers policy adds: `(name, value, override)`; without
/// override it is added only where the origin sent none.
pub type PolicyHeader = (String, String, bool);

/// The headers the template's `ApiSecurityHeadersPolicy` makes the distribution add to every
/// `/v1` answer, the API Gateway's own 401, 403 and 404 included (they pass the edge too).
pub fn api_security_headers(template: &Template) -> Vec<PolicyHeader> {
    let Some(policy) = template.resource("ApiSecurityHeadersPolicy") else {
        return Vec::new();
    };
    let config = &policy["Properties"]["ResponseHeadersPolicyConfig"];
    let security = &config["SecurityHeadersConfig"];
    let overrides = |field: &serde_json::Value| field["Override"].as_bool() == Some(true);
    let mut headers = Vec::new();
    let csp = &security["ContentSecurityPolicy"];
    if let Some(value) = csp["ContentSecurityPolicy"].as_str() {
        headers.push((
            "content-security-policy".into(),
            value.into(),
            overrides(csp),
        ));
    }
    let hsts = &security["StrictTransportSecurity"];
    if let Some(age) = hsts["AccessControlMaxAgeSec"].as_u64() {
        let mut value = format!("max-age={age}");
        if hsts["IncludeSubdomains"].as_bool() == Some(true) {
            value.push_str("; includeSubDomains");
        }
        headers.push(("strict-transport-security".into(), value, overrides(hsts)));
    }
    let nosniff = &security["ContentTypeOptions"];
    if !nosniff.is_null() {
        headers.push((
            "x-content-type-options".into(),
            "nosniff".into(),
            overrides(nosniff),
        ));
    }
    let frame = &security["FrameOptions"];
    if let Some(option) = frame["FrameOption"].as_str() {
        headers.push(("x-frame-options".into(), option.into(), overrides(frame)));
    }
    let referrer = &security["ReferrerPolicy"];
    if let Some(policy) = referrer["ReferrerPolicy"].as_str() {
        headers.push(("referrer-policy".into(), policy.into(), overrides(referrer)));
    }
    for item in config["CustomHeadersConfig"]["Items"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(value)) = (item["Header"].as_str(), item["Value"].as_str()) {
            headers.push((name.to_ascii_lowercase(), value.into(), overrides(item)));
        }
    }
    headers
}

/// Adds `policy`'s headers to an answer as CloudFront does.
pub fn apply_policy(policy: &[PolicyHeader], headers: &mut Vec<(String, String)>) {
    for (name, value, overrides) in policy {
        let present = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        if *overrides {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        } else if present {
            continue;
        }
        headers.push((name.clone(), value.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apis_security_headers_override_the_origins_and_add_no_store_only_where_missing() {
        let policy = api_security_headers(&Template::repository().unwrap());
        // The gateway's own 401: a plain body and its content type, nothing else.
        let mut refused = vec![("content-type".to_owned(), "application/json".to_owned())];
        apply_policy(&policy, &mut refused);
        let header = |headers: &[(String, String)], name: &str| {
            headers
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(header(&refused, "x-content-type-options"), ["nosniff"]);
        assert_eq!(header(&refused, "x-frame-options"), ["DENY"]);
        assert_eq!(header(&refused, "referrer-policy"), ["no-referrer"]);
        assert_eq!(header(&refused, "cache-control"), ["no-store"]);
        assert!(header(&refused, "strict-transport-security")[0].starts_with("max-age="));
        assert_eq!(
            header(&refused, "content-security-policy"),
            ["default-src 'none'; frame-ancestors 'none'"]
        );
        // A public read keeps its own Cache-Control; a security header is replaced, once.
        let mut public = vec![
            ("cache-control".to_owned(), "public, max-age=5".to_owned()),
            ("x-frame-options".to_owned(), "SAMEORIGIN".to_owned()),
        ];
        apply_policy(&policy, &mut public);
        assert_eq!(header(&public, "cache-control"), ["public, max-age=5"]);
        assert_eq!(header(&public, "x-frame-options"), ["DENY"]);
    }

    #[test]
    fn patterns_match_as_cloudfront_documents() {
        assert!(glob(b"/v1/bouquets", b"/v1/bouquets"));
        assert!(!glob(b"/v1/bouquets", b"/v1/bouquets/01J"));
        assert!(glob(b"/v1/bouquets/*", b"/v1/bouquets/01J"));
        assert!(glob(b"/v1/*", b"/v1/orders/1/cancel"));
        assert!(!glob(b"/v1/*", b"/V1/orders"));
        assert!(glob(b"/v?/x", b"/v1/x"));
    }

    #[test]
    fn the_origins_max_age_is_held_between_the_policys_bounds() {
        let policy = Policy {
            min: Duration::from_secs(1),
            default: Duration::from_secs(5),
            max: Duration::from_secs(10),
            query: QueryKey::All,
            headers: vec![],
        };
        let ttl_of = |h: Option<&str>| ttl(&policy, h).as_secs();
        assert_eq!(ttl_of(Some("public, max-age=5")), 5);
        assert_eq!(ttl_of(Some("public, max-age=600")), 10);
        assert_eq!(ttl_of(Some("max-age=0")), 1);
        assert_eq!(ttl_of(Some("public, s-maxage=3, max-age=60")), 3);
        assert_eq!(ttl_of(Some("private, max-age=60")), 0);
        assert_eq!(ttl_of(Some("no-store")), 0);
        assert_eq!(ttl_of(None), 5);
    }

    #[test]
    fn the_templates_catalogue_is_cached_by_path_and_query_and_nothing_else_is() {
        let cache = EdgeCache::from_template(&Template::repository().unwrap());
        let list = cache
            .policy_for("/v1/bouquets")
            .expect("the catalogue is cached");
        assert_eq!(
            list.query,
            QueryKey::Only(
                [
                    "vendorId",
                    "sort",
                    "limit",
                    "cursor",
                    "minPrice",
                    "maxPrice",
                    "minFreshness",
                    "postcode",
                    "country",
                    "date",
                    "occasion",
                    "q"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        assert_eq!(list.headers, vec!["authorization".to_owned()]);
        assert!(list.max <= Duration::from_secs(10));
        for uncached in [
            "/v1/bouquets/01J/photo-uploads",
            "/v1/orders",
            "/v1/cart",
            "/v1/vendors/v/bouquets",
        ] {
            assert!(cache.policy_for(uncached).is_none(), "{uncached}");
        }
        let request = |query: &str, auth: Option<&str>| Incoming {
            method: "GET".into(),
            path: "/v1/bouquets".into(),
            raw_query: query.into(),
            headers: auth
                .map(|a| vec![("Authorization".into(), a.into())])
                .unwrap_or_default(),
            ..Incoming::default()
        };
        let key = |i: &Incoming| EdgeCache::key(list, i);
        assert_eq!(
            key(&request("limit=5&cursor=x", None)),
            key(&request("cursor=x&limit=5&bust=123", None)),
            "made-up query strings do not miss the cache"
        );
        assert_ne!(
            key(&request("limit=5", None)),
            key(&request("limit=6", None))
        );
        assert_ne!(
            key(&request("limit=5", None)),
            key(&request("limit=5", Some("Bearer t")))
        );
    }

    #[test]
    fn one_bouquet_is_cached_for_readers_and_its_writes_reach_the_api_with_their_headers() {
        let cache = EdgeCache::from_template(&Template::repository().unwrap());
        let one = "/v1/bouquets/01JF3W8K2M4N6P8Q0R2S4T6V8W";
        let policy = cache.policy_for(one).expect("one bouquet is cached");
        assert_eq!(policy.query, QueryKey::None);
        assert_eq!(policy.headers, vec!["authorization".to_owned()]);
        for method in ["GET", "HEAD", "PATCH", "DELETE"] {
            assert!(cache.allows(method, one), "{method}");
        }
        for header in [
            "Authorization",
            "If-Match",
            "Idempotency-Key",
            "Content-Type",
            "X-Correlation-Id",
        ] {
            assert!(cache.reaches_origin(one, header), "{header}");
        }
        for header in ["If-None-Match", "Cookie", "X-Made-Up"] {
            assert!(!cache.reaches_origin(one, header), "{header}");
        }
        let forwarded = cache.forwarded(&Incoming {
            method: "GET".into(),
            path: one.into(),
            headers: vec![
                ("X-Origin-Verify".into(), "the edge's".into()),
                ("X-Made-Up".into(), "1".into()),
            ],
            ..Incoming::default()
        });
        assert_eq!(
            forwarded.headers,
            vec![("X-Origin-Verify".to_owned(), "the edge's".to_owned())],
            "the origin's custom header always reaches it"
        );
        // Below it, as /v1/*: everything reaches the API.
        assert!(cache.reaches_origin(&format!("{one}/photo-uploads"), "X-Made-Up"));
    }

    #[test]
    fn the_edge_answers_a_viewer_holding_the_current_etag_not_modified() {
        let viewer = |etag: Option<&str>| Incoming {
            method: "GET".into(),
            path: "/v1/bouquets/b".into(),
            headers: etag
                .map(|e| vec![("If-None-Match".into(), e.into())])
                .unwrap_or_default(),
            ..Incoming::default()
        };
        let answer = || {
            (
                StatusCode::OK,
                vec![
                    ("etag".to_owned(), "\"3\"".to_owned()),
                    ("content-length".to_owned(), "2".to_owned()),
                ],
                b"{}".to_vec(),
            )
        };
        let (status, headers, body) = not_modified(&viewer(Some("\"3\"")), answer());
        assert_eq!((status, body.len()), (StatusCode::NOT_MODIFIED, 0));
        assert_eq!(headers, vec![("etag".to_owned(), "\"3\"".to_owned())]);
        for other in [None, Some("\"2\"")] {
            assert_eq!(not_modified(&viewer(other), answer()).0, StatusCode::OK);
        }
    }
}
