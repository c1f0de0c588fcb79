//! API Gateway's WebSocket API, locally (the template's `AWS::ApiGatewayV2::Api` with
//! `ProtocolType: WEBSOCKET`), on one port with its `@connections` management endpoint:
//!
//! - an upgrade runs the `$connect` authorizer (REQUEST type, with the query string and
//!   headers); its `Unauthorized` error is a 401 on the upgrade, a `Deny` a 403. Then the
//!   `$connect` route's function; a non-2xx answer refuses the connection with that status;
//! - each text frame is routed on `$request.body.action` (a frame that is not JSON, or names
//!   no route, goes to `$default`); the function gets API Gateway's WebSocket event, with the
//!   authorizer's context, and a route with a route response sends the function's `body`
//!   back on the connection;
//! - `POST /@connections/{id}` sends a frame, `GET` describes the connection, `DELETE` closes
//!   it; an unknown or closed connection is 410 `GoneException`, as the SDK expects;
//! - a connection idle for [`Limits::idle`] (no frame from the client) or open for
//!   [`Limits::max_age`] is closed (API Gateway: 10 min, 2 h), and `$disconnect` runs.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use bouquet_template::Template;

use crate::error::DevError;
use crate::faults;
use crate::lambda::{Invoke, Resolver};

/// API Gateway's frame limit (128 KB).
const MAX_FRAME: usize = 128 * 1024;
const API_ID: &str = "local-ws";
const STAGE: &str = "live";

/// How long a connection may stay idle or open.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub idle: Duration,
    pub max_age: Duration,
}

impl Default for Limits {
    /// API Gateway's: 10 minutes idle, 2 hours in all.
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(10 * 60),
            max_age: Duration::from_secs(2 * 3600),
        }
    }
}

enum Outgoing {
    Text(String),
    Close,
}

struct Connection {
    sender: mpsc::UnboundedSender<Outgoing>,
    connected_at: time::OffsetDateTime,
    last_active: time::OffsetDateTime,
    source_ip: String,
}

struct Route {
    invoke: Invoke,
    two_way: bool,
}

pub struct LocalWebSocketApi {
    routes: HashMap<String, Route>,
    authorizer: Option<Invoke>,
    /// The body field routes are selected on (`action` for `$request.body.action`).
    selection_field: String,
    connections: Mutex<HashMap<String, Connection>>,
    limits: Limits,
}

fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
}

fn gone(id: &str) -> Response<Full<Bytes>> {
    let mut response = reply(
        StatusCode::GONE,
        json!({ "message": format!("connection {id} is gone") }).to_string(),
    );
    response.headers_mut().insert(
        "x-amzn-errortype",
        HeaderValue::from_static("GoneException"),
    );
    response
}

impl LocalWebSocketApi {
    /// The template's WebSocket API, its functions invoked as `functions` says; `None` when
    /// the template has none.
    pub fn from_template(
        template: &Template,
        functions: &dyn Resolver,
        limits: Limits,
    ) -> Result<Option<Arc<Self>>, DevError> {
        let Some(api) = template.websocket_api()? else {
            return Ok(None);
        };
        let selection_field = api
            .route_selection
            .strip_prefix("$request.body.")
            .ok_or_else(|| {
                DevError::Unsupported(format!(
                    "route selection {:?} ($request.body.<field> only)",
                    api.route_selection
                ))
            })?
            .to_owned();
        let mut routes = HashMap::new();
        for route in &api.routes {
            routes.insert(
                route.key.clone(),
                Route {
                    invoke: functions.require(&route.binary)?,
                    two_way: route.two_way,
                },
            );
        }
        let authorizer = api
            .authorizer
            .as_deref()
            .map(|binary| functions.require(binary))
            .transpose()?;
        Ok(Some(Arc::new(Self {
            routes,
            authorizer,
            selection_field,
            connections: Mutex::default(),
            limits,
        })))
    }

    /// Open connections.
    pub fn connection_count(&self) -> usize {
        self.connections.lock().unwrap().len()
    }

    /// Serves upgrades and `@connections` from `listener` until the process stops.
    pub async fn serve_on(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        loop {
            let (stream, peer) = listener.accept().await?;
            // Small frames and answers: without this, Nagle's algorithm and delayed ACKs
            // hold each one back by up to 40 ms.
            let _ = stream.set_nodelay(true);
            let api = self.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let api = api.clone();
                    async move { Ok::<_, Infallible>(api.answer(request, peer).await) }
                });
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
                    .await
                {
                    tracing::debug!(%error, "websocket server connection closed");
                }
            });
        }
    }

    async fn answer(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: SocketAddr,
    ) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        if let Some(id) = path.strip_prefix("/@connections/") {
            // The SDK percent-encodes the id (API Gateway's end in `=`).
            let id = percent_encoding::percent_decode_str(id)
                .decode_utf8_lossy()
                .into_owned();
            let method = request.method().clone();
            let body = match Limited::new(request.into_body(), MAX_FRAME).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => return reply(StatusCode::PAYLOAD_TOO_LARGE, "frame over 128 KB"),
            };
            return self.manage(&method, &id, body);
        }
        let upgrade = request
            .headers()
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
        if !upgrade {
            return reply(
                StatusCode::UPGRADE_REQUIRED,
                "a WebSocket upgrade, or /@connections/{id}",
            );
        }
        self.connect(request, peer).await
    }

    /// The management API (`@connections`), as `PostToConnection` and friends reach it.
    fn manage(&self, method: &Method, id: &str, body: Bytes) -> Response<Full<Bytes>> {
        use crate::faults::{roll, Fault};
        if roll(Fault::ConnectionsThrottled) {
            return reply(
                StatusCode::TOO_MANY_REQUESTS,
                r#"{"message":"Too Many Requests"}"#,
            );
        }
        if roll(Fault::ConnectionsInternalError) {
            return reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"message":"Internal server error"}"#,
            );
        }
        let connections = self.connections.lock().unwrap();
        let Some(connection) = connections.get(id) else {
            return gone(id);
        };
        match *method {
            Method::POST => {
                let text = String::from_utf8_lossy(&body).into_owned();
                match connection.sender.send(Outgoing::Text(text)) {
                    Ok(()) => reply(StatusCode::OK, ""),
                    Err(_) => gone(id),
                }
            }
            Method::GET => reply(
                StatusCode::OK,
                json!({
                    "connectedAt": rfc3339(connection.connected_at),
                    "lastActiveAt": rfc3339(connection.last_active),
                    "identity": { "sourceIp": connection.source_ip, "userAgent": "" },
                })
                .to_string(),
            ),
            Method::DELETE => {
                let _ = connection.sender.send(Outgoing::Close);
                reply(StatusCode::NO_CONTENT, "")
            }
            _ => reply(StatusCode::METHOD_NOT_ALLOWED, ""),
        }
    }

    fn request_context(
        &self,
        route_key: &str,
        event_type: &str,
        connection_id: &str,
        connected_at: time::OffsetDateTime,
        source_ip: &str,
        authorizer: &Value,
    ) -> Value {
        let at = now();
        let mut context = json!({
            "routeKey": route_key,
            "eventType": event_type,
            "extendedRequestId": ulid::Ulid::new().to_string(),
            "requestTime": rfc3339(at),
            "messageDirection": "IN",
            "stage": STAGE,
            "connectedAt": connected_at.unix_timestamp() * 1000,
            "requestTimeEpoch": (at.unix_timestamp_nanos() / 1_000_000) as i64,
            "identity": { "sourceIp": source_ip },
            "requestId": ulid::Ulid::new().to_string(),
            "domainName": "127.0.0.1",
            "connectionId": connection_id,
            "apiId": API_ID,
        });
        if authorizer.is_object() {
            context["authorizer"] = authorizer.clone();
        }
        context
    }

    async fn connect(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: SocketAddr,
    ) -> Response<Full<Bytes>> {
        let Some(key) = request.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
            return reply(StatusCode::BAD_REQUEST, "no Sec-WebSocket-Key");
        };
        let connection_id = format!("{}=", &ulid::Ulid::new().to_string()[10..]);
        let connected_at = now();
        let source_ip = peer.ip().to_string();
        let query: HashMap<String, String> = request
            .uri()
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let headers: serde_json::Map<String, Value> = request
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or_default())))
            .collect();

        // The authorizer, then `$connect`.
        let mut authorizer_context = Value::Null;
        if let Some(authorize) = &self.authorizer {
            let event = json!({
                "type": "REQUEST",
                "methodArn": format!("arn:aws:execute-api:local:123456789012:{API_ID}/{STAGE}/$connect"),
                "headers": headers,
                "queryStringParameters": query,
                "stageVariables": {},
                "requestContext": self.request_context("$connect", "CONNECT", &connection_id, connected_at, &source_ip, &Value::Null),
            });
            match authorize(event).await {
                Ok(answer) => {
                    let allowed = answer["policyDocument"]["Statement"]
                        .as_array()
                        .is_some_and(|s| s.iter().all(|s| s["Effect"] == "Allow") && !s.is_empty());
                    if !allowed {
                        return reply(StatusCode::FORBIDDEN, r#"{"message":"Forbidden"}"#);
                    }
                    let mut context = answer["context"].clone();
                    if !context.is_object() {
                        context = json!({});
                    }
                    context["principalId"] = answer["principalId"].clone();
                    authorizer_context = context;
                }
                Err(error) if bouquet_app::store::describe(&error).contains("Unauthorized") => {
                    return reply(StatusCode::UNAUTHORIZED, r#"{"message":"Unauthorized"}"#);
                }
                Err(error) => {
                    tracing::warn!(%error, "websocket authorizer failed");
                    return reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        r#"{"message":"Internal server error"}"#,
                    );
                }
            }
        }
        if let Some(route) = self.routes.get("$connect") {
            let mut event = json!({
                "headers": headers,
                "queryStringParameters": query,
                "isBase64Encoded": false,
                "requestContext": self.request_context("$connect", "CONNECT", &connection_id, connected_at, &source_ip, &authorizer_context),
            });
            if query.is_empty() {
                event["queryStringParameters"] = Value::Null;
            }
            match (route.invoke)(event).await {
                Ok(answer) => {
                    let status = answer["statusCode"].as_u64().unwrap_or(200) as u16;
                    if !(200..300).contains(&status) {
                        if status >= 500 {
                            // It may have stored the connection before failing.
                            faults::note_undelivered_disconnect(&connection_id);
                        }
                        return reply(
                            StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN),
                            "",
                        );
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "$connect failed");
                    faults::note_undelivered_disconnect(&connection_id);
                    return reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        r#"{"message":"Internal server error"}"#,
                    );
                }
            }
        }

        let (sender, receiver) = mpsc::unbounded_channel();
        self.connections.lock().unwrap().insert(
            connection_id.clone(),
            Connection {
                sender,
                connected_at,
                last_active: connected_at,
                source_ip: source_ip.clone(),
            },
        );
        let api = self.clone();
        tokio::spawn(async move {
            match hyper::upgrade::on(request).await {
                Ok(upgraded) => {
                    let socket = WebSocketStream::from_raw_socket(
                        TokioIo::new(upgraded),
                        Role::Server,
                        None,
                    )
                    .await;
                    api.clone()
                        .run(
                            socket,
                            receiver,
                            &connection_id,
                            connected_at,
                            &source_ip,
                            &authorizer_context,
                        )
                        .await;
                }
                Err(error) => tracing::warn!(%error, "websocket upgrade failed"),
            }
            api.connections.lock().unwrap().remove(&connection_id);
            if let Some(route) = api.routes.get("$disconnect") {
                let event = json!({
                    "isBase64Encoded": false,
                    "requestContext": api.request_context("$disconnect", "DISCONNECT", &connection_id, connected_at, &source_ip, &authorizer_context),
                });
                match (route.invoke)(event).await {
                    Ok(answer) if answer["statusCode"].as_u64().unwrap_or(200) < 500 => {}
                    Ok(answer) => {
                        tracing::warn!(status = %answer["statusCode"], "$disconnect failed");
                        faults::note_undelivered_disconnect(&connection_id);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "$disconnect failed");
                        faults::note_undelivered_disconnect(&connection_id);
                    }
                }
            }
        });

        let mut response = reply(StatusCode::SWITCHING_PROTOCOLS, "");
        let headers = response.headers_mut();
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
        if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
            headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
        }
        response
    }

    /// One open connection: frames in, routed; frames out, from `@connections`; closed on
    /// the idle and age limits.
    async fn run(
        self: Arc<Self>,
        socket: WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>,
        mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
        connection_id: &str,
        connected_at: time::OffsetDateTime,
        source_ip: &str,
        authorizer: &Value,
    ) {
        let (mut sink, mut stream) = socket.split();
        let max_age = tokio::time::sleep(self.limits.max_age);
        tokio::pin!(max_age);
        loop {
            let idle = tokio::time::sleep(self.limits.idle);
            tokio::select! {
                frame = stream.next() => {
                    let text = match frame {
                        Some(Ok(Message::Text(text))) => text.to_string(),
                        Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    };
                    if let Some(connection) = self.connections.lock().unwrap().get_mut(connection_id) {
                        connection.last_active = now();
                    }
                    if let Some(answer) = self.message(&text, connection_id, connected_at, source_ip, authorizer).await {
                        if sink.send(Message::text(answer)).await.is_err() {
                            return;
                        }
                    }
                }
                next = outgoing.recv() => match next {
                    Some(Outgoing::Text(text)) => {
                        if sink.send(Message::text(text)).await.is_err() {
                            return;
                        }
                    }
                    Some(Outgoing::Close) | None => {
                        let _ = sink.send(Message::Close(None)).await;
                        return;
                    }
                },
                () = idle => {
                    tracing::info!(%connection_id, "idle limit: closing");
                    let _ = sink.send(Message::Close(None)).await;
                    return;
                }
                () = &mut max_age => {
                    tracing::info!(%connection_id, "connection age limit: closing");
                    let _ = sink.send(Message::Close(None)).await;
                    return;
                }
            }
        }
    }

    /// Routes one frame; returns what goes back on the connection.
    async fn message(
        &self,
        text: &str,
        connection_id: &str,
        connected_at: time::OffsetDateTime,
        source_ip: &str,
        authorizer: &Value,
    ) -> Option<String> {
        let selected = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|body| body[&self.selection_field].as_str().map(str::to_owned))
            .filter(|key| self.routes.contains_key(key) && !key.starts_with('$'));
        let key = selected.unwrap_or_else(|| "$default".to_owned());
        let Some(route) = self.routes.get(&key) else {
            return Some(
                json!({ "message": "Forbidden", "connectionId": connection_id }).to_string(),
            );
        };
        let mut context = self.request_context(
            &key,
            "MESSAGE",
            connection_id,
            connected_at,
            source_ip,
            authorizer,
        );
        context["messageId"] = json!(ulid::Ulid::new().to_string());
        let event = json!({ "body": text, "isBase64Encoded": false, "requestContext": context });
        match (route.invoke)(event).await {
            Ok(answer) if route.two_way => answer["body"].as_str().map(str::to_owned),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(route = %key, %error, "websocket route failed");
                Some(
                    json!({ "message": "Internal server error", "connectionId": connection_id })
                        .to_string(),
                )
            }
        }
    }
}
