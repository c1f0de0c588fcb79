//! The per-request context and [`run`], the pipeline around every handler.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::Instrument;

use lambda_http::http::{HeaderMap, HeaderValue, Method};
use lambda_http::{Body, Request, RequestExt, Response};
use serde::de::DeserializeOwned;

use bouquet_domain::{FieldError, Timestamp};
use bouquet_store::IdempotencyPut;

use crate::body::{self, MAX_BODY_BYTES};
use crate::caller::Caller;
use crate::idempotency::IdempotencyIntent;
use crate::problem::{self, ApiError, Unreadable};
use crate::reply::{self, Reply};
use bouquet_app::shops::{self, ShopStanding};
use bouquet_app::{App, Idempotency};

/// The route a function serves, as in `template.yaml`, and what it does on a shop's behalf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    /// Checked by the pipeline before the handler runs.
    pub standing: ShopStanding,
}

impl Route {
    /// A route whose shop members' writes a suspension refuses (every route's default).
    pub const fn new(method: &'static str, path: &'static str) -> Self {
        Self {
            method,
            path,
            standing: ShopStanding::MembersWrites,
        }
    }

    /// A route an administrator uses to write to the shop in its path (refused while that
    /// shop is suspended, as its members' writes are).
    pub const fn for_the_shop_in_the_path(self) -> Self {
        Self {
            standing: ShopStanding::ShopInPath,
            ..self
        }
    }

    /// A step of a shop's open orders: it goes on while the shop is suspended.
    pub const fn goes_on_while_suspended(self) -> Self {
        Self {
            standing: ShopStanding::OpenOrders,
            ..self
        }
    }

    /// Whether the route changes anything (every method but `GET` and `HEAD`).
    pub fn writes(&self) -> bool {
        !matches!(self.method, "GET" | "HEAD")
    }

    pub fn key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// Time kept back from the Lambda deadline to answer 503 instead of being killed.
const DEADLINE_MARGIN: Duration = Duration::from_millis(300);
/// Budget when there is no Lambda context (tests, tools).
const DEFAULT_BUDGET: Duration = Duration::from_secs(10);

pub const CORRELATION_HEADER: &str = "x-correlation-id";

/// Everything a handler may read about its request.
pub struct Ctx {
    pub app: App,
    pub route: Route,
    pub correlation_id: String,
    /// "Now" for this request, from the app's clock: one instant for all decisions.
    pub now: Timestamp,
    caller: Option<Caller>,
    idempotency: Option<IdempotencyIntent>,
    headers: HeaderMap,
    path: HashMap<String, String>,
    query: HashMap<String, String>,
    body: Vec<u8>,
}

impl Ctx {
    fn new(
        app: &App,
        request: &Request,
        route: Route,
        correlation_id: String,
    ) -> Result<Self, ApiError> {
        let body = body::bytes(request.body());
        if body.len() > MAX_BODY_BYTES {
            return Err(ApiError::Unreadable(Unreadable::TooLarge(MAX_BODY_BYTES)));
        }
        let caller = crate::caller::caller_of(request)?;
        let idempotency = match (&caller, request.method()) {
            // Scoped to the concrete resource: the same key on two orders' payments is two
            // requests, not a replay of the first.
            (Some(caller), &Method::POST) => IdempotencyIntent::parse(
                header_str(request.headers(), "idempotency-key"),
                caller.subject.as_str(),
                &format!("{} {}", request.method(), request.uri().path()),
                body,
            )?,
            _ => None,
        };
        let query = request.query_string_parameters();
        Ok(Self {
            app: app.clone(),
            route,
            correlation_id,
            now: app.clock.now(),
            caller,
            idempotency,
            headers: request.headers().clone(),
            path: request
                .path_parameters()
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            query: query
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            body: body.to_vec(),
        })
    }

    /// Who is signed in on a public route (no authorizer runs there): the gateway's claims if
    /// any, else the bearer token verified here as the authorizer would (the template gives
    /// the function the same issuer, audience and keys). `None` for an anonymous request or a
    /// token that does not verify: a public route answers it as anonymous.
    #[cfg(feature = "signed-in-readers")]
    pub async fn signed_in_caller(&self) -> Option<Caller> {
        if let Some(caller) = &self.caller {
            return Some(caller.clone());
        }
        let token = self.header("authorization")?.strip_prefix("Bearer ")?;
        let verifier = PUBLIC_ROUTE_VERIFIER.as_ref()?;
        let claims = verifier.verify(token).await.ok()?;
        Caller::from_claims(|name| claims.get(name).map(String::as_str)).ok()
    }

    /// The authenticated caller; 401 on a request without claims.
    pub fn caller(&self) -> Result<&Caller, ApiError> {
        self.caller.as_ref().ok_or(ApiError::Unauthenticated)
    }

    /// A path parameter parsed by `parse`; a malformed id is a 400 naming the parameter.
    pub fn path<T, E: ToString>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, ApiError> {
        let raw = self
            .path
            .get(name)
            .ok_or_else(|| ApiError::internal(format!("route has no path parameter {name}")))?;
        parse(raw).map_err(|e| ApiError::Invalid(vec![FieldError::new(format!("path/{name}"), e)]))
    }

    /// The route's [`ShopStanding`], checked once here for every handler: a suspended shop's
    /// write is refused (409 `vendor.suspended`) before anything else of it is read.
    async fn require_standing(&self) -> Result<(), ApiError> {
        let path_shop = self
            .path
            .get("vendorId")
            .and_then(|id| bouquet_domain::VendorId::parse(id).ok());
        shops::require_standing(
            &self.app,
            self.route.standing,
            self.route.writes(),
            self.caller.as_ref(),
            path_shop,
        )
        .await
        .map_err(ApiError::from)
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// `?from=&to=` as whole UTC days `YYYY-MM-DD` (default: the 30 days to today), at most
    /// `max_days` apart and in order.
    pub fn day_range(&self, max_days: u64) -> Result<(String, String), ApiError> {
        let day = |name: &str, default: Timestamp| match self.query(name) {
            None => Ok(default),
            Some(text) => Timestamp::parse_rfc3339(&format!("{text}T00:00:00Z"))
                .filter(|_| text.len() == 10)
                .ok_or_else(|| {
                    ApiError::Invalid(vec![FieldError::new(
                        format!("query/{name}"),
                        "must be a date, YYYY-MM-DD",
                    )])
                }),
        };
        let to = day("to", self.now)?;
        let from = day("from", to.minus(Duration::from_secs(29 * 86_400)))?;
        let span = (to.as_millis() - from.as_millis()) / 86_400_000;
        if span < 0 || span as u64 >= max_days {
            return Err(ApiError::Invalid(vec![FieldError::new(
                "query/from",
                format!("must be on or before `to` and at most {max_days} days before it"),
            )]));
        }
        Ok((
            from.to_rfc3339()[..10].to_owned(),
            to.to_rfc3339()[..10].to_owned(),
        ))
    }

    /// `?limit=` (1..=100, default 20).
    pub fn limit(&self) -> Result<usize, ApiError> {
        match self.query("limit") {
            None => Ok(20),
            Some(text) => match text.parse::<usize>() {
                Ok(n @ 1..=100) => Ok(n),
                _ => Err(ApiError::Invalid(vec![FieldError::new(
                    "query/limit",
                    "must be a whole number from 1 to 100",
                )])),
            },
        }
    }

    pub fn cursor(&self) -> Option<&str> {
        self.query("cursor")
    }

    /// `If-Match` as a version number (`"3"`, `3` or `W/"3"`); `None` when absent.
    pub fn if_match(&self) -> Result<Option<u64>, ApiError> {
        let Some(raw) = self.header("if-match") else {
            return Ok(None);
        };
        let tag = raw.trim().trim_start_matches("W/").trim_matches('"');
        tag.parse().map(Some).map_err(|_| {
            ApiError::Invalid(vec![FieldError::new(
                "If-Match",
                "must be the ETag of the resource, e.g. \"3\"",
            )])
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        header_str(&self.headers, name)
    }

    /// `Cache-Control` for a public read: shared caches (the edge) may keep an anonymous
    /// answer `max_age` seconds; a signed-in caller's (a vendor managing its shop, who must
    /// see its own change at once) is never kept.
    pub fn public_cache(&self, max_age: u32) -> String {
        if self.header("authorization").is_some() {
            "private, no-store".to_owned()
        } else {
            format!("public, max-age={max_age}")
        }
    }

    /// The body exactly as it arrived (what a webhook's signature covers).
    pub fn raw_body(&self) -> &[u8] {
        &self.body
    }

    /// Whether the request has a body at all (some routes take an optional one).
    pub fn has_body(&self) -> bool {
        !self.body.iter().all(u8::is_ascii_whitespace)
    }

    /// The body as `T`; field errors name the JSON path.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        body::parse_json(self.header("content-type"), &self.body)
    }

    /// This request's idempotency key for a use case: the record to write with an outcome `T`
    /// is the reply `render` makes of it (the reply the client gets). `None` without a key.
    pub fn idempotency<'c, T>(
        &'c self,
        render: impl Fn(&T) -> Result<Reply, ApiError> + Send + Sync + 'c,
    ) -> Option<KeyedRequest<'c, T>> {
        let intent = self.idempotency.as_ref()?;
        let now = self.now;
        Some(KeyedRequest {
            key_hash: &intent.key_hash,
            // A reply that cannot be rendered fails the request too (500): the record holds
            // the same answer, so a replay says what the first request said.
            record: Box::new(move |outcome: &T| {
                let reply = render(outcome).unwrap_or_else(|error| {
                    let error = bouquet_store::describe(&error);
                    tracing::error!(%error, "reply not rendered");
                    Reply::empty(lambda_http::http::StatusCode::INTERNAL_SERVER_ERROR)
                });
                intent.record(&reply, now)
            }),
        })
    }
}

/// A request with an idempotency key, as a use case takes it ([`KeyedRequest::key`]).
pub struct KeyedRequest<'c, T> {
    key_hash: &'c str,
    record: Box<dyn Fn(&T) -> IdempotencyPut + Send + Sync + 'c>,
}

impl<T> KeyedRequest<'_, T> {
    pub fn key(&self) -> Idempotency<'_, T> {
        Idempotency {
            key_hash: self.key_hash,
            record: &*self.record,
        }
    }
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Echo the client's correlation id when it is sane, else mint one.
fn correlation_id(request: &Request) -> String {
    match header_str(request.headers(), CORRELATION_HEADER) {
        Some(id) if (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()) => {
            id.to_owned()
        }
        _ => ulid::Ulid::new().to_string(),
    }
}

/// The instant by which the handler must have answered.
fn deadline(request: &Request) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let lambda_deadline_ms = request
        .lambda_context_ref()
        .map(|c| c.deadline)
        .unwrap_or(0);
    if lambda_deadline_ms == 0 {
        return now + DEFAULT_BUDGET;
    }
    let wall_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let remaining = Duration::from_millis(lambda_deadline_ms.saturating_sub(wall_ms));
    now + remaining.saturating_sub(DEADLINE_MARGIN)
}

/// Runs `handler` inside the pipeline and always answers with an HTTP response: errors
/// become problem+json, replays the stored response; every response has `X-Correlation-ID`.
pub async fn run<H>(
    app: &App,
    request: Request,
    route: Route,
    handler: H,
) -> Result<Response<Body>, lambda_http::Error>
where
    H: AsyncFnOnce(&Ctx) -> Result<Reply, ApiError>,
{
    let correlation_id = correlation_id(&request);
    // Every line logged while the request runs carries its correlation id (with the
    // runtime's requestId, from its own span).
    let span =
        tracing::info_span!("request", correlation_id = %correlation_id, route = %route.key());
    bouquet_app::metrics::start();
    let response = answer(app, request, route, handler, correlation_id.clone())
        .instrument(span)
        .await;
    bouquet_app::metrics::flush(&correlation_id);
    response
}

async fn answer<H>(
    app: &App,
    request: Request,
    route: Route,
    handler: H,
    correlation_id: String,
) -> Result<Response<Body>, lambda_http::Error>
where
    H: AsyncFnOnce(&Ctx) -> Result<Reply, ApiError>,
{
    let started = Instant::now();
    let deadline = deadline(&request);
    let (result, fingerprint) = if !from_the_edge(EDGE_SECRET.as_ref(), request.headers()) {
        // Around the edge (the execute-api endpoint called directly): as if no such route.
        tracing::warn!(correlation_id = %correlation_id, route = %route.key(), "a request without the edge's header");
        (Err(ApiError::NotFound("route")), None)
    } else {
        match Ctx::new(app, &request, route, correlation_id.clone()) {
            Ok(ctx) => {
                let fingerprint = ctx.idempotency.as_ref().map(|i| i.fingerprint.clone());
                // With no time left, do not start work that could not finish.
                let result = if deadline <= tokio::time::Instant::now() {
                    Err(ApiError::deadline_exceeded())
                } else {
                    let checked_then_handled = async {
                        ctx.require_standing().await?;
                        handler(&ctx).await
                    };
                    match tokio::time::timeout_at(deadline, checked_then_handled).await {
                        Ok(result) => result,
                        Err(_) => Err(ApiError::deadline_exceeded()),
                    }
                };
                (result, fingerprint)
            }
            Err(error) => (Err(error), None),
        }
    };
    let mut response = match result {
        Ok(Reply {
            replay: Some(record),
            body,
            ..
        }) if Some(&record.fingerprint) == fingerprint.as_ref() => {
            // A body read again for the replay (an order as the caller may see it now)
            // stands in for the stored one.
            let body = body.map_or_else(|| record.body.clone(), |body| body.to_string());
            let mut response = reply::build(
                lambda_http::http::StatusCode::from_u16(record.status).unwrap_or_default(),
                "application/json",
                body,
            );
            response
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            if let Some(location) = record
                .location
                .as_deref()
                .and_then(|l| HeaderValue::from_str(l).ok())
            {
                response.headers_mut().insert("location", location);
            }
            response
        }
        // The key was used for another request.
        Ok(Reply {
            replay: Some(_), ..
        }) => problem_response(&ApiError::idempotency_key_reused()),
        Ok(reply) => reply.into_response(),
        Err(error) => {
            if let ApiError::Internal(source) = &error {
                let error = bouquet_store::describe(source.as_ref());
                tracing::error!(correlation_id = %correlation_id, route = %route.key(), %error, "request failed");
            }
            problem_response(&error)
        }
    };
    if let Ok(value) = HeaderValue::from_str(&correlation_id) {
        response.headers_mut().insert(CORRELATION_HEADER, value);
    }
    security_headers(response.headers_mut());
    tracing::info!(
        correlation_id = %correlation_id,
        route = %route.key(),
        status = response.status().as_u16(),
        duration_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    Ok(response)
}

/// The verifier of a public route's optional token, once per container (`JWKS_URL`, or the
/// dev stack's `LOCAL_JWT_SECRET`); unset, every request is anonymous.
#[cfg(feature = "signed-in-readers")]
static PUBLIC_ROUTE_VERIFIER: std::sync::LazyLock<Option<bouquet_authn::Verifier>> =
    std::sync::LazyLock::new(|| {
        bouquet_authn::Verifier::from_env()
            .inspect_err(|error| tracing::warn!(%error, "no token verifier: readers are anonymous"))
            .ok()
    });

/// The digest of the header CloudFront adds to every request it sends the API
/// (`ORIGIN_VERIFY`, the template's `EdgeOriginSecret`), once per container; unset, every
/// request is taken (tests, a stack without an edge).
static EDGE_SECRET: std::sync::LazyLock<Option<EdgeSecret>> = std::sync::LazyLock::new(|| {
    std::env::var("ORIGIN_VERIFY")
        .ok()
        .filter(|secret| !secret.is_empty())
        .map(|secret| EdgeSecret::new(&secret))
});

/// The edge's secret, kept as its digest: a request's header is compared digest to digest,
/// so that the time taken says nothing of the secret.
struct EdgeSecret([u8; 32]);

impl EdgeSecret {
    fn new(secret: &str) -> Self {
        Self(digest(secret.as_bytes()))
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).into()
}

/// Whether a request came through the edge: it carries the edge's header.
fn from_the_edge(secret: Option<&EdgeSecret>, headers: &HeaderMap) -> bool {
    let Some(secret) = secret else { return true };
    let given = headers
        .get("x-origin-verify")
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    digest(given) == secret.0
}

/// What every answer carries, whichever way it came (the edge's response headers policy sets
/// the same on the way out; these cover a call that reached the API directly): no MIME
/// sniffing, HTTPS only, and nothing kept by a cache unless the route said otherwise (the
/// public reads say `public, max-age=...`).
fn security_headers(headers: &mut lambda_http::http::HeaderMap) {
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        "strict-transport-security",
        HeaderValue::from_static("max-age=63072000; includeSubDomains"),
    );
    headers
        .entry("cache-control")
        .or_insert(HeaderValue::from_static("no-store"));
}

fn problem_response(error: &ApiError) -> Response<Body> {
    let mut response = reply::build(
        problem::status(error),
        "application/problem+json",
        problem::document(error).to_string(),
    );
    if let Some(seconds) = error.retry_after() {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_request_with_the_edges_header_comes_from_the_edge() {
        let with = |value: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                headers.insert("x-origin-verify", HeaderValue::from_str(value).unwrap());
            }
            headers
        };
        let secret = EdgeSecret::new("s3cret");
        assert!(from_the_edge(Some(&secret), &with(Some("s3cret"))));
        for other in [None, Some(""), Some("s3cre"), Some("s3cret ")] {
            assert!(!from_the_edge(Some(&secret), &with(other)), "{other:?}");
        }
        assert!(from_the_edge(None, &with(None)), "no edge configured");
    }

    #[test]
    fn every_answer_is_nosniff_https_only_and_uncached_unless_the_route_says() {
        let mut headers = HeaderMap::new();
        security_headers(&mut headers);
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert!(headers["strict-transport-security"]
            .to_str()
            .unwrap()
            .starts_with("max-age="));
        assert_eq!(headers["cache-control"], "no-store");
        let mut public = HeaderMap::new();
        public.insert(
            "cache-control",
            HeaderValue::from_static("public, max-age=5"),
        );
        security_headers(&mut public);
        assert_eq!(public["cache-control"], "public, max-age=5");
    }
}
