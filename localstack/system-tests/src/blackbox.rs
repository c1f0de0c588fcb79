//! A client of a running stack from the outside, as a browser, a vase or a team's smoke check
//! reaches it: HTTP to the API, WebSocket to the live API, MQTT over TLS to the broker. The
//! chaos soak (`soak`) and the smoke suite (`smoke`) use it; neither links a handler.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// One HTTP answer: status, the `ETag` if any, and the body as JSON (`Null` when empty).
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub etag: Option<String>,
    /// `X-Cache`: whether the edge answered from its cache.
    pub cache: Option<String>,
    pub body: Value,
    /// From sending the request to reading the whole answer.
    pub took: Duration,
}

impl Answer {
    pub fn code(&self) -> Option<&str> {
        self.body["code"].as_str()
    }

    /// Worth repeating as it was (same idempotency key): throttled, the way failed, or the
    /// key is busy in another transaction (`idempotency.in_progress`, sent with `Retry-After`:
    /// DynamoDB's `TransactionConflict` on the key's record, which the soak injects too).
    pub fn transient(&self) -> bool {
        matches!(self.status, 0 | 429 | 500 | 502 | 504)
            || (self.status == 503 && self.code() != Some("payment.unavailable"))
            || (self.status == 409 && self.code() == Some("idempotency.in_progress"))
    }
}

/// The API at `base` (`http://127.0.0.1:3000`).
#[derive(Clone)]
pub struct Api {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Api {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// The API at `base`, reached from the loopback address `source` (`127.0.0.12`): a
    /// visitor of its own for the edge's per-address limits, as a crowd is on AWS.
    pub fn from_address(base: &str, source: std::net::IpAddr) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(source));
        Self {
            base: base.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// One request; a failure to reach the API is status 0 (with the reason as the body).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Answer {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let payload = match body {
            Some(body) => {
                request = request.header("content-type", "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let sent = std::time::Instant::now();
        let failed = |reason: String| Answer {
            status: 0,
            etag: None,
            cache: None,
            body: Value::String(reason),
            took: sent.elapsed(),
        };
        let request = match request.body(Full::new(payload)) {
            Ok(request) => request,
            Err(e) => return failed(e.to_string()),
        };
        let response =
            match tokio::time::timeout(Duration::from_secs(35), self.client.request(request)).await
            {
                Ok(Ok(response)) => response,
                Ok(Err(e)) => return failed(e.to_string()),
                Err(_) => return failed("no answer in 35 s".into()),
            };
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let cache = response
            .headers()
            .get("x-cache")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match response.into_body().collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) => return failed(e.to_string()),
        };
        Answer {
            status,
            etag,
            cache,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            took: sent.elapsed(),
        }
    }

    /// A browser's form upload: `fields` (a JSON object of strings), then `file`, as
    /// `multipart/form-data` to the absolute `url` (an S3 POST policy's). The answer's status (0
    /// when it could not be sent).
    pub async fn post_form(&self, url: &str, fields: &Value, file: &[u8]) -> u16 {
        let (content_type, body) = devstack::seed::form_upload(fields, file);
        let request = hyper::Request::post(url)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)));
        let Ok(request) = request else { return 0 };
        match tokio::time::timeout(Duration::from_secs(35), self.client.request(request)).await {
            Ok(Ok(response)) => response.status().as_u16(),
            _ => 0,
        }
    }

    /// [`Self::send`], repeated with the same headers (the same idempotency key) while the
    /// answer is [`Answer::transient`]: up to 8 tries, backing off from 100 ms.
    pub async fn send_retried(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (Answer, u32) {
        let mut pause = Duration::from_millis(100);
        let mut tries = 1;
        loop {
            let answer = self.send(method, path, token, headers, body).await;
            if !answer.transient() || tries == 8 {
                return (answer, tries);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(3));
            tries += 1;
        }
    }
}

impl Api {
    /// A POST with an `Idempotency-Key` (a new one unless `key` is given), repeated with that
    /// key while the answer is transient ([`Api::send_retried`]).
    pub async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (Answer, u32) {
        let key = key.map(str::to_owned).unwrap_or_else(self::key);
        self.send_retried("POST", path, token, &[("idempotency-key", &key)], body)
            .await
    }

    /// `seller` (a vendor's token) opens its shop's payout account; returns the answer
    /// (`accountId`, `url`, `chargesEnabled`).
    pub async fn start_payouts(&self, seller: &str, vendor_id: &str) -> Result<Value, String> {
        let console = json!({
            "returnUrl": format!("{}/#/vendor", self.base),
            "refreshUrl": format!("{}/#/vendor", self.base),
        });
        let path = format!("/v1/vendors/{vendor_id}/payouts/onboarding");
        let (opened, _) = self.post(&path, Some(seller), None, Some(&console)).await;
        if opened.status != 200 {
            return Err(format!("payouts onboarding answered {opened:?}"));
        }
        Ok(opened.body)
    }

    /// On the dev stack: [`Api::start_payouts`], then the simulated provider's report that the
    /// account takes charges, through the webhook route as finishing its onboarding page does.
    pub async fn onboard_payouts_locally(
        &self,
        seller: &str,
        vendor_id: &str,
    ) -> Result<(), String> {
        let opened = self.start_payouts(seller, vendor_id).await?;
        let account = opened["accountId"].as_str().ok_or("no accountId")?;
        let (signature, event) =
            devstack::console::simulated_account_report(account, vendor_id, true);
        let event: Value = serde_json::from_slice(&event).map_err(|e| e.to_string())?;
        let (reported, _) = self
            .send_retried(
                "POST",
                "/v1/payments/webhook",
                None,
                &[("stripe-signature", &signature)],
                Some(&event),
            )
            .await;
        if reported.status != 200 || reported.body["outcome"] != "changed" {
            return Err(format!("the account report answered {reported:?}"));
        }
        Ok(())
    }
}

/// A live-API client: connects with `token`, subscribes to `channels`, and hands every frame's
/// text to `read` until the socket closes or `stop` fires.
pub async fn subscribe(
    ws_base: &str,
    token: Option<&str>,
    channels: &[&str],
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    String,
> {
    let url = match token {
        Some(token) => format!("{}/?token={token}", ws_base.trim_end_matches('/')),
        None => format!("{}/", ws_base.trim_end_matches('/')),
    };
    let (mut socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    // As a client must: subscribe again until confirmed. A route whose function failed answers
    // API Gateway's `{"message":"Internal server error",...}`, which is no confirmation (the
    // chaos soak kills a subscribe now and then).
    let mut last = String::new();
    for _ in 0..5 {
        socket
            .send(Message::text(
                serde_json::json!({"action": "subscribe", "channels": channels}).to_string(),
            ))
            .await
            .map_err(|e| format!("subscribe: {e}"))?;
        match tokio::time::timeout(Duration::from_secs(15), socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) if text.contains("\"subscribed\"") => {
                return Ok(socket)
            }
            other => last = format!("{other:?}"),
        }
    }
    Err(format!("the subscription was not confirmed: {last}"))
}

/// A new idempotency key.
pub fn key() -> String {
    ulid::Ulid::new().to_string()
}

/// A token the dev stack accepts (its local signing secret), valid for two hours.
pub fn local_token(role: &str, sub: &str, vendor_id: Option<&str>) -> String {
    devstack::jwt::mint_verified(
        &devstack::jwt::secret_from_env(),
        role,
        sub,
        vendor_id,
        Some(&bouquet_testkit::verified_email(sub)),
        7200,
    )
    .expect("mint a local token")
}
