//! Demo data, created through the API itself (authorizer, handlers, idempotency keys), so a
//! second `up` replays the same requests and changes nothing.

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

pub async fn seed(api: &LocalApi, secret: &str) -> Result<Seeded, DevError> {
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
    let vase = post(
        api,
        &vendor_token,
        &format!("/v1/vendors/{vendor_id}/vases"),
        "seed-vase",
        json!({}),
    )
    .await?;
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
        let mut body = json!({ "name": name, "description": description, "price": { "amount": amount, "currency": "EUR" } });
        if index == 0 {
            body["vaseId"] = json!(vase_id);
        }
        let bouquet = post(
            api,
            &vendor_token,
            &format!("/v1/vendors/{vendor_id}/bouquets"),
            &format!("seed-bouquet-{index}"),
            body,
        )
        .await?;
        bouquet_ids.push(bouquet["bouquetId"].as_str().unwrap_or_default().to_owned());
    }
    Ok(Seeded {
        vendor_id,
        bouquet_ids,
        vase_id,
        vase_credentials,
    })
}
