//! The local HTTP API: API Gateway's routing and JWT authorizer in front of the handlers.

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

use bouquet_app::App;
use bouquet_http::lambda_http::{self, Body};
use bouquet_template::Template;

use crate::apigw::{self, Incoming, RoutePattern};
use crate::functions::{http_handler, HttpHandler};

/// API Gateway's payload limit.
const MAX_PAYLOAD: usize = 10 * 1024 * 1024;

pub struct LocalApi {
    routes: Vec<(RoutePattern, Target)>,
    app: App,
    jwt_secret: String,
    invocations: std::sync::atomic::AtomicUsize,
}

struct Target {
    binary: String,
    invoke: Invoke,
    authorized: bool,
}

/// How a route's function runs.
enum Invoke {
    /// Its handler, in this process (the same one its `main.rs` gives `lambda_http::run`).
    InProcess(HttpHandler),
    /// A function the dev stack has no handler for (a route added to the template only): its
    /// built binary under a local Runtime API, started at the first request.
    Binary(Arc<BinaryFunction>),
}

/// Where built function binaries are, and the names the template's variables resolve to, so
/// routes without an in-process handler run their binary instead of failing the start.
pub struct BinaryFallback {
    pub dir: std::path::PathBuf,
    pub names: crate::provision::Names,
}

struct BinaryFunction {
    path: std::path::PathBuf,
    name: String,
    env: Vec<(String, String)>,
    process: tokio::sync::OnceCell<crate::runtime_api::FunctionProcess>,
}

impl BinaryFunction {
    async fn invoke(&self, event: serde_json::Value) -> Result<serde_json::Value, String> {
        let process = self
            .process
            .get_or_try_init(|| async {
                crate::runtime_api::FunctionProcess::spawn(&self.path, &self.name, &self.env)
                    .await
                    .map_err(|e| format!("{}: {e}", self.path.display()))
            })
            .await?;
        process
            .api
            .invoke(event, std::time::Duration::from_secs(30))
            .await
            .map_err(|e| format!("{e:?}"))
    }
}

impl LocalApi {
    /// Routes every `HttpApi` event of the template to its function's handler.
    pub fn from_template(
        template: &Template,
        app: App,
        jwt_secret: String,
    ) -> Result<Self, String> {
        Self::from_template_with(template, app, jwt_secret, None)
    }

    /// As [`from_template`](Self::from_template); with `fallback`, a route whose function has
    /// no handler in the dev stack runs the function's built binary (`fallback.dir/{binary}`).
    pub fn from_template_with(
        template: &Template,
        app: App,
        jwt_secret: String,
        fallback: Option<&BinaryFallback>,
    ) -> Result<Self, String> {
        let mut routes = Vec::new();
        let functions = template.functions().map_err(|e| e.to_string())?;
        for route in template.http_routes().map_err(|e| e.to_string())? {
            let invoke = match (http_handler(&route.binary), fallback) {
                (Some((_, handler)), _) => Invoke::InProcess(handler),
                (None, Some(fallback)) => {
                    let function = functions
                        .iter()
                        .find(|f| f.binary == route.binary)
                        .ok_or_else(|| format!("no function builds {}", route.binary))?;
                    let env = template.environment(function, &|v| {
                        crate::provision::resolve(template, v, &fallback.names)
                    });
                    Invoke::Binary(Arc::new(BinaryFunction {
                        path: fallback.dir.join(&route.binary),
                        name: route.binary.clone(),
                        env,
                        process: tokio::sync::OnceCell::new(),
                    }))
                }
                (None, None) => {
                    return Err(format!(
                        "template function {} has no handler in the dev stack",
                        route.binary
                    ))
                }
            };
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
            app,
            jwt_secret,
            invocations: Default::default(),
        })
    }

    /// Answers one request as API Gateway would.
    pub async fn handle(&self, incoming: Incoming) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        let Some((pattern, target, params)) =
            apigw::select(&self.routes, &incoming.method, &incoming.path)
        else {
            return message(StatusCode::NOT_FOUND, "Not Found");
        };
        let claims: Option<HashMap<String, String>> = if target.authorized {
            let authorization = incoming
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.as_str());
            match crate::jwt::verify(&self.jwt_secret, authorization) {
                Some(claims) => Some(claims),
                None => return message(StatusCode::UNAUTHORIZED, "Unauthorized"),
            }
        } else {
            None
        };
        let request_id = ulid::Ulid::new().to_string();
        let event = apigw::event(
            &incoming,
            pattern,
            &params,
            claims.as_ref(),
            &request_id,
            time::OffsetDateTime::now_utc(),
        );
        if let Invoke::Binary(function) = &target.invoke {
            self.invocations
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return match function.invoke(event).await {
                Ok(payload) => crate::runtime_api::http_response(&payload),
                Err(error) => {
                    tracing::error!(function = %target.binary, %error, "function failed");
                    message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
                }
            };
        }
        let Invoke::InProcess(handler) = &target.invoke else {
            return message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
        };
        let request = match lambda_http::request::from_str(&event.to_string()) {
            Ok(request) => request,
            Err(error) => {
                return message(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("bad event: {error}"),
                )
            }
        };
        self.invocations
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match handler(self.app.clone(), request).await {
            Ok(response) => {
                let status = response.status();
                let headers = response
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
                    .collect();
                let body = match response.into_body() {
                    Body::Text(text) => text.into_bytes(),
                    Body::Binary(bytes) => bytes,
                    _ => Vec::new(),
                };
                (status, headers, body)
            }
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
