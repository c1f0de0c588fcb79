//! The web console locally, on the API's origin (`http://127.0.0.1:3000/`): the static files
//! of `web/`, the `config.json` the console reads (WebSocket URL, sign-in mode), and the
//! local-only sign-in endpoint `POST /local/token`, which mints a token for a chosen role and
//! user. Deployed, CloudFront serves `web/` from S3 and Cognito signs people in; the template
//! has no such endpoint.

use std::path::{Path, PathBuf};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use tower::ServiceExt;
use tower_http::services::ServeDir;

/// How long a locally minted console token lasts.
const TOKEN_SECONDS: i64 = 8 * 3600;
const ROLES: [&str; 3] = ["customer", "vendor", "admin"];

pub struct Console {
    files: ServeDir,
    config: Value,
    jwt_secret: String,
    /// The simulated gateway's ledger, where `POST /local/authenticate` plays the bank.
    ledger: Option<bouquet_app::payments::TableLedger>,
    /// What the distribution's response headers policy adds to every console answer.
    security_headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    /// The emulator, whose SES keeps the mail the stack sent (`GET /local/mail`).
    emulator: Option<hyper::Uri>,
    /// The photo buckets on the emulator's S3: uploads posted to `/local/s3/{upload bucket}`,
    /// sizes served at `/photos/*`, as the bucket's endpoint and the distribution do deployed.
    photo_buckets: Option<PhotoBuckets>,
    /// Reads the photo bucket as the distribution's origin access control does (signed).
    photo_reader: Option<aws_sdk_s3::Client>,
    /// The stack's functions, whose sandboxes `GET /local/functions` reports.
    functions: Option<crate::lambda::Functions>,
    /// Signs as the functions sign their presigned reads of the upload bucket: a read's
    /// signature is checked against it, as S3 checks it.
    read_signer: Option<std::sync::Arc<bouquet_photos::PostPolicySigner>>,
}

/// The local console's origins: this machine (the simulated onboarding returns only there).
static LOCAL_CONSOLE: std::sync::LazyLock<bouquet_app::domain::vendor::ConsoleOrigins> =
    std::sync::LazyLock::new(bouquet_app::domain::vendor::ConsoleOrigins::this_machine);

/// A simulated provider's report of an account, ready for the webhook route: the
/// `Stripe-Signature`, the event, and where the member goes back to.
pub struct AccountReport {
    pub signature: String,
    pub event: Vec<u8>,
    pub return_url: String,
}

/// The template's `PhotoUploadBucket` and `PhotoBucket`, by their local names.
#[derive(Clone, Debug)]
pub struct PhotoBuckets {
    pub uploads: String,
    pub photos: String,
}

/// The headers the template's `ConsoleSecurityHeadersPolicy` makes CloudFront add, with the
/// local origins in the CSP where the deployed policy names AWS's: `websocket_origin` (the dev
/// stack's WebSocket API) and `user_pool_origin` (the emulator's user pool).
pub fn security_headers(
    template: &bouquet_template::Template,
    websocket_origin: &str,
    user_pool_origin: &str,
) -> Vec<(String, String)> {
    let Some(policy) = template.resource("ConsoleSecurityHeadersPolicy") else {
        return Vec::new();
    };
    let config = &policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"];
    let mut headers = Vec::new();
    let csp = &config["ContentSecurityPolicy"]["ContentSecurityPolicy"];
    let csp = csp["Fn::Sub"].as_str().or(csp.as_str()).unwrap_or_default();
    if !csp.is_empty() {
        headers.push((
            "content-security-policy".to_owned(),
            csp.replace(
                "wss://${WebSocketApi}.execute-api.${AWS::Region}.amazonaws.com",
                websocket_origin,
            )
            // Uploads go to the dev stack's own origin (`/local/s3`).
            .replace(
                " https://bouquet-${Stage}-photo-uploads-${AWS::AccountId}-${AWS::Region}.s3.${AWS::Region}.amazonaws.com",
                "",
            )
            .replace(
                "https://cognito-idp.${AWS::Region}.amazonaws.com",
                user_pool_origin,
            ),
        ));
    }
    let hsts = &config["StrictTransportSecurity"];
    if let Some(age) = hsts["AccessControlMaxAgeSec"].as_u64() {
        let mut value = format!("max-age={age}");
        if hsts["IncludeSubdomains"].as_bool() == Some(true) {
            value.push_str("; includeSubDomains");
        }
        headers.push(("strict-transport-security".to_owned(), value));
    }
    if !config["ContentTypeOptions"].is_null() {
        headers.push(("x-content-type-options".to_owned(), "nosniff".to_owned()));
    }
    if let Some(option) = config["FrameOptions"]["FrameOption"].as_str() {
        headers.push(("x-frame-options".to_owned(), option.to_owned()));
    }
    if let Some(policy) = config["ReferrerPolicy"]["ReferrerPolicy"].as_str() {
        headers.push(("referrer-policy".to_owned(), policy.to_owned()));
    }
    headers
}

/// `web/` in this repository.
pub fn repository_web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

/// The published contract, `infra/openapi.yaml`: served as `/openapi.yaml` beside the console
/// (its Redoc page is `/docs/`), as the deployed bucket holds a copy.
pub fn repository_openapi_document() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/openapi.yaml")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TokenRequest {
    role: String,
    sub: String,
    vendor_id: Option<String>,
    /// Signed in as verified: mail for this user goes here.
    email: Option<String>,
}

impl Console {
    /// Serves `dir`; `config` is what `/config.json` answers.
    pub fn new(dir: &Path, config: Value, jwt_secret: String) -> Self {
        Self {
            files: ServeDir::new(dir).append_index_html_on_directories(true),
            config,
            jwt_secret,
            ledger: None,
            security_headers: Vec::new(),
            emulator: None,
            photo_buckets: None,
            photo_reader: None,
            functions: None,
            read_signer: None,
        }
    }

    /// Lets `GET /local/mail` show what the stack sent through the emulator's SES at `endpoint`.
    pub fn with_sent_mail(mut self, endpoint: &str) -> Self {
        self.emulator = endpoint.trim_end_matches('/').parse().ok();
        self
    }

    /// Serves the photo buckets on the emulator at `endpoint` (see [`PhotoBuckets`]).
    /// Checks every presigned read of the upload bucket against `signer` (the functions'
    /// credentials, region and upload URL).
    pub fn with_read_signer(mut self, signer: bouquet_photos::PostPolicySigner) -> Self {
        self.read_signer = Some(std::sync::Arc::new(signer));
        self
    }

    /// Whether `query` is a presigned read of `key` that S3 would take now: unexpired, and its
    /// signature the one the functions' credentials make for it.
    async fn genuine_read(&self, key: &str, query: &str) -> bool {
        let Some(read) = presigned(query) else {
            return false;
        };
        if read.until() <= time::OffsetDateTime::now_utc() {
            return false;
        }
        let Some(signer) = &self.read_signer else {
            return false;
        };
        let signed_at = bouquet_app::domain::Timestamp::from_millis(
            (read.signed_at.unix_timestamp_nanos() / 1_000_000) as i64,
        );
        let expected = signer
            .presign_get(
                key,
                signed_at,
                std::time::Duration::from_secs(read.expires.max(0) as u64),
            )
            .await;
        expected.is_ok_and(|url| {
            presigned(url.split_once('?').map_or("", |(_, q)| q))
                .is_some_and(|again| again.signature == read.signature)
        })
    }

    pub fn with_photos(
        mut self,
        endpoint: &str,
        buckets: PhotoBuckets,
        reader: aws_sdk_s3::Client,
    ) -> Self {
        if self.emulator.is_none() {
            self.emulator = endpoint.trim_end_matches('/').parse().ok();
        }
        self.photo_buckets = Some(buckets);
        self.photo_reader = Some(reader);
        self
    }

    /// `GET /photos/{digest}/{width}.jpg`: the object of the photo bucket under that key, with
    /// its type and cache lifetime, as the distribution's `/photos/*` behaviour serves it.
    async fn photo(&self, path: &str) -> Response<Full<Bytes>> {
        let Some(buckets) = &self.photo_buckets else {
            return message(StatusCode::NOT_FOUND, "no photos here");
        };
        self.object(&buckets.photos, path.trim_start_matches('/'))
            .await
    }

    /// One object of the emulator's S3, read with the dev stack's credentials (the emulator
    /// answers no anonymous read).
    async fn object(&self, bucket: &str, key: &str) -> Response<Full<Bytes>> {
        let Some(reader) = &self.photo_reader else {
            return message(StatusCode::NOT_FOUND, "no photos here");
        };
        match reader.get_object().bucket(bucket).key(key).send().await {
            Ok(object) => {
                let content_type = object
                    .content_type()
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                let cache = object.cache_control().map(str::to_owned);
                let bytes = match object.body.collect().await {
                    Ok(bytes) => bytes.into_bytes(),
                    Err(error) => return message(StatusCode::BAD_GATEWAY, &error.to_string()),
                };
                let mut response = Response::new(Full::new(bytes));
                if let Ok(value) = content_type.parse() {
                    response
                        .headers_mut()
                        .insert(hyper::header::CONTENT_TYPE, value);
                }
                if let Some(value) = cache.and_then(|c| c.parse().ok()) {
                    response
                        .headers_mut()
                        .insert(hyper::header::CACHE_CONTROL, value);
                }
                response
            }
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                message(StatusCode::NOT_FOUND, "Not Found")
            }
            Err(error) => message(
                StatusCode::BAD_GATEWAY,
                &bouquet_app::store::describe(&error),
            ),
        }
    }

    /// Passes `request` to the emulator at `path` and its answer back: the S3 endpoint's
    /// status, type, cache lifetime and body (an S3 error is S3's XML, as the browser gets it).
    async fn forward(&self, request: Request<Bytes>, path: &str) -> Response<Full<Bytes>> {
        let Some(emulator) = &self.emulator else {
            return message(StatusCode::NOT_FOUND, "no emulator");
        };
        let Ok(uri) = format!("{emulator}{path}").parse::<hyper::Uri>() else {
            return message(StatusCode::BAD_REQUEST, "not a path");
        };
        let (parts, body) = request.into_parts();
        let mut outgoing = Request::builder().method(parts.method).uri(uri);
        for name in [hyper::header::CONTENT_TYPE, hyper::header::CONTENT_LENGTH] {
            if let Some(value) = parts.headers.get(&name) {
                outgoing = outgoing.header(name, value);
            }
        }
        let Ok(outgoing) = outgoing.body(Full::new(body)) else {
            return message(StatusCode::BAD_REQUEST, "not a request");
        };
        let client: hyper_util::client::legacy::Client<_, Full<Bytes>> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        match client.request(outgoing).await {
            Ok(answer) => {
                let (parts, body) = answer.into_parts();
                let bytes = match body.collect().await {
                    Ok(body) => body.to_bytes(),
                    Err(error) => return message(StatusCode::BAD_GATEWAY, &error.to_string()),
                };
                let mut response = Response::new(Full::new(bytes));
                *response.status_mut() = parts.status;
                for name in [
                    hyper::header::CONTENT_TYPE,
                    hyper::header::CACHE_CONTROL,
                    hyper::header::ETAG,
                ] {
                    if let Some(value) = parts.headers.get(&name) {
                        response.headers_mut().insert(name, value.clone());
                    }
                }
                response
            }
            Err(error) => message(StatusCode::BAD_GATEWAY, &error.to_string()),
        }
    }

    /// `GET /local/mail`: the emails the stack sent (the emulator's `/_aws/ses`), newest last,
    /// for a developer to read; nothing is delivered.
    async fn sent_mail(&self) -> Response<Full<Bytes>> {
        let Some(emulator) = &self.emulator else {
            return message(StatusCode::NOT_FOUND, "no emulator to read sent mail from");
        };
        let client: hyper_util::client::legacy::Client<_, Full<Bytes>> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let uri = format!("{emulator}/_aws/ses");
        let Ok(uri) = uri.parse::<hyper::Uri>() else {
            return message(StatusCode::INTERNAL_SERVER_ERROR, "the emulator's address");
        };
        match client.get(uri).await {
            Ok(answer) => match answer.into_body().collect().await {
                Ok(body) => respond(
                    StatusCode::OK,
                    "application/json",
                    String::from_utf8_lossy(&body.to_bytes()).into_owned(),
                ),
                Err(error) => message(StatusCode::BAD_GATEWAY, &error.to_string()),
            },
            Err(error) => message(StatusCode::BAD_GATEWAY, &error.to_string()),
        }
    }

    /// Adds `headers` ([`security_headers`]) to every answer, as the distribution does.
    pub fn with_security_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.security_headers = headers
            .into_iter()
            .filter_map(|(name, value)| Some((name.parse().ok()?, value.parse().ok()?)))
            .collect();
        self
    }

    /// Lets `GET /local/functions` report each function's sandboxes, throttles and times.
    pub fn with_functions(mut self, functions: crate::lambda::Functions) -> Self {
        self.functions = Some(functions);
        self
    }

    /// Lets `POST /local/authenticate` settle the simulated gateway's `tok_3ds` payments.
    pub fn with_ledger(mut self, ledger: bouquet_app::payments::TableLedger) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// `POST /local/payouts/{account}` `{amount, currency}`: the simulated provider pays
    /// `amount` (a decimal) out of the shop's account to its bank, arriving today (UTC), as
    /// Stripe's automatic payouts do deployed; the shop's earnings then list it.
    pub async fn pay_out(&self, path: &str, body: &[u8]) -> Response<Full<Bytes>> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct PayoutRequest {
            amount: String,
            currency: String,
        }
        let Some(ledger) = &self.ledger else {
            return message(StatusCode::NOT_FOUND, "Not Found");
        };
        let account = path.trim_start_matches("/local/payouts/");
        if !account.starts_with("acct_sim_")
            || !account
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return message(StatusCode::NOT_FOUND, "no such simulated account");
        }
        let request: PayoutRequest = match json_body(body, "{amount, currency}") {
            Ok(request) => request,
            Err(refused) => return *refused,
        };
        let amount =
            match bouquet_app::domain::Money::parse_price(&request.amount, &request.currency) {
                Ok(amount) => amount,
                Err(e) => return message(StatusCode::BAD_REQUEST, &format!("amount: {e}")),
            };
        let today = time::OffsetDateTime::now_utc().date().to_string();
        match ledger
            .pay_out(account, amount.minor(), amount.currency().code(), &today)
            .await
        {
            Ok(payout) => respond(
                StatusCode::CREATED,
                "application/json",
                json!({ "id": payout.id, "arrivalDate": payout.arrival_date,
                        "amount": amount.amount(), "currency": payout.currency })
                .to_string(),
            ),
            Err(e) => message(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        }
    }

    /// `POST /local/authenticate` `{orderId, attemptKey, approved}`: the bank's answer to a
    /// `tok_3ds` payment, as Stripe would report it: the simulated ledger records it, then a
    /// signed `payment_intent.succeeded` / `payment_failed` event goes to the API's own
    /// webhook route. Returns the signature and the event to deliver, or the refusal.
    pub async fn authenticate(
        &self,
        body: &[u8],
    ) -> Result<(String, Vec<u8>), Response<Full<Bytes>>> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Authentication {
            order_id: String,
            attempt_key: String,
            approved: bool,
        }
        let Some(ledger) = &self.ledger else {
            return Err(message(StatusCode::NOT_FOUND, "Not Found"));
        };
        let request: Authentication =
            json_body(body, "{orderId, attemptKey, approved}").map_err(|refused| *refused)?;
        let intent = ledger
            .authenticate(&request.attempt_key, request.approved)
            .await
            .map_err(|e| message(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()))?
            .ok_or_else(|| {
                message(
                    StatusCode::CONFLICT,
                    "no authentication is pending for this attempt",
                )
            })?;
        let kind = if request.approved {
            "payment_intent.succeeded"
        } else {
            "payment_intent.payment_failed"
        };
        let event = json!({
            "id": format!("evt_local_{}", ulid::Ulid::new()),
            "object": "event",
            "type": kind,
            "data": {"object": {"id": intent, "object": "payment_intent",
                "metadata": {"orderId": request.order_id, "attemptKey": request.attempt_key}}},
        })
        .to_string();
        let signature = bouquet_app::payments::stripe_webhook::sign(
            event.as_bytes(),
            crate::lambda::LOCAL_WEBHOOK_SECRET,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        );
        Ok((signature, event.into_bytes()))
    }

    /// `POST /local/connect/{account}` (the simulated provider's onboarding form, fields
    /// `enabled` and `return_url`): the provider reports the shop's account, as Stripe's
    /// `account.updated` does, through the API's own webhook route. Returns the signature,
    /// the event to deliver and where to send the member back, or the refusal.
    pub fn connect(
        &self,
        path: &str,
        body: &[u8],
    ) -> Result<AccountReport, Box<Response<Full<Bytes>>>> {
        let account = path.trim_start_matches("/local/connect/");
        let vendor_id = account
            .strip_prefix("acct_sim_")
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
            .ok_or_else(|| Box::new(message(StatusCode::NOT_FOUND, "no such simulated account")))?;
        let fields: std::collections::HashMap<String, String> =
            form_urlencoded::parse(body).into_owned().collect();
        let return_url = fields
            .get("return_url")
            .filter(|url| bouquet_app::domain::vendor::return_url(url, &LOCAL_CONSOLE).is_ok())
            .cloned()
            .ok_or_else(|| {
                Box::new(message(
                    StatusCode::BAD_REQUEST,
                    "return_url must be the console's",
                ))
            })?;
        let enabled = fields.get("enabled").map(String::as_str) == Some("true");
        let (signature, event) = simulated_account_report(account, vendor_id, enabled);
        Ok(AccountReport {
            signature,
            event,
            return_url,
        })
    }

    /// The console's configuration for the dev stack's ports.
    pub fn local_config(
        ws_port: u16,
        demo_vendor_id: Option<&str>,
        pool: Option<&crate::cognito::LocalUserPool>,
    ) -> Value {
        let mut config = json!({
            "signIn": "local",
            "webSocketUrl": format!("ws://127.0.0.1:{ws_port}"),
            "paymentProvider": "simulated",
            "demoVendorId": demo_vendor_id,
        });
        // Sign-up and sign-in against the local pool: the emulator answers Cognito's API
        // (with CORS) where AWS's regional endpoint does when deployed.
        if let Some(pool) = pool {
            config["cognito"] = json!({
                "endpoint": format!("{}/", pool.api_endpoint().trim_end_matches('/')),
                "clientId": pool.client_id,
            });
        }
        config
    }

    /// Answers a request outside `/v1`, with the distribution's security headers.
    pub async fn answer(&self, request: Request<Bytes>) -> Response<Full<Bytes>> {
        let mut response = self.route(request).await;
        for (name, value) in &self.security_headers {
            response.headers_mut().insert(name.clone(), value.clone());
        }
        response
    }

    async fn route(&self, request: Request<Bytes>) -> Response<Full<Bytes>> {
        match (request.method(), request.uri().path()) {
            (&Method::POST, "/local/token") => self.token(request.body()),
            (&Method::GET, "/local/mail") => self.sent_mail().await,
            (&Method::GET, "/local/functions") => match &self.functions {
                Some(functions) => respond(
                    StatusCode::OK,
                    "application/json",
                    json!(functions.report()).to_string(),
                ),
                None => message(StatusCode::NOT_FOUND, "no functions here"),
            },
            (&Method::POST, path) if path.starts_with("/local/s3/") => {
                let bucket = path.trim_start_matches("/local/s3/").trim_end_matches('/');
                match &self.photo_buckets {
                    Some(buckets) if buckets.uploads == bucket => {
                        let target = format!("/{bucket}");
                        self.forward(request, &target).await
                    }
                    _ => message(StatusCode::NOT_FOUND, "no such bucket"),
                }
            }
            // A proof of delivery, read through the URL get-order signed (S3's presigned GET).
            (&Method::GET, path) if path.starts_with("/local/s3/") => {
                let rest = path.trim_start_matches("/local/s3/");
                let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
                match &self.photo_buckets {
                    Some(buckets) if buckets.uploads == bucket && key.starts_with("delivered/") => {
                        let query = request.uri().query().unwrap_or("");
                        if self.genuine_read(key, query).await {
                            self.object(bucket, key).await
                        } else {
                            // As S3 answers an expired, unsigned or forged read.
                            message(
                                StatusCode::FORBIDDEN,
                                "AccessDenied: Request has expired, is not signed or its signature does not match",
                            )
                        }
                    }
                    _ => message(StatusCode::NOT_FOUND, "no such key"),
                }
            }
            (&Method::GET | &Method::HEAD, path)
                if path.starts_with("/photos/") && self.photo_buckets.is_some() =>
            {
                self.photo(path).await
            }
            (&Method::POST, path) if path.starts_with("/local/payouts/") => {
                self.pay_out(path, request.body()).await
            }
            (&Method::GET, path) if path.starts_with("/local/connect/") => {
                connect_page(path, request.uri().query().unwrap_or(""))
            }
            (&Method::GET, "/config.json") => {
                respond(StatusCode::OK, "application/json", self.config.to_string())
            }
            (&Method::GET, "/openapi.yaml") => {
                match tokio::fs::read_to_string(repository_openapi_document()).await {
                    Ok(text) => respond(StatusCode::OK, "application/yaml", text),
                    Err(error) => message(StatusCode::NOT_FOUND, &error.to_string()),
                }
            }
            (&Method::GET | &Method::HEAD, _) => {
                let (parts, _) = request.into_parts();
                let request = Request::from_parts(parts, Full::new(Bytes::new()));
                let Ok(response) = self.files.clone().oneshot(request).await;
                let (mut parts, body) = response.into_parts();
                let bytes = match body.collect().await {
                    Ok(collected) => collected.to_bytes(),
                    Err(error) => {
                        tracing::warn!(%error, "console file unreadable");
                        return message(StatusCode::INTERNAL_SERVER_ERROR, "file unreadable");
                    }
                };
                // Edits to web/ show on the next load.
                parts
                    .headers
                    .insert(hyper::header::CACHE_CONTROL, "no-cache".parse().unwrap());
                Response::from_parts(parts, Full::new(bytes))
            }
            _ => message(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"),
        }
    }

    fn token(&self, body: &[u8]) -> Response<Full<Bytes>> {
        let request: TokenRequest = match json_body(body, "{role, sub, vendorId?, email?}") {
            Ok(request) => request,
            Err(refused) => return *refused,
        };
        let sub = request.sub.trim();
        if !ROLES.contains(&request.role.as_str()) {
            return message(
                StatusCode::BAD_REQUEST,
                "role must be customer, vendor or admin",
            );
        }
        if sub.is_empty() || sub.len() > 128 {
            return message(StatusCode::BAD_REQUEST, "sub must be 1 to 128 characters");
        }
        let vendor_id = match (request.role.as_str(), request.vendor_id.as_deref()) {
            ("vendor", None | Some("")) => {
                return message(StatusCode::BAD_REQUEST, "a vendor token needs vendorId")
            }
            ("vendor", Some(id)) => Some(id),
            _ => None,
        };
        let email = request
            .email
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty());
        if email.is_some_and(|e| bouquet_app::domain::text::email(e).is_err()) {
            return message(StatusCode::BAD_REQUEST, "email must be an email address");
        }
        match crate::jwt::mint_verified(
            &self.jwt_secret,
            &request.role,
            sub,
            vendor_id,
            email,
            TOKEN_SECONDS,
        ) {
            Ok(token) => respond(
                StatusCode::OK,
                "application/json",
                json!({ "token": token, "expiresIn": TOKEN_SECONDS }).to_string(),
            ),
            Err(error) => message(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
        }
    }
}

fn respond(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, content_type.parse().unwrap());
    response
}

/// The simulated provider's `account.updated` of `account` (`vendor_id`'s), taking charges and
/// paying out or not, signed with the local webhook secret: the `Stripe-Signature` and the body.
pub fn simulated_account_report(
    account: &str,
    vendor_id: &str,
    enabled: bool,
) -> (String, Vec<u8>) {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let event = json!({
        "id": format!("evt_local_{}", ulid::Ulid::new()),
        "object": "event",
        "type": "account.updated",
        "created": now,
        "livemode": false,
        "account": account,
        "data": {"object": {"id": account, "object": "account", "charges_enabled": enabled,
            "payouts_enabled": enabled, "metadata": {"vendorId": vendor_id}}},
    })
    .to_string();
    let signature = bouquet_app::payments::stripe_webhook::sign(
        event.as_bytes(),
        crate::lambda::LOCAL_CONNECT_WEBHOOK_SECRET,
        now,
    );
    (signature, event.into_bytes())
}

/// The simulated provider's onboarding page for `/local/connect/{account}`: what Stripe's
/// hosted onboarding is deployed, one form that finishes (or abandons) it.
fn connect_page(path: &str, query: &str) -> Response<Full<Bytes>> {
    let account = path.trim_start_matches("/local/connect/");
    let fields: std::collections::HashMap<String, String> =
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
    let return_url = fields.get("return_url").cloned().unwrap_or_default();
    if !account.starts_with("acct_sim_")
        || bouquet_app::domain::vendor::return_url(&return_url, &LOCAL_CONSOLE).is_err()
    {
        return message(StatusCode::NOT_FOUND, "no such onboarding link");
    }
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let (account, return_url) = (escape(account), escape(&return_url));
    let page = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Payouts onboarding (simulated)</title></head>
<body>
<h1>Payouts onboarding</h1>
<p>The simulated payment provider stands in for Stripe's hosted onboarding of account
<code id="account">{account}</code>. Deployed with Stripe, the shop gives its business and bank
details here.</p>
<form method="post" action="/local/connect/{account}">
<input type="hidden" name="return_url" value="{return_url}">
<button type="submit" name="enabled" value="true" id="finish-onboarding">Finish onboarding</button>
<button type="submit" name="enabled" value="false" id="abandon-onboarding">Leave it unfinished</button>
</form>
</body></html>"#
    );
    respond(StatusCode::OK, "text/html; charset=utf-8", page)
}

/// The JSON `body` read as a `T`, or the 400 that says what was `expected` and why not.
fn json_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: &str,
) -> Result<T, Box<Response<Full<Bytes>>>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(message(
            StatusCode::BAD_REQUEST,
            &format!("expected {expected}: {e}"),
        ))
    })
}

fn message(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    respond(
        status,
        "application/json",
        json!({ "message": text }).to_string(),
    )
}

/// A presigned read's query: when it was signed, for how long, and its signature.
#[derive(Debug, PartialEq, Eq)]
struct Presigned {
    signed_at: time::OffsetDateTime,
    expires: i64,
    signature: String,
}

impl Presigned {
    fn until(&self) -> time::OffsetDateTime {
        self.signed_at + time::Duration::seconds(self.expires)
    }
}

/// The presigned read `query` is, if it names its time, expiry and signature.
fn presigned(query: &str) -> Option<Presigned> {
    let value = |name: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
    };
    let signature = value("X-Amz-Signature").filter(|s| !s.is_empty())?;
    let signed_at = time::PrimitiveDateTime::parse(
        value("X-Amz-Date")?,
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
    .ok()?
    .assume_utc();
    Some(Presigned {
        signed_at,
        expires: value("X-Amz-Expires")?.parse().ok()?,
        signature: signature.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_presigned_read_lasts_its_expiry_and_an_unsigned_one_none() {
        let read = presigned(
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261202T161651Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=abc",
        )
        .expect("signed");
        assert_eq!(read.signature, "abc");
        assert_eq!(
            read.until(),
            time::macros::datetime!(2026-12-02 16:31:51 UTC),
            "15 minutes after it was signed"
        );
        assert_eq!(
            presigned("X-Amz-Date=20261202T161651Z&X-Amz-Expires=900"),
            None
        );
        assert_eq!(presigned(""), None);
    }

    use super::*;

    /// Issue 51: a proof of delivery is read only through a URL the functions signed, for that
    /// key, unexpired; a forged or borrowed signature is refused as S3 refuses it.
    #[tokio::test]
    async fn only_an_unexpired_read_the_functions_signed_for_its_key_is_genuine() {
        let signer = |secret: &str| {
            bouquet_photos::PostPolicySigner::with_credentials(
                aws_sdk_s3::config::Credentials::new("AKIDLOCAL", secret, None, None, "test"),
                "eu-west-1",
                "uploads",
                "http://127.0.0.1:3000/local/s3/uploads",
            )
        };
        let checked = console().with_read_signer(signer("functions"));
        let key = "delivered/01JF0000000000000000000000/01JF0000000000000000000001/640.jpg";
        let at = |seconds_ago: i64| {
            bouquet_app::domain::Timestamp::from_millis(
                (time::OffsetDateTime::now_utc().unix_timestamp() - seconds_ago) * 1000,
            )
        };
        let read = |secret: &'static str, seconds_ago: i64| async move {
            let url = signer(secret)
                .presign_get(key, at(seconds_ago), std::time::Duration::from_secs(900))
                .await
                .expect("signed");
            url.split_once('?').expect("a query").1.to_owned()
        };
        let genuine = read("functions", 0).await;
        assert!(checked.genuine_read(key, &genuine).await);
        let other_key = key.replace("640", "1280");
        assert!(
            !checked.genuine_read(&other_key, &genuine).await,
            "another key"
        );
        let signature = presigned(&genuine).expect("signed").signature;
        let forged = genuine.replace(&signature, "00");
        assert!(
            !checked.genuine_read(key, &forged).await,
            "X-Amz-Signature=00"
        );
        assert!(!checked.genuine_read(key, &read("stranger", 0).await).await);
        assert!(
            !checked
                .genuine_read(key, &read("functions", 901).await)
                .await,
            "expired"
        );
        assert!(
            !console().genuine_read(key, &genuine).await,
            "no signer: nothing read"
        );
    }

    fn console() -> Console {
        Console::new(
            &repository_web_dir(),
            Console::local_config(3001, Some("v1"), None),
            "secret".into(),
        )
    }

    async fn call(method: Method, path: &str, body: &str) -> (StatusCode, String, Vec<u8>) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Bytes::from(body.to_owned()))
            .unwrap();
        let response = console().answer(request).await;
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, content_type, body.to_vec())
    }

    #[tokio::test]
    async fn serves_the_console_and_its_config() {
        let (status, content_type, body) = call(Method::GET, "/", "").await;
        assert_eq!(status, StatusCode::OK);
        assert!(content_type.starts_with("text/html"), "{content_type}");
        assert!(String::from_utf8(body).unwrap().contains("/js/main.js"));
        let (status, content_type, _) = call(Method::GET, "/js/main.js", "").await;
        assert_eq!(status, StatusCode::OK);
        assert!(content_type.contains("javascript"), "{content_type}");
        let (_, _, body) = call(Method::GET, "/config.json", "").await;
        let config: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(config["webSocketUrl"], "ws://127.0.0.1:3001");
        assert_eq!(config["signIn"], "local");
        // The contract and its Redoc page.
        let (status, content_type, body) = call(Method::GET, "/openapi.yaml", "").await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "application/yaml")
        );
        assert!(String::from_utf8(body)
            .unwrap()
            .contains("\nopenapi: 3.1.0\n"));
        let (status, _, body) = call(Method::GET, "/docs/", "").await;
        assert_eq!(status, StatusCode::OK);
        assert!(String::from_utf8(body)
            .unwrap()
            .contains(r#"spec-url="/openapi.yaml""#));
    }

    #[tokio::test]
    async fn nothing_outside_web_is_served() {
        for path in [
            "/../Cargo.toml",
            "/%2e%2e/Cargo.toml",
            "/js/../../template.yaml",
        ] {
            let (status, _, _) = call(Method::GET, path, "").await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        }
        let (status, _, _) = call(Method::DELETE, "/index.html", "").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn mints_tokens_the_local_authorizer_accepts_and_refuses_bad_requests() {
        let (status, _, body) = call(
            Method::POST,
            "/local/token",
            r#"{"role":"vendor","sub":"ann","vendorId":"v1"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let token = serde_json::from_slice::<Value>(&body).unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let verifier = crate::jwt::verifier("secret", None);
        let claims = crate::jwt::verify(&verifier, Some(&format!("Bearer {token}")))
            .await
            .unwrap();
        assert_eq!(claims["role"], "vendor");
        assert_eq!(claims["vendorId"], "v1");
        assert_eq!(claims["sub"], "ann");
        for bad in [
            r#"{"role":"root","sub":"ann"}"#,
            r#"{"role":"vendor","sub":"ann"}"#,
            r#"{"role":"customer","sub":"  "}"#,
            r#"{"role":"customer","sub":"ann","extra":1}"#,
            "not json",
        ] {
            let (status, _, _) = call(Method::POST, "/local/token", bad).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        }
    }

    #[test]
    fn the_console_sends_the_templates_security_headers_with_the_local_websocket_origin() {
        let template = bouquet_template::Template::repository().unwrap();
        let headers: std::collections::HashMap<String, String> =
            security_headers(&template, "ws://127.0.0.1:3001", "http://127.0.0.1:4566")
                .into_iter()
                .collect();
        let csp = &headers["content-security-policy"];
        assert!(
            csp.contains("script-src 'self' https://js.stripe.com;"),
            "{csp}"
        );
        assert!(
            csp.contains("connect-src 'self' ws://127.0.0.1:3001 "),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("${"), "nothing left unresolved: {csp}");
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(
            headers["referrer-policy"],
            "strict-origin-when-cross-origin"
        );
        assert!(headers["strict-transport-security"].starts_with("max-age=63072000"));
    }
}
