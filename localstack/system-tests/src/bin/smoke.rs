//! The smoke suite for a running stack (`./localstack/smoke.sh`): black-box checks over HTTP,
//! WebSocket and MQTT over TLS with a registered vase, the way a team proves a deployment after
//! `sam deploy` and CI proves the dev stack. It leaves nothing behind that matters: its bouquet
//! is withdrawn and its vase decommissioned. Prints each check with its time; exits 1 on the
//! first failure.
//!
//! Tokens: `--local-tokens` mints the dev stack's; otherwise each user signs in to the stack's
//! Cognito app client (`USER_PASSWORD_AUTH`) with `SMOKE_PASSWORD` (smoke.sh prepares the users).

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use system_tests::blackbox::{self, Answer, Api};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    api: String,
    #[arg(long)]
    ws: String,
    /// The broker (`host:8883`); by default the `iotEndpoint` the vase's registration returns.
    #[arg(long)]
    mqtt: Option<String>,
    /// The CA bundle the broker's certificate chains to (deployed: the system's roots).
    #[arg(long, default_value = "/etc/ssl/certs/ca-certificates.crt")]
    ca: PathBuf,
    /// Mint the dev stack's tokens instead of signing in to Cognito.
    #[arg(long)]
    local_tokens: bool,
    #[arg(long)]
    user_pool_client_id: Option<String>,
    /// The smoke users' emails (Cognito): an admin, a vendor (made a member of the smoke
    /// vendor on its first run) and a customer.
    #[arg(long, default_value = "smoke-admin@example.invalid")]
    admin: String,
    #[arg(long, default_value = "smoke-vendor@example.invalid")]
    vendor: String,
    #[arg(long, default_value = "smoke-customer@example.invalid")]
    customer: String,
}

struct Tokens<'a> {
    args: &'a Args,
    cognito: Option<aws_sdk_cognitoidentityprovider::Client>,
}

impl Tokens<'_> {
    /// An ID token for `role` (`vendor_id` is the vendor the local token names).
    async fn get(&self, role: &str, vendor_id: Option<&str>) -> Result<String, String> {
        let Some(cognito) = &self.cognito else {
            return Ok(blackbox::local_token(
                role,
                &format!("smoke-{role}"),
                vendor_id,
            ));
        };
        let user = match role {
            "admin" => &self.args.admin,
            "vendor" => &self.args.vendor,
            _ => &self.args.customer,
        };
        let password = std::env::var("SMOKE_PASSWORD").map_err(|_| "SMOKE_PASSWORD is not set")?;
        let signed_in = cognito
            .initiate_auth()
            .client_id(self.args.user_pool_client_id.clone().unwrap_or_default())
            .auth_flow(aws_sdk_cognitoidentityprovider::types::AuthFlowType::UserPasswordAuth)
            .auth_parameters("USERNAME", user)
            .auth_parameters("PASSWORD", password)
            .send()
            .await
            .map_err(|e| format!("signing in {user}: {}", bouquet_app::store::describe(&e)))?;
        signed_in
            .authentication_result()
            .and_then(|r| r.id_token())
            .map(str::to_owned)
            .ok_or_else(|| format!("{user}: no ID token (a challenge is pending?)"))
    }
}

/// The `custom:vendorId` an ID token carries, if any (its payload, not verified: the API
/// verifies it).
fn vendor_claim(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["custom:vendorId"]
        .as_str()
        .or_else(|| claims["vendorId"].as_str())
        .map(str::to_owned)
}

fn expect(answer: &Answer, status: u16, what: &str) -> Result<(), String> {
    if answer.status == status {
        Ok(())
    } else {
        Err(format!(
            "{what}: expected {status}, got {} {}",
            answer.status, answer.body
        ))
    }
}

struct Checks {
    started: Instant,
    passed: usize,
}

impl Checks {
    fn ok(&mut self, what: &str) {
        self.passed += 1;
        println!(
            "  ok   {what} ({:.1} s)",
            self.started.elapsed().as_secs_f64()
        );
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let mut checks = Checks {
        started: Instant::now(),
        passed: 0,
    };
    println!("smoke: {} / {}", args.api, args.ws);
    match run(&args, &mut checks).await {
        Ok(()) => println!("smoke passed: {} checks", checks.passed),
        Err(error) => {
            println!("  FAIL {error}");
            println!("smoke FAILED after {} checks", checks.passed);
            std::process::exit(1);
        }
    }
}

async fn run(args: &Args, checks: &mut Checks) -> Result<(), String> {
    let api = Api::new(&args.api);
    let cognito = match (&args.local_tokens, &args.user_pool_client_id) {
        (true, _) => None,
        (false, Some(_)) => {
            let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            Some(aws_sdk_cognitoidentityprovider::Client::new(&sdk))
        }
        (false, None) => return Err("give --local-tokens or --user-pool-client-id".into()),
    };
    let tokens = Tokens { args, cognito };

    // The catalogue, anonymously.
    let (catalogue, _) = api
        .send_retried("GET", "/v1/bouquets?limit=5", None, &[], None)
        .await;
    expect(&catalogue, 200, "GET /v1/bouquets")?;
    checks.ok("the catalogue answers anonymously");

    // The smoke vendor: the one the vendor user belongs to, or a new one it joins.
    let admin = tokens.get("admin", None).await?;
    let mut vendor_token = tokens.get("vendor", None).await?;
    let vendor_id = match vendor_claim(&vendor_token).filter(|_| tokens.cognito.is_some()) {
        Some(id) => id,
        None => {
            let (created, _) = api
                .post(
                    "/v1/vendors",
                    Some(&admin),
                    None,
                    Some(&json!({ "name": "Smoke test florist" })),
                )
                .await;
            expect(&created, 201, "POST /v1/vendors")?;
            let id = created.body["vendorId"]
                .as_str()
                .ok_or("no vendorId")?
                .to_owned();
            if tokens.cognito.is_some() {
                let (member, _) = api
                    .send_retried(
                        "POST",
                        &format!("/v1/vendors/{id}/members"),
                        Some(&admin),
                        &[],
                        Some(&json!({ "email": args.vendor })),
                    )
                    .await;
                expect(&member, 200, "POST /v1/vendors/{id}/members")?;
            }
            vendor_token = tokens.get("vendor", Some(&id)).await?;
            id
        }
    };
    checks.ok(&format!("the vendor {vendor_id} and its member's token"));

    // Its payouts: locally the simulated provider finishes onboarding; a deployed stage's smoke
    // shop is onboarded once by a person on the provider's page (docs/deploying.md).
    if args.local_tokens {
        api.onboard_payouts_locally(&vendor_token, &vendor_id)
            .await?;
    } else {
        let payouts = api.start_payouts(&vendor_token, &vendor_id).await?;
        if payouts["chargesEnabled"] != true {
            return Err(format!(
                "the smoke shop {vendor_id} cannot take payments yet: finish its onboarding once at {} and run again",
                payouts["url"]
            ));
        }
    }
    checks.ok("the shop's payout account takes charges");

    let (listed, _) = api
        .post(
            &format!("/v1/vendors/{vendor_id}/bouquets"),
            Some(&vendor_token),
            None,
            Some(&json!({
                "name": "Smoke test bouquet",
                "description": "Listed and withdrawn by the smoke suite",
                "price": { "amount": "1.00", "currency": "EUR" }
            })),
        )
        .await;
    expect(&listed, 201, "listing a bouquet")?;
    let bouquet = listed.body["bouquetId"]
        .as_str()
        .ok_or("no bouquetId")?
        .to_owned();
    checks.ok("a vendor lists a bouquet");

    // Live: a customer watches the bouquet and its own orders.
    let customer = tokens.get("customer", None).await?;
    let channel = format!("bouquet:{bouquet}");
    let mut socket =
        blackbox::subscribe(&args.ws, Some(&customer), &[channel.as_str(), "orders"]).await?;
    checks.ok("a customer's WebSocket subscribes to the bouquet and its orders");

    let (reserved, _) = api
        .post(
            "/v1/orders",
            Some(&customer),
            None,
            Some(&json!({ "bouquetIds": [bouquet] })),
        )
        .await;
    expect(&reserved, 201, "reserving")?;
    let order = reserved.body["orderId"]
        .as_str()
        .ok_or("no orderId")?
        .to_owned();
    let (cancelled, _) = api
        .post(
            &format!("/v1/orders/{order}/cancel"),
            Some(&customer),
            None,
            None,
        )
        .await;
    expect(&cancelled, 200, "cancelling")?;
    checks.ok("the customer reserves it and cancels");

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while !(seen.iter().any(|f: &String| f.contains("OrderReserved"))
        && seen.iter().any(|f| f.contains("OrderCancelled")))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => seen.push(text.to_string()),
            Ok(Some(Ok(_))) => {}
            _ => {
                return Err(format!(
                    "the order's frames did not arrive within 30 s: {seen:?}"
                ))
            }
        }
    }
    drop(socket);
    checks.ok("its WebSocket receives the reservation and the cancellation live");

    // A vase: registered, connected over TLS with its certificate, beating.
    let (registered, _) = api
        .post(
            &format!("/v1/vendors/{vendor_id}/vases"),
            Some(&vendor_token),
            None,
            Some(&json!({})),
        )
        .await;
    expect(&registered, 201, "registering a vase")?;
    let vase = registered.body["vase"]["vaseId"]
        .as_str()
        .ok_or("no vase.vaseId")?
        .to_owned();
    let broker = match &args.mqtt {
        Some(broker) => broker.clone(),
        None => format!(
            "{}:8883",
            registered.body["iotEndpoint"]
                .as_str()
                .ok_or("no iotEndpoint")?
        ),
    };
    heartbeat(
        &broker,
        &vase,
        registered.body["certificatePem"]
            .as_str()
            .unwrap_or_default(),
        registered.body["privateKey"].as_str().unwrap_or_default(),
        &std::fs::read(&args.ca).map_err(|e| format!("{}: {e}", args.ca.display()))?,
    )
    .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let vases = api
            .send(
                "GET",
                &format!("/v1/vendors/{vendor_id}/vases"),
                Some(&vendor_token),
                &[],
                None,
            )
            .await;
        let online = vases.body["items"].as_array().is_some_and(|items| {
            items
                .iter()
                .any(|v| v["vaseId"] == vase.as_str() && v["connection"] == "online")
        });
        if online {
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the vase is not online 30 s after its heartbeat: {}",
                vases.body
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    checks.ok("a registered vase connects over MQTT/TLS with its certificate and shows online");

    // Clean up: the vase decommissioned, the bouquet withdrawn.
    let (gone, _) = api
        .send_retried(
            "DELETE",
            &format!("/v1/vases/{vase}"),
            Some(&vendor_token),
            &[],
            None,
        )
        .await;
    expect(&gone, 204, "decommissioning the vase")?;
    // Read as its vendor: an anonymous read may be the edge's copy, a version behind.
    let current = api
        .send(
            "GET",
            &format!("/v1/bouquets/{bouquet}"),
            Some(&vendor_token),
            &[],
            None,
        )
        .await;
    let etag = current.etag.ok_or("no ETag on the bouquet")?;
    let (withdrawn, _) = api
        .send_retried(
            "DELETE",
            &format!("/v1/bouquets/{bouquet}"),
            Some(&vendor_token),
            &[("if-match", &etag)],
            None,
        )
        .await;
    expect(&withdrawn, 200, "withdrawing the bouquet")?;
    checks.ok("the vase is decommissioned and the bouquet withdrawn");
    Ok(())
}

/// Connects as the vase over TLS and publishes one heartbeat (QoS 1: the broker's PUBACK).
/// A certificate attached a moment ago may not be admitted yet: up to 10 s of tries.
async fn heartbeat(
    broker: &str,
    vase: &str,
    pem: &str,
    key: &str,
    ca: &[u8],
) -> Result<(), String> {
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let address = broker
        .to_socket_addrs()
        .map_err(|e| format!("{broker}: {e}"))?
        .next()
        .ok_or_else(|| format!("{broker}: no address"))?;
    let host = broker.rsplit_once(':').map(|(h, _)| h).unwrap_or(broker);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut options = MqttOptions::new(vase, host, address.port());
        options.set_keep_alive(Duration::from_secs(10));
        options.set_transport(devstack::mosquitto::tls(
            ca.to_vec(),
            Some((pem.as_bytes().to_vec(), key.as_bytes().to_vec())),
        ));
        let (client, mut events) = AsyncClient::new(options, 8);
        let sent_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| e.to_string())?;
        client
            .publish(
                format!("vases/{vase}/heartbeat"),
                QoS::AtLeastOnce,
                false,
                json!({ "sentAt": sent_at }).to_string(),
            )
            .await
            .map_err(|e| e.to_string())?;
        let acked = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::PubAck(_))) => return Ok(()),
                    Ok(_) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        })
        .await
        .unwrap_or_else(|_| Err("no PUBACK in 5 s".into()));
        let _ = client.disconnect().await;
        match acked {
            Ok(()) => return Ok(()),
            Err(error) if Instant::now() >= deadline => {
                return Err(format!("the vase's heartbeat over MQTT/TLS: {error}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}
