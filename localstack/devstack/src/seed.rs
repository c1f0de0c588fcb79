//! Demo data, created through the API itself (authorizer, handlers, idempotency keys), so a
//! second `up` replays the same requests and changes nothing: a shop whose four bouquets each
//! stand in a vase, with a photo (uploaded as the console does, through a signed form to the
//! upload bucket) and a reading (on the queue the vase topic rules feed), so a fresh stack
//! shows photos and freshness scores.

use hyper::StatusCode;
use serde_json::{json, Value};

use crate::apigw::Incoming;
use crate::jwt;
use crate::server::LocalApi;

use crate::error::DevError;

pub struct Seeded {
    pub vendor_id: String,
    pub bouquet_ids: Vec<String>,
    /// A registered vase; the first bouquet stands in it.
    pub vase_id: String,
    /// Its certificate and private key (PEM), when this run registered it (a replayed
    /// registration has no key: it is returned once).
    pub vase_credentials: Option<(String, String)>,
}

/// The demo bouquets' photos, drawn by `demo-photos/make.py` (PNG, 640 × 480, about 7 KB).
const PHOTOS: [&[u8]; 4] = [
    include_bytes!("../demo-photos/peonies.png"),
    include_bytes!("../demo-photos/tulips.png"),
    include_bytes!("../demo-photos/meadow.png"),
    include_bytes!("../demo-photos/roses.png"),
];

/// Each demo vase's reading: water level (%) and temperature (°C), so the scores differ (100,
/// 94, 85, 75 just after listing; `shared/domain/src/freshness.rs`).
const READINGS: [(f64, f64); 4] = [(82.0, 19.0), (35.0, 23.0), (28.0, 25.0), (20.0, 27.0)];

/// Where the seed sends what the API does not take: the emulator's S3 (the upload form) and
/// the vase message queue (what the topic rules would put there).
pub struct SeedPorts {
    /// The emulator's endpoint, e.g. `http://127.0.0.1:4566`.
    pub emulator: String,
    pub sqs: aws_sdk_sqs::Client,
    /// `VaseMessagesQueue`'s URL.
    pub vase_queue_url: Option<String>,
}

const BOUQUETS: [(&str, &str, &str); 4] = [
    (
        "Blush Peonies",
        "Ten pink peonies with eucalyptus.",
        "34.90",
    ),
    (
        "Sunday Tulips",
        "Fifteen mixed tulips, fresh from Holland.",
        "24.50",
    ),
    ("Wild Meadow", "Seasonal field flowers, hand-tied.", "29.00"),
    ("Red Roses", "A dozen long-stem red roses.", "49.00"),
];

/// POSTs `body` through the local API as the holder of `token`; expects 201.
pub async fn post(
    api: &LocalApi,
    token: &str,
    path: &str,
    key: &str,
    body: Value,
) -> Result<Value, DevError> {
    let incoming = Incoming {
        method: "POST".into(),
        path: path.into(),
        headers: vec![
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "application/json".into()),
            ("idempotency-key".into(), key.into()),
        ],
        body: body.to_string().into_bytes(),
        source_ip: "127.0.0.1".into(),
        ..Incoming::default()
    };
    let (status, _, body) = api.handle(incoming).await;
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if status != StatusCode::CREATED {
        return Err(DevError::Unexpected(format!(
            "POST {path} answered {status}: {json}"
        )));
    }
    Ok(json)
}

/// `vendor_id`'s vendor (holding `token`) opens the shop's payout account and the simulated
/// provider reports it able to take charges, as finishing its onboarding page does: the shop's
/// bouquets can then be reserved.
pub async fn onboard_payouts(api: &LocalApi, token: &str, vendor_id: &str) -> Result<(), DevError> {
    let console = "http://127.0.0.1/#/vendor";
    let (status, _, body) = api
        .handle(Incoming {
            method: "POST".into(),
            path: format!("/v1/vendors/{vendor_id}/payouts/onboarding"),
            headers: vec![
                ("authorization".into(), format!("Bearer {token}")),
                ("content-type".into(), "application/json".into()),
            ],
            body: json!({ "returnUrl": console, "refreshUrl": console })
                .to_string()
                .into_bytes(),
            source_ip: "127.0.0.1".into(),
            ..Incoming::default()
        })
        .await;
    let onboarding: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let account = onboarding["accountId"]
        .as_str()
        .filter(|_| status == StatusCode::OK)
        .ok_or_else(|| {
            DevError::Unexpected(format!(
                "payouts onboarding answered {status}: {onboarding}"
            ))
        })?;
    let (signature, event) = crate::console::simulated_account_report(account, vendor_id, true);
    let (status, _, body) = api.deliver_webhook(signature, event, "127.0.0.1").await;
    if status != StatusCode::OK {
        return Err(DevError::Unexpected(format!(
            "the account report answered {status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    Ok(())
}

/// A browser's form upload of `file` under an S3 POST policy's `fields` (a JSON object of
/// strings): its `Content-Type` and body (`multipart/form-data`, the fields first, the file
/// last as S3 requires).
pub fn form_upload(fields: &Value, file: &[u8]) -> (String, Vec<u8>) {
    let boundary = format!("bouquet-form-{}", ulid::Ulid::new());
    let mut body = Vec::new();
    for (name, value) in fields.as_object().into_iter().flatten() {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{}\r\n",
                value.as_str().unwrap_or_default()
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// GETs `path` through the local API as the holder of `token`.
async fn get(api: &LocalApi, token: &str, path: &str) -> Result<Value, DevError> {
    let incoming = Incoming {
        method: "GET".into(),
        path: path.into(),
        headers: vec![("authorization".into(), format!("Bearer {token}"))],
        source_ip: "127.0.0.1".into(),
        ..Incoming::default()
    };
    let (status, _, body) = api.handle(incoming).await;
    if status != StatusCode::OK {
        return Err(DevError::Unexpected(format!(
            "GET {path} answered {status}"
        )));
    }
    Ok(serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Uploads `photo` as bouquet `bouquet_id`'s photo, unless it has one: the upload policy from
/// the API, the form posted to the emulator's S3 (the photo function, on the photo queue,
/// does the rest).
async fn upload_photo(
    api: &LocalApi,
    token: &str,
    ports: &SeedPorts,
    bouquet_id: &str,
    index: usize,
    photo: &[u8],
) -> Result<(), DevError> {
    let bouquet = get(api, token, &format!("/v1/bouquets/{bouquet_id}")).await?;
    if !bouquet["photo"].is_null() {
        return Ok(());
    }
    let ticket = post(
        api,
        token,
        &format!("/v1/bouquets/{bouquet_id}/photo-uploads"),
        &format!("seed-photo-{index}-{bouquet_id}"),
        json!({ "contentType": "image/png" }),
    )
    .await?;
    // The form goes to the bucket itself (the URL in the ticket is the dev stack's own, not
    // serving yet); a policy signs its fields, not its address.
    let bucket = ticket["url"]
        .as_str()
        .and_then(|url| url.rsplit('/').next())
        .unwrap_or_default();
    let (content_type, body) = form_upload(&ticket["fields"], photo);
    let request =
        hyper::Request::post(format!("{}/{bucket}", ports.emulator.trim_end_matches('/')))
            .header("content-type", content_type)
            .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
            .map_err(|e| DevError::Unexpected(e.to_string()))?;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Full<hyper::body::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let answer = client
        .request(request)
        .await
        .map_err(|e| DevError::Unexpected(format!("the demo photo upload: {e}")))?;
    if answer.status() != StatusCode::NO_CONTENT {
        return Err(DevError::Unexpected(format!(
            "the demo photo upload answered {}",
            answer.status()
        )));
    }
    Ok(())
}

/// A heartbeat and a reading of `vase_id`, as the topic rules put them on the vase queue.
async fn report(
    ports: &SeedPorts,
    vase_id: &str,
    (water, temperature): (f64, f64),
) -> Result<(), DevError> {
    let Some(queue) = &ports.vase_queue_url else {
        return Ok(());
    };
    let now = time::OffsetDateTime::now_utc();
    let sent_at = now
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| DevError::Unexpected(e.to_string()))?;
    let received_at = (now.unix_timestamp_nanos() / 1_000_000) as i64;
    let messages = [
        json!({"vaseId": vase_id, "messageType": "heartbeat", "sentAt": sent_at, "receivedAt": received_at}),
        json!({"vaseId": vase_id, "messageType": "telemetry", "sentAt": sent_at, "receivedAt": received_at,
               "waterLevelPct": water, "temperatureC": temperature, "humidityPct": 55.0, "lightLux": 900}),
    ];
    for message in messages {
        ports
            .sqs
            .send_message()
            .queue_url(queue)
            .message_body(message.to_string())
            .send()
            .await
            .map_err(crate::error::aws)?;
    }
    Ok(())
}

pub async fn seed(api: &LocalApi, secret: &str, ports: &SeedPorts) -> Result<Seeded, DevError> {
    let admin = jwt::mint(secret, "admin", "admin-demo", None, 600).map_err(DevError::from)?;
    let vendor = post(
        api,
        &admin,
        "/v1/vendors",
        "seed-vendor",
        json!({ "name": "Bloom & Vase" }),
    )
    .await?;
    let vendor_id = vendor["vendorId"]
        .as_str()
        .ok_or("no vendorId in the answer")?
        .to_owned();
    let vendor_token = jwt::mint(secret, "vendor", "vendor-demo", Some(&vendor_id), 600)
        .map_err(DevError::from)?;
    onboard_payouts(api, &vendor_token, &vendor_id).await?;
    let vase = post(
        api,
        &vendor_token,
        &format!("/v1/vendors/{vendor_id}/vases"),
        "seed-vase",
        json!({}),
    )
    .await?;
    // The other bouquets' vases (their credentials are not kept: the seed reports for them).
    let mut vases = vec![vase["vase"]["vaseId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()];
    for index in 1..BOUQUETS.len() {
        let other = post(
            api,
            &vendor_token,
            &format!("/v1/vendors/{vendor_id}/vases"),
            &format!("seed-vase-{index}"),
            json!({}),
        )
        .await?;
        vases.push(
            other["vase"]["vaseId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    let vase_id = vase["vase"]["vaseId"]
        .as_str()
        .ok_or("no vase.vaseId in the answer")?
        .to_owned();
    let vase_credentials = match (vase["certificatePem"].as_str(), vase["privateKey"].as_str()) {
        (Some(certificate), Some(key)) => Some((certificate.to_owned(), key.to_owned())),
        _ => None,
    };
    let mut bouquet_ids = Vec::new();
    for (index, (name, description, amount)) in BOUQUETS.iter().enumerate() {
        let body = json!({ "name": name, "description": description, "price": { "amount": amount, "currency": "EUR" }, "vaseId": vases[index] });
        let bouquet = post(
            api,
            &vendor_token,
            &format!("/v1/vendors/{vendor_id}/bouquets"),
            &format!("seed-bouquet-{index}"),
            body,
        )
        .await?;
        let bouquet_id = bouquet["bouquetId"].as_str().unwrap_or_default().to_owned();
        upload_photo(api, &vendor_token, ports, &bouquet_id, index, PHOTOS[index]).await?;
        report(ports, &vases[index], READINGS[index]).await?;
        bouquet_ids.push(bouquet_id);
    }
    Ok(Seeded {
        vendor_id,
        bouquet_ids,
        vase_id,
        vase_credentials,
    })
}
