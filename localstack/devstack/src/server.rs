//! The local HTTP API: API Gateway's routing and JWT authorizer in front of the functions,
//! which get API Gateway v2 payloads and answer as `lambda_http` does.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming as HyperBody};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use bouquet_template::Template;

use crate::apigw::{self, Incoming, RoutePattern};
use crate::error::DevError;
use crate::lambda::{Invoke, Resolver};

/// API Gateway's payload limit.
const MAX_PAYLOAD: usize = 10 * 1024 * 1024;

pub struct LocalApi {
    routes: Vec<(RoutePattern, Target)>,
    /// Answers what is not under `/v1` (the web console), when set.
    console: Option<crate::console::Console>,
    verifier: Arc<bouquet_authn::Verifier>,
    invocations: std::sync::atomic::AtomicUsize,
    /// The distribution's cache in front of the routes, when on.
    edge: Option<crate::edge_cache::EdgeCache>,
    /// The distribution's `ApiSecurityHeadersPolicy`, with the edge.
    api_headers: Vec<crate::edge_cache::PolicyHeader>,
    /// The edge's web ACL and origin header, and the stage's throttles, when on.
    limits: Option<crate::edge_limits::EdgeLimits>,
}

struct Target {
    binary: String,
    invoke: Invoke,
    authorized: bool,
}

impl LocalApi {
    /// The template's `HttpApi` routes, each calling its function as `functions` says.
    pub fn from_template(
        template: &Template,
        functions: &dyn Resolver,
        verifier: Arc<bouquet_authn::Verifier>,
    ) -> Result<Self, DevError> {
        let mut routes = Vec::new();
        for route in template.http_routes()? {
            let invoke = functions.require(&route.binary)?;
            routes.push((
                RoutePattern::new(&route.method, &route.path),
                Target {
                    binary: route.binary,
                    invoke,
                    authorized: route.authorized,
                },
            ));
        }
        Ok(Self {
            routes,
            console: None,
            verifier,
            invocations: Default::default(),
            edge: None,
            api_headers: Vec::new(),
            limits: None,
        })
    }

    /// Serves the web console beside the API, on the same origin.
    pub fn with_console(mut self, console: crate::console::Console) -> Self {
        self.console = Some(console);
        self
    }

    /// Puts the template's CloudFront caching in front of the routes, as on AWS (the
    /// console's origin is the same distribution).
    pub fn with_edge_cache(mut self, template: &Template) -> Self {
        self.edge = Some(crate::edge_cache::EdgeCache::from_template(template));
        self.api_headers = crate::edge_cache::api_security_headers(template);
        self
    }

    /// Enforces the template's limits in front of the routes, as CloudFront's web ACL and
    /// API Gateway's throttles do on AWS, and adds the edge's origin header.
    pub fn with_edge_limits(mut self, limits: crate::edge_limits::EdgeLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// The edge cache, when on.
    pub fn edge_cache(&self) -> Option<&crate::edge_cache::EdgeCache> {
        self.edge.as_ref()
    }

    /// Delivers a payment provider's signed `event` to the API's own webhook route, as the
    /// provider would (the simulated bank and onboarding page, the seed).
    pub async fn deliver_webhook(
        &self,
        signature: String,
        event: Vec<u8>,
        source_ip: &str,
    ) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        self.handle(Incoming {
            method: "POST".into(),
            path: "/v1/payments/webhook".into(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("stripe-signature".into(), signature),
            ],
            body: event,
            source_ip: source_ip.into(),
            ..Incoming::default()
        })
        .await
    }

    /// Answers one request as CloudFront (with the edge cache on) and API Gateway would.
    pub async fn handle(
        &self,
        mut incoming: Incoming,
    ) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        if let Some(limits) = &self.limits {
            if let Err(refused) = limits.admit(&mut incoming, std::time::Instant::now()) {
                return refused;
            }
        }
        match &self.edge {
            Some(edge) => {
                let (status, mut headers, body) = edge
                    .serve(&incoming, |forwarded| async move {
                        self.route(&forwarded).await
                    })
                    .await;
                // Every /v1 answer passes the distribution's response headers policy, the
                // gateway's own refusals too.
                if incoming.path.starts_with("/v1/") {
                    crate::edge_cache::apply_policy(&self.api_headers, &mut headers);
                }
                (status, headers, body)
            }
            None => self.route(&incoming).await,
        }
    }

    /// Answers one request as API Gateway would.
    async fn route(&self, incoming: &Incoming) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        let Some((pattern, target, params)) =
            apigw::select(&self.routes, &incoming.method, &incoming.path)
        else {
            return message(StatusCode::NOT_FOUND, "Not Found");
        };
        if let Some(limits) = &self.limits {
            let route_key = format!("{} {}", pattern.method, pattern.path);
            if let Err(throttled) = limits.throttle(&route_key, std::time::Instant::now()) {
                return throttled;
            }
        }
        let claims: Option<HashMap<String, String>> = if target.authorized {
            let authorization = incoming
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.as_str());
            match crate::jwt::verify(&self.verifier, authorization).await {
                Some(claims) => Some(claims),
                None => return message(StatusCode::UNAUTHORIZED, "Unauthorized"),
            }
        } else {
            None
        };
        let request_id = ulid::Ulid::new().to_string();
        let event = apigw::event(
            incoming,
            pattern,
            &params,
            claims.as_ref(),
            &request_id,
            time::OffsetDateTime::now_utc(),
        );
        self.invocations
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match (target.invoke)(event).await {
            Ok(payload) => crate::runtime_api::http_response(&payload),
            Err(error) => {
                tracing::error!(function = %target.binary, %error, "function failed");
                message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            }
        }
    }

    /// How many times a function was invoked (requests the authorizer or the router
    /// refused are not).
    pub fn invocations(&self) -> usize {
        self.invocations.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Serves on `address` until the process is stopped.
    pub async fn serve(self, address: SocketAddr) -> std::io::Result<()> {
        Arc::new(self)
            .serve_on(TcpListener::bind(address).await?)
            .await
    }

    /// Serves connections from `listener` (bound by the caller, e.g. on port 0).
    pub async fn serve_on(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        let api = self;
        loop {
            let (stream, peer) = listener.accept().await?;
            let api = api.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<HyperBody>| {
                    let api = api.clone();
                    async move { Ok::<_, Infallible>(api.answer(request, peer).await) }
                });
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(%error, "connection closed");
                }
            });
        }
    }

    async fn answer(&self, request: Request<HyperBody>, peer: SocketAddr) -> Response<Full<Bytes>> {
        // With the console on, this is the distribution, which compresses (`Compress: true`).
        let gzip = self.console.is_some()
            && request
                .headers()
                .get_all(hyper::header::ACCEPT_ENCODING)
                .iter()
                .any(|v| v.to_str().is_ok_and(|v| v.contains("gzip")));
        let response = self.answer_plain(request, peer).await;
        if gzip {
            compressed(response).await
        } else {
            response
        }
    }

    async fn answer_plain(
        &self,
        request: Request<HyperBody>,
        peer: SocketAddr,
    ) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_PAYLOAD).collect().await {
            Ok(collected) => collected.to_bytes().to_vec(),
            Err(_) => {
                return to_hyper(message(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "Request Entity Too Large",
                ))
            }
        };
        let path = parts.uri.path();
        // The dev stack's own writes are the developer's: a page elsewhere cannot post to them.
        if parts.method != hyper::Method::GET
            && parts.method != hyper::Method::HEAD
            && path.starts_with("/local/")
            && !same_origin_or_not_a_browser(&parts.headers)
        {
            return to_hyper(message(
                StatusCode::FORBIDDEN,
                "cross-origin writes to the dev stack's own routes are refused",
            ));
        }
        if let (Some(console), true) = (
            &self.console,
            parts.method == hyper::Method::POST && path == "/local/authenticate",
        ) {
            // The bank's answer to a simulated 3-D Secure payment, delivered to the API's own
            // webhook route as Stripe would deliver it.
            return match console.authenticate(&body).await {
                Ok((signature, event)) => to_hyper(
                    self.deliver_webhook(signature, event, &peer.ip().to_string())
                        .await,
                ),
                Err(refused) => refused,
            };
        }
        if let (Some(console), true) = (
            &self.console,
            parts.method == hyper::Method::POST && path.starts_with("/local/connect/"),
        ) {
            // The simulated provider reports the shop's account to the API's own webhook
            // route, as Stripe would, then sends the member back to the console.
            return match console.connect(path, &body) {
                Ok(crate::console::AccountReport {
                    signature,
                    event,
                    return_url,
                }) => {
                    let (status, headers, answer) = self
                        .deliver_webhook(signature, event, &peer.ip().to_string())
                        .await;
                    if status == StatusCode::OK {
                        to_hyper((
                            StatusCode::SEE_OTHER,
                            vec![("location".into(), return_url)],
                            Vec::new(),
                        ))
                    } else {
                        to_hyper((status, headers, answer))
                    }
                }
                Err(refused) => *refused,
            };
        }
        if let Some(console) = &self.console {
            if path != "/v1" && !path.starts_with("/v1/") {
                return console
                    .answer(Request::from_parts(parts, Bytes::from(body)))
                    .await;
            }
        }
        let incoming = Incoming {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            raw_query: parts.uri.query().unwrap_or("").to_owned(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body,
            source_ip: peer.ip().to_string(),
        };
        to_hyper(self.handle(incoming).await)
    }
}

/// Gzips an answer as CloudFront does with `Compress: true`: text, JavaScript, JSON, YAML and
/// SVG bodies of 1,000 bytes to 10 MB not already encoded.
async fn compressed(response: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    use std::io::Write;
    let (mut parts, body) = response.into_parts();
    let kind = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let compressible = kind.starts_with("text/")
        || ["javascript", "json", "yaml", "svg"]
            .iter()
            .any(|k| kind.contains(k));
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    if !compressible
        || parts.headers.contains_key(hyper::header::CONTENT_ENCODING)
        || !(1_000..=10_000_000).contains(&bytes.len())
    {
        return Response::from_parts(parts, Full::new(bytes));
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let Ok(gzipped) = encoder.write_all(&bytes).and_then(|()| encoder.finish()) else {
        return Response::from_parts(parts, Full::new(bytes));
    };
    parts.headers.remove(hyper::header::CONTENT_LENGTH);
    parts.headers.insert(
        hyper::header::CONTENT_ENCODING,
        hyper::header::HeaderValue::from_static("gzip"),
    );
    parts.headers.append(
        hyper::header::VARY,
        hyper::header::HeaderValue::from_static("accept-encoding"),
    );
    Response::from_parts(parts, Full::new(Bytes::from(gzipped)))
}

fn message(status: StatusCode, text: &str) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
    (
        status,
        vec![("content-type".into(), "application/json".into())],
        serde_json::json!({ "message": text })
            .to_string()
            .into_bytes(),
    )
}

fn to_hyper(
    (status, headers, body): (StatusCode, Vec<(String, String)>, Vec<u8>),
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::try_from(name),
            hyper::header::HeaderValue::try_from(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// Whether a write comes from the dev stack's own pages or from a program, never from a page
/// elsewhere (the check Go's `http.CrossOriginProtection` makes): a browser's
/// `Sec-Fetch-Site` must be `same-origin` or `none` (typed or bookmarked); without it, an
/// `Origin` must name this host; a request with neither comes from no browser (the scripts,
/// curl), which no other page can make a browser send.
pub fn same_origin_or_not_a_browser(headers: &hyper::HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site") {
        return matches!(site, "same-origin" | "none");
    }
    match (header("origin"), header("host")) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> hyper::HeaderMap {
        let mut map = hyper::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, hyper::header::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_page_elsewhere_cannot_write_to_the_dev_stacks_own_routes() {
        let host = ("host", "127.0.0.1:3000");
        for allowed in [
            headers(&[host]),
            headers(&[host, ("sec-fetch-site", "same-origin")]),
            headers(&[host, ("sec-fetch-site", "none")]),
            headers(&[host, ("origin", "http://127.0.0.1:3000")]),
        ] {
            assert!(same_origin_or_not_a_browser(&allowed), "{allowed:?}");
        }
        for refused in [
            // Issue 51: a plain form on any page the developer visits.
            headers(&[
                host,
                ("sec-fetch-site", "cross-site"),
                ("origin", "https://evil.example"),
            ]),
            headers(&[host, ("sec-fetch-site", "same-site")]),
            headers(&[host, ("origin", "https://evil.example")]),
            headers(&[host, ("origin", "http://127.0.0.1:3001")]),
            headers(&[host, ("origin", "null")]),
        ] {
            assert!(!same_origin_or_not_a_browser(&refused), "{refused:?}");
        }
    }
}
