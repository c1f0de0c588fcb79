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
//! - answers carry `X-Cache` (`Hit from cloudfront` / `Miss from cloudfront`) and `Age`.
//!
//! A behavior with a managed policy (CachingDisabled) passes everything to the origin.

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
    policy: Option<Policy>,
}

struct Entry {
    answer: Answer,
    stored: Instant,
    ttl: Duration,
}

#[derive(Default)]
pub struct EdgeCache {
    behaviors: Vec<Behavior>,
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
        let behaviors = template
            .resources()
            .filter(|(_, r)| r["Type"] == "AWS::CloudFront::Distribution")
            .flat_map(|(_, r)| {
                r["Properties"]["DistributionConfig"]["CacheBehaviors"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|b| {
                Some(Behavior {
                    pattern: b["PathPattern"].as_str()?.to_owned(),
                    policy: policy(template, &b["CachePolicyId"]),
                })
            })
            .collect();
        Self {
            behaviors,
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

    /// The cache policy of the behavior `path` falls under, if it caches.
    fn policy_for(&self, path: &str) -> Option<&Policy> {
        self.behaviors
            .iter()
            .find(|b| glob(b.pattern.as_bytes(), path.as_bytes()))?
            .policy
            .as_ref()
    }

    /// The request as the origin gets it: under a caching behavior, only the query strings
    /// the cache key names are forwarded (the template's origin request policies add none).
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

    /// `incoming` answered from the cache, or by `origin` (and kept when it may be).
    pub async fn serve<F>(&self, incoming: &Incoming, origin: F) -> Answer
    where
        F: Future<Output = Answer>,
    {
        let method = incoming.method.as_str();
        let policy = match self.policy_for(&incoming.path) {
            Some(policy) if method == "GET" || method == "HEAD" => policy.clone(),
            _ => return origin.await,
        };
        let key = Self::key(&policy, incoming);
        if let Some(answer) = self.fresh(&key) {
            return answer;
        }
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
            ttl(&policy, header(&headers, "cache-control"))
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

#[cfg(test)]
mod tests {
    use super::*;

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
                    "minFreshness"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        assert_eq!(list.headers, vec!["authorization".to_owned()]);
        assert!(list.max <= Duration::from_secs(10));
        for uncached in [
            "/v1/bouquets/01J",
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
}
