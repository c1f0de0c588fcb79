//! The chaos soak's traffic (issue 29): seeded actors against a running dev stack whose faults
//! are on. Customers race for the same few bouquets, pay (approve, decline, 3-D Secure,
//! timeouts, an unavailable gateway), cancel, and repeat requests with the same keys; vendors
//! edit and withdraw; vases beat and report over MQTT (some messages twice, some late); every
//! customer listens on its `orders` channel. What they did and saw goes in the [`Journal`] the
//! auditor ([`crate::audit`]) reads with the table once the system is quiet.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::blackbox::{self, Answer, Api};

/// Where the stack under test answers.
#[derive(Clone, Debug)]
pub struct Target {
    pub api: String,
    pub ws: String,
    /// The broker (`127.0.0.1:8883`) and the CA its certificate chains to.
    pub mqtt: std::net::SocketAddr,
    pub ca_pem: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub seed: u64,
    pub duration: Duration,
    pub customers: usize,
    pub vendors: usize,
    pub bouquets_per_vendor: usize,
    pub vases_per_vendor: usize,
    pub customers_pace: Pace,
}

/// How the customers shop.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Their pause between two orders, in milliseconds (a range drawn from; `0..=0`: none,
    /// a closed loop that measures the system's throughput, not the customers' patience).
    pub think_ms: (u64, u64),
    /// Write-heavy: they compete for this many of each shop's newest bouquets, and write no
    /// reviews (reserve, delivery details, pay, cancel).
    pub hot_bouquets: Option<usize>,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            think_ms: (50, 400),
            hot_bouquets: None,
        }
    }
}

/// What the traffic did and saw.
#[derive(Default)]
pub struct Journal {
    /// Requests by route and final status (after the client's own retries).
    pub outcomes: BTreeMap<String, u64>,
    /// Tries beyond the first (the client repeating a transient failure with the same key).
    pub retries: u64,
    /// Each answer's time at the client (ms), by route, every try.
    pub latency_ms: BTreeMap<String, Vec<f64>>,
    /// Orders each customer created.
    pub orders: HashMap<String, Vec<String>>,
    /// Orders whose payment answered 503 `payment.unavailable`, and when (last time).
    pub unanswered_payments: HashMap<String, Instant>,
    /// Frames each customer's socket read on `orders`.
    pub frames: HashMap<String, Vec<String>>,
    /// Vase messages published, duplicates and late ones included.
    pub vase_messages: u64,
    /// Each vase's newest heartbeat (`sentAt`, ms), once the broker acknowledged them all.
    pub newest_heartbeat: HashMap<String, i64>,
    pub vendors: Vec<String>,
    pub customers: Vec<String>,
    /// Photo uploads whose file S3 took (204): each must end, shown or refused.
    pub photo_uploads: Vec<String>,
}

type Shared = Arc<Mutex<Journal>>;

fn record(journal: &Shared, route: &str, answer: &Answer, tries: u32) {
    let mut journal = journal.lock().unwrap();
    *journal
        .outcomes
        .entry(format!("{route} {}", answer.status))
        .or_default() += 1;
    journal.retries += u64::from(tries - 1);
    journal
        .latency_ms
        .entry(route.to_owned())
        .or_default()
        .push(answer.took.as_secs_f64() * 1000.0);
}

/// A set-up step: `token` posts `body` to `path` (under a fresh idempotency key, repeated while
/// the answer is transient); the final answer.
async fn set_up(api: &Api, token: &str, path: &str, body: &Value) -> Answer {
    let (answer, _) = api.post(path, Some(token), None, Some(body)).await;
    answer
}

/// Sets up vendors, bouquets and vases, runs every actor until the plan's duration is over,
/// and returns the journal with each customer's socket still open (close them with
/// [`Running::close`] before the audit counts connections).
pub async fn run(target: &Target, plan: Plan) -> Result<Running, String> {
    let api = Api::new(&target.api);
    let journal: Shared = Arc::default();
    let admin = blackbox::local_token("admin", "soak-admin", None);
    let mut vendors = Vec::new();
    for v in 0..plan.vendors {
        let florist = json!({ "name": format!("Soak florist {v}") });
        let created = set_up(&api, &admin, "/v1/vendors", &florist).await;
        let vendor_id = created.body["vendorId"]
            .as_str()
            .ok_or_else(|| format!("creating a vendor: {created:?}"))?
            .to_owned();
        let token = blackbox::local_token("vendor", &format!("soak-vendor-{v}"), Some(&vendor_id));
        api.onboard_payouts_locally(&token, &vendor_id).await?;
        let shop = format!("/v1/vendors/{vendor_id}");
        // Delivery costs money and carries VAT (issue 41): half the shops price Paris (75) apart,
        // so the auditor sees zone fees and standard fees both in the totals it checks.
        let zones = if v % 2 == 0 {
            json!([{ "postcodePrefix": "75", "fee": "4.00" }])
        } else {
            json!([])
        };
        let settings = json!({
            "countries": ["FR"], "postcodePrefixes": [], "horizonDays": 14,
            "days": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
            "sameDayCutoff": "12:00", "timeZone": "UTC",
            "fees": { "standard": "6.00", "zones": zones, "sameDaySurcharge": "3.00" },
            "vat": { "number": "FR12345678901", "flowersBasisPoints": 550, "deliveryBasisPoints": 2000 },
        });
        let (saved, _) = api
            .send_retried(
                "PUT",
                &format!("{shop}/delivery-settings"),
                Some(&token),
                &[],
                Some(&settings),
            )
            .await;
        if saved.status != 200 {
            return Err(format!("saving the delivery settings: {saved:?}"));
        }
        // Issue 53: the shop's prices follow freshness (withdrawn below 40, which the ageing
        // vase reaches within the soak) and its vases raise care alerts at the defaults.
        let rules = json!({
            "markdown": { "enabled": true, "floorBasisPoints": 5000, "withdrawBelow": 40,
                          "steps": [{ "below": 80, "offBasisPoints": 1000 },
                                    { "below": 60, "offBasisPoints": 2500 }] },
            "care": { "waterLowPct": 25, "temperatureMaxC": 24, "temperatureMinC": 2,
                      "lightMaxLux": 30000, "clearAfterMinutes": 1 },
        });
        let (ruled, _) = api
            .send_retried(
                "PUT",
                &format!("{shop}/vase-rules"),
                Some(&token),
                &[],
                Some(&rules),
            )
            .await;
        if ruled.status != 200 {
            return Err(format!("saving the vase rules: {ruled:?}"));
        }
        let mut vases = Vec::new();
        for _ in 0..plan.vases_per_vendor {
            let registered = set_up(&api, &token, &format!("{shop}/vases"), &json!({})).await;
            let vase = (
                registered.body["vase"]["vaseId"].as_str(),
                registered.body["certificatePem"].as_str(),
                registered.body["privateKey"].as_str(),
            );
            match vase {
                (Some(id), Some(pem), Some(key)) => {
                    vases.push((id.to_owned(), pem.to_owned(), key.to_owned()))
                }
                _ => return Err(format!("registering a vase: {registered:?}")),
            }
        }
        let mut bouquets = Vec::new();
        for b in 0..plan.bouquets_per_vendor {
            // The first bouquets stand in the shop's vases: their scores move their prices.
            let mut listing = json!({
                "name": format!("Bouquet {v}-{b}"),
                "description": "Roses and eucalyptus",
                "price": { "amount": format!("{}.50", 10 + b), "currency": "EUR" }
            });
            if let Some((vase_id, _, _)) = vases.get(b) {
                listing["vaseId"] = json!(vase_id);
            }
            let listed = set_up(&api, &token, &format!("{shop}/bouquets"), &listing).await;
            bouquets.push(
                listed.body["bouquetId"]
                    .as_str()
                    .ok_or_else(|| format!("listing a bouquet: {listed:?}"))?
                    .to_owned(),
            );
        }
        journal.lock().unwrap().vendors.push(vendor_id.clone());
        vendors.push(Vendor {
            vendor_id,
            token,
            bouquets,
            vases,
        });
    }
    let catalogue: Stock = Arc::new(Mutex::new(
        vendors.iter().map(|v| v.bouquets.clone()).collect(),
    ));
    let deadline = Instant::now() + plan.duration;
    let mut actors = Vec::new();
    let mut sockets = Vec::new();
    for c in 0..plan.customers {
        let customer = format!("soak-customer-{c}");
        journal.lock().unwrap().customers.push(customer.clone());
        let token = blackbox::local_token("customer", &customer, None);
        // The connect meets the faults too (a killed authorizer is a 500): retried, as the
        // console reconnects.
        let mut socket = Err(String::new());
        for _ in 0..8 {
            socket = blackbox::subscribe(&target.ws, Some(&token), &["orders"]).await;
            if socket.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let socket = socket?;
        sockets.push(listen(socket, customer.clone(), journal.clone()));
        let rng = StdRng::seed_from_u64(plan.seed.wrapping_add(c as u64));
        // Each customer from an address of its own (127.0.0.10, 127.0.0.11, ...).
        let source = std::net::Ipv4Addr::new(127, 0, 0, 10 + (c % 240) as u8);
        actors.push(tokio::spawn(customer_actor(
            Api::from_address(&target.api, source.into()),
            customer,
            token,
            catalogue.clone(),
            (rng, plan.customers_pace),
            deadline,
            journal.clone(),
        )));
    }
    for (v, vendor) in vendors.into_iter().enumerate() {
        let rng = StdRng::seed_from_u64(plan.seed.wrapping_add(1_000 + v as u64));
        for (n, vase) in vendor.vases.iter().enumerate() {
            let rng =
                StdRng::seed_from_u64(plan.seed.wrapping_add(2_000 + 10 * v as u64 + n as u64));
            let scenario = Scenario::ALL[(v * vendor.vases.len() + n) % Scenario::ALL.len()];
            actors.push(tokio::spawn(vase_actor(
                target.clone(),
                vase.clone(),
                (rng, scenario, plan.duration),
                deadline,
                journal.clone(),
            )));
        }
        actors.push(tokio::spawn(vendor_actor(
            api.clone(),
            (v, vendor),
            catalogue.clone(),
            rng,
            deadline,
            journal.clone(),
        )));
    }
    // An administrator suspends the first shop for a while and reinstates it, and suspends
    // the last one for good near the end: the auditor then checks that the one's bouquets are
    // all back on sale and the other's all off.
    let shops = journal.lock().unwrap().vendors.clone();
    if shops.len() >= 2 {
        let start = Instant::now();
        let at = |fraction: f64| start + plan.duration.mul_f64(fraction);
        let plan_of = vec![
            (at(0.3), shops[0].clone(), "PUT"),
            (at(0.6), shops[0].clone(), "DELETE"),
            (at(0.8), shops[shops.len() - 1].clone(), "PUT"),
        ];
        actors.push(tokio::spawn(admin_actor(
            api.clone(),
            admin.clone(),
            plan_of,
            journal.clone(),
        )));
    }
    // An administrator hides one shop's newest review late in the run: the auditor's rating
    // invariant then counts the hiding too.
    actors.push(tokio::spawn(hide_a_review(
        api.clone(),
        admin.clone(),
        shops,
        Instant::now() + plan.duration.mul_f64(0.7),
        journal.clone(),
    )));
    for actor in actors {
        actor.await.map_err(|e| format!("an actor failed: {e}"))??;
    }
    Ok(Running { journal, sockets })
}

/// Suspends (`PUT`) or reinstates (`DELETE`) each shop at its time, sending the request again
/// (it is idempotent) until it is answered 200: the faults may kill it part-way.
async fn admin_actor(
    api: Api,
    token: String,
    steps: Vec<(Instant, String, &'static str)>,
    journal: Shared,
) -> Result<(), String> {
    for (when, vendor, method) in steps {
        tokio::time::sleep_until(when.into()).await;
        let route = if method == "PUT" {
            "suspend"
        } else {
            "reinstate"
        };
        for attempt in 0.. {
            let (answer, tries) = api
                .send_retried(
                    method,
                    &format!("/v1/vendors/{vendor}/suspension"),
                    Some(&token),
                    &[],
                    None,
                )
                .await;
            record(&journal, route, &answer, tries);
            if answer.status == 200 {
                break;
            }
            if attempt == 20 {
                return Err(format!("{route} {vendor} never succeeded: {answer:?}"));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// At `when`, hides the newest visible review of the first of `shops` that has one, sending
/// the request again (hiding twice changes nothing) until it is answered 200.
async fn hide_a_review(
    api: Api,
    token: String,
    shops: Vec<String>,
    when: Instant,
    journal: Shared,
) -> Result<(), String> {
    tokio::time::sleep_until(when.into()).await;
    for vendor in shops {
        // Signed in: the page names each review's order only to the shop and administrators.
        let page = api
            .send(
                "GET",
                &format!("/v1/vendors/{vendor}/reviews?limit=1"),
                Some(&token),
                &[],
                None,
            )
            .await;
        let Some(order) = page.body["items"][0]["orderId"].as_str() else {
            continue;
        };
        for attempt in 0.. {
            let (answer, tries) = api
                .send_retried(
                    "PUT",
                    &format!("/v1/orders/{order}/review/hidden"),
                    Some(&token),
                    &[],
                    Some(&json!({ "reason": "Names a member of staff" })),
                )
                .await;
            record(&journal, "hide review", &answer, tries);
            if answer.status == 200 {
                return Ok(());
            }
            if attempt == 20 {
                return Err(format!(
                    "hiding the review of {order} never succeeded: {answer:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// Each vendor's bouquets, newest last: vendors restock, customers race for the newest.
type Stock = Arc<Mutex<Vec<Vec<String>>>>;

/// How many of a vendor's newest bouquets customers choose from.
const FRESH: usize = 4;

/// How many listings a vendor keeps: past it, the oldest still on sale is withdrawn, as a
/// florist clears old stock. Without it a 30-minute soak's shops grow hundreds of bouquets on
/// sale, and every move of a shop's rating rewrites them all (issue 50's long soak).
const SHELF: usize = 24;

fn newest(stock: &Stock, vendor: usize) -> Vec<String> {
    let stock = stock.lock().unwrap();
    let all = &stock[vendor];
    all[all.len().saturating_sub(FRESH)..].to_vec()
}

struct Vendor {
    vendor_id: String,
    token: String,
    bouquets: Vec<String>,
    vases: Vec<(String, String, String)>,
}

/// The traffic, done; the customers' sockets still reading.
pub struct Running {
    pub journal: Shared,
    sockets: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Closes every customer's socket (the reader tasks end: the connection closes).
    pub async fn close(self) -> Shared {
        for socket in self.sockets {
            socket.abort();
            let _ = socket.await;
        }
        self.journal
    }
}

fn listen(
    mut socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    customer: String,
    journal: Shared,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // A ping a minute, as the console sends one: API Gateway closes a connection idle
        // for 10 minutes.
        let mut ping = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                message = socket.next() => match message {
                    Some(Ok(Message::Text(text))) => journal
                        .lock()
                        .unwrap()
                        .frames
                        .entry(customer.clone())
                        .or_default()
                        .push(text.to_string()),
                    Some(Ok(_)) => {}
                    _ => break,
                },
                _ = ping.tick() => {
                    let ping = Message::text(json!({"action": "ping"}).to_string());
                    if futures::SinkExt::send(&mut socket, ping).await.is_err() {
                        break;
                    }
                }
            }
        }
    })
}

/// `token`'s customer reserves the bouquets `wanted`, under the idempotency key `key`.
async fn reserve(api: &Api, token: &str, key: &str, wanted: &[String]) -> (Answer, u32) {
    let body = json!({ "bouquetIds": wanted });
    api.post("/v1/orders", Some(token), Some(key), Some(&body))
        .await
}

async fn customer_actor(
    api: Api,
    customer: String,
    token: String,
    catalogue: Stock,
    (mut rng, pace): (StdRng, Pace),
    deadline: Instant,
    journal: Shared,
) -> Result<(), String> {
    while Instant::now() < deadline {
        // Now and then it reviews what was delivered.
        if pace.hot_bouquets.is_none() && rng.random_bool(0.15) {
            review_a_delivery(&api, &token, &mut rng, &journal).await;
        }
        let vendors = catalogue.lock().unwrap().len();
        let mut vendor = newest(&catalogue, rng.random_range(0..vendors));
        if let Some(hot) = pace.hot_bouquets {
            vendor.drain(..vendor.len().saturating_sub(hot));
        }
        let vendor = &vendor;
        let first = rng.random_range(0..vendor.len());
        let mut wanted = vec![vendor[first].clone()];
        if rng.random_bool(0.3) {
            let second = vendor[rng.random_range(0..vendor.len())].clone();
            if second != wanted[0] {
                wanted.push(second);
            }
        }
        let key = blackbox::key();
        let (reserved, tries) = reserve(&api, &token, &key, &wanted).await;
        record(&journal, "reserve", &reserved, tries);
        // Now and then the same request again, as a client that lost the answer.
        if reserved.status == 201 && rng.random_bool(0.1) {
            let (again, tries) = reserve(&api, &token, &key, &wanted).await;
            record(&journal, "reserve (repeated key)", &again, tries);
            if again.body["orderId"] != reserved.body["orderId"] {
                return Err(format!(
                    "the same key reserved twice: {} and {}",
                    reserved.body, again.body
                ));
            }
        }
        let Some(order) = reserved.body["orderId"].as_str().map(str::to_owned) else {
            pause(&mut rng, pace).await;
            continue;
        };
        journal
            .lock()
            .unwrap()
            .orders
            .entry(customer.clone())
            .or_default()
            .push(order.clone());
        match rng.random_range(0..100) {
            0..75 => {
                give_delivery(&api, &token, &customer, &order, &mut rng, &journal).await;
                pay(&api, &token, &order, &mut rng, &journal).await
            }
            75..92 => {
                let (cancelled, tries) = api
                    .post(
                        &format!("/v1/orders/{order}/cancel"),
                        Some(&token),
                        None,
                        None,
                    )
                    .await;
                record(&journal, "cancel", &cancelled, tries);
            }
            // Walks away: the hold lapses, or stays while the soak runs.
            _ => {}
        }
        pause(&mut rng, pace).await;
    }
    // Half the customers ask for their data to be erased as they leave (nothing of theirs is
    // written after it): the auditor checks no copy of it survives (issue 51). Repeating an
    // erasure changes nothing, so it is sent again until it is answered.
    if rng.random_bool(0.5) {
        let (erased, tries) = api
            .send_retried("POST", "/v1/me/erasure", Some(&token), &[], None)
            .await;
        record(&journal, "erase", &erased, tries);
    }
    Ok(())
}

/// `token`'s customer pays `order` with `card`, under `key` (or a fresh idempotency key).
async fn pay_with(
    api: &Api,
    token: &str,
    order: &str,
    card: &str,
    key: Option<&str>,
) -> (Answer, u32) {
    let body = json!({ "paymentToken": card });
    api.post(
        &format!("/v1/orders/{order}/payment"),
        Some(token),
        key,
        Some(&body),
    )
    .await
}

/// The checkout's delivery details, each customer's own (the auditor looks for them where
/// they must not be); now and then a customer first tries to pay without them and is refused.
/// `customer` (signed in with `token`) gives `order` its delivery details, mail to the address
/// their sign-in verified.
async fn give_delivery(
    api: &Api,
    token: &str,
    customer: &str,
    order: &str,
    rng: &mut StdRng,
    journal: &Shared,
) {
    if rng.random_bool(0.05) {
        let (refused, tries) = pay_with(api, token, order, "tok_visa", None).await;
        record(journal, "pay without delivery details", &refused, tries);
    }
    let tomorrow = bouquet_app::domain::delivery::date_after(
        bouquet_app::domain::Clock::now(&bouquet_app::domain::SystemClock),
        1,
        "UTC",
    )
    .unwrap_or_default();
    let mut details = bouquet_testkit::delivery_details(&tomorrow);
    let who = rng.random_range(100_000..999_999);
    details["recipient"]["name"] = json!(format!("Recipient {who}"));
    details["recipient"]["phone"] = json!(format!("+3361{who}"));
    details["address"]["street"] = json!(format!("{who} rue du Soak"));
    details["contactEmail"] = json!(bouquet_testkit::verified_email(customer));
    let key = blackbox::key();
    let (given, tries) = api
        .send_retried(
            "PUT",
            &format!("/v1/orders/{order}/delivery"),
            Some(token),
            &[("if-match", "\"1\""), ("idempotency-key", &key)],
            Some(&details),
        )
        .await;
    record(journal, "delivery details", &given, tries);
}

/// `order`, its delivery details given, paid with a card drawn from `rng`.
async fn pay(api: &Api, token: &str, order: &str, rng: &mut StdRng, journal: &Shared) {
    let card = match rng.random_range(0..100) {
        0..55 => "tok_visa",
        55..67 => "tok_decline",
        67..77 => "tok_3ds",
        77..89 => "tok_timeout",
        _ => "tok_unavailable",
    };
    let key = blackbox::key();
    for attempt in 0..2 {
        let (paid, tries) = pay_with(api, token, order, card, Some(&key)).await;
        record(journal, &format!("pay {card}"), &paid, tries);
        // The bank's answer to 3-D Secure, as the console's prompt gives it (locally the dev
        // stack's simulated bank, then the PSP's webhook); now and then never.
        if paid.status == 202 && rng.random_bool(0.8) {
            let attempt = paid.body["paymentAttempt"]
                .as_u64()
                .or_else(|| paid.body["order"]["paymentAttempt"].as_u64())
                .unwrap_or(0);
            let approved = rng.random_bool(0.7);
            let (answer, tries) = api
                .send_retried(
                    "POST",
                    "/local/authenticate",
                    None,
                    &[],
                    Some(&json!({
                        "orderId": order,
                        "attemptKey": format!("{order}-{attempt}"),
                        "approved": approved,
                    })),
                )
                .await;
            record(
                journal,
                if approved {
                    "3-D Secure approved"
                } else {
                    "3-D Secure failed"
                },
                &answer,
                tries,
            );
        }
        if paid.code() == Some("payment.unavailable") {
            journal
                .lock()
                .unwrap()
                .unanswered_payments
                .insert(order.to_owned(), Instant::now());
            // Once more with the same key, as the API asks; then leave it to the system.
            if attempt == 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        break;
    }
}

async fn vendor_actor(
    api: Api,
    (index, vendor): (usize, Vendor),
    catalogue: Stock,
    mut rng: StdRng,
    deadline: Instant,
    journal: Shared,
) -> Result<(), String> {
    let mut withdrawn = 0;
    let mut listed = 0;
    while Instant::now() < deadline {
        // Restock: a new bouquet now and then.
        if rng.random_bool(0.35) {
            listed += 1;
            let (answer, tries) = api
                .post(&format!("/v1/vendors/{}/bouquets", vendor.vendor_id), Some(&vendor.token), None, Some(&json!({
                        "name": format!("Restock {index}-{listed}"),
                        "description": "Tulips",
                        "price": { "amount": format!("{}.00", rng.random_range(9..40)), "currency": "EUR" }
                    })))
                .await;
            record(&journal, "list", &answer, tries);
            if let Some(id) = answer.body["bouquetId"].as_str() {
                catalogue.lock().unwrap()[index].push(id.to_owned());
            }
            clear_old_stock(&api, &vendor.token, &catalogue, index, &journal).await;
        }
        // Now and then a new photo of one of its bouquets, sent as the console sends it.
        if rng.random_bool(0.1) {
            let fresh = newest(&catalogue, index);
            let bouquet = &fresh[rng.random_range(0..fresh.len())];
            upload_photo(&api, &vendor.token, bouquet, &journal).await;
        }
        // The florist's steps on its paid orders; now and then a rejection.
        if rng.random_bool(0.4) {
            florist_step(&api, &vendor.token, &mut rng, &journal).await;
        }
        // Now and then it answers a review of its shop (once each).
        if rng.random_bool(0.2) {
            answer_a_review(&api, &vendor, &journal).await;
        }
        let fresh = newest(&catalogue, index);
        let bouquet = &fresh[rng.random_range(0..fresh.len())];
        // Read as its vendor: an anonymous read may be the edge's copy, a version behind.
        let current = api
            .send(
                "GET",
                &format!("/v1/bouquets/{bouquet}"),
                Some(&vendor.token),
                &[],
                None,
            )
            .await;
        let Some(etag) = current.etag.clone() else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        // A few bouquets are withdrawn during the soak; the rest are edited.
        let (route, method, body) = if withdrawn < 3 && rng.random_bool(0.05) {
            withdrawn += 1;
            ("withdraw", "DELETE", None)
        } else {
            let cents = rng.random_range(0..100);
            let edit = json!({ "description": format!("Edited at {cents}") });
            ("edit", "PATCH", Some(edit))
        };
        let (answer, tries) = api
            .send_retried(
                method,
                &format!("/v1/bouquets/{bouquet}"),
                Some(&vendor.token),
                &[("if-match", &etag)],
                body.as_ref(),
            )
            .await;
        record(&journal, route, &answer, tries);
        tokio::time::sleep(Duration::from_millis(rng.random_range(200..800))).await;
    }
    Ok(())
}

/// Withdraws the vendor's oldest listings past [`SHELF`] that are still available (a sold or
/// held one is left to its order).
async fn clear_old_stock(
    api: &Api,
    token: &str,
    catalogue: &Stock,
    index: usize,
    journal: &Shared,
) {
    loop {
        let oldest = {
            let mut stock = catalogue.lock().unwrap();
            if stock[index].len() <= SHELF {
                return;
            }
            stock[index].remove(0)
        };
        let current = api
            .send(
                "GET",
                &format!("/v1/bouquets/{oldest}"),
                Some(token),
                &[],
                None,
            )
            .await;
        let (Some(etag), "available") = (
            current.etag.as_deref(),
            current.body["status"].as_str().unwrap_or_default(),
        ) else {
            continue;
        };
        let (answer, tries) = api
            .send_retried(
                "DELETE",
                &format!("/v1/bouquets/{oldest}"),
                Some(token),
                &[("if-match", etag)],
                None,
            )
            .await;
        record(journal, "withdraw old stock", &answer, tries);
    }
}

/// The demo's drawing of peonies (7 KB PNG): the photo the soak's florists upload.
const PHOTO: &[u8] = include_bytes!("../../devstack/demo-photos/peonies.png");

/// Asks for an upload of `bouquet`'s photo and posts the file to the policy's URL; the photo
/// function does the rest (the auditor checks that each bouquet shows its latest).
async fn upload_photo(api: &Api, token: &str, bouquet: &str, journal: &Shared) {
    let uploads = format!("/v1/bouquets/{bouquet}/photo-uploads");
    send_photo(api, token, &uploads, "photo", journal).await;
}

/// Asks for an upload at `uploads` (a bouquet's photo, an order's proof of delivery) and
/// posts the file to the policy's URL, as the console does.
async fn send_photo(api: &Api, token: &str, uploads: &str, route: &str, journal: &Shared) {
    let (ticket, tries) = api
        .post(
            uploads,
            Some(token),
            None,
            Some(&json!({ "contentType": "image/png" })),
        )
        .await;
    record(journal, route, &ticket, tries);
    let Some(url) = ticket.body["url"].as_str() else {
        return;
    };
    let status = api.post_form(url, &ticket.body["fields"], PHOTO).await;
    let mut journal = journal.lock().unwrap();
    *journal
        .outcomes
        .entry(format!("photo file {status}"))
        .or_default() += 1;
    if let (204, Some(upload)) = (status, ticket.body["uploadId"].as_str()) {
        journal.photo_uploads.push(upload.to_owned());
    }
}

/// Moves one of the vendor's orders a step on: accept a paid one, dispatch an accepted one,
/// deliver one out for delivery, or (one in ten) reject a paid or accepted one.
async fn florist_step(api: &Api, token: &str, rng: &mut StdRng, journal: &Shared) {
    let listed = api
        .send("GET", "/v1/orders?limit=50", Some(token), &[], None)
        .await;
    let movable: Vec<(String, String)> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            Some((
                o["orderId"].as_str()?.to_owned(),
                o["status"].as_str()?.to_owned(),
            ))
        })
        .filter(|(_, status)| matches!(status.as_str(), "paid" | "accepted" | "out_for_delivery"))
        .collect();
    if movable.is_empty() {
        return;
    }
    let (order, status) = &movable[rng.random_range(0..movable.len())];
    let rejecting = status != "out_for_delivery" && rng.random_bool(0.1);
    let (route, body) = match status.as_str() {
        // Half the rejections take the bouquets off sale.
        _ if rejecting => (
            "reject",
            Some(json!({
                "reason": "Out of peonies this week",
                "withdrawBouquets": rng.random_bool(0.5),
            })),
        ),
        "paid" => ("accept", None),
        "accepted" => ("dispatch", None),
        _ => ("fulfil", None),
    };
    let (answer, tries) = api
        .post(
            &format!("/v1/orders/{order}/{route}"),
            Some(token),
            None,
            body.as_ref(),
        )
        .await;
    record(journal, route, &answer, tries);
    // Half the deliveries come with a photo at the door (proof of delivery).
    if route == "fulfil" && answer.status == 200 && rng.random_bool(0.5) {
        let uploads = format!("/v1/orders/{order}/delivery-photo-uploads");
        send_photo(api, token, &uploads, "delivery photo", journal).await;
    }
}

/// The shop answers the newest of its reviews that has no answer yet.
async fn answer_a_review(api: &Api, vendor: &Vendor, journal: &Shared) {
    let page = api
        .send(
            "GET",
            &format!("/v1/vendors/{}/reviews?limit=20", vendor.vendor_id),
            // Signed in: the page names each review's order only to the shop's members.
            Some(&vendor.token),
            &[],
            None,
        )
        .await;
    let Some(order) = page.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|review| review.get("answer").is_none())
        .and_then(|review| review["orderId"].as_str())
    else {
        return;
    };
    let (answer, tries) = api
        .send_retried(
            "PUT",
            &format!("/v1/orders/{order}/review/answer"),
            Some(&vendor.token),
            &[],
            Some(&json!({ "text": "Thank you for your kind words" })),
        )
        .await;
    record(journal, "answer review", &answer, tries);
}

/// The customer reviews one of its delivered orders (a second review is refused with 409
/// `review.exists`: recorded as such), and now and then changes its stars.
async fn review_a_delivery(api: &Api, token: &str, rng: &mut StdRng, journal: &Shared) {
    let listed = api
        .send("GET", "/v1/orders?limit=50", Some(token), &[], None)
        .await;
    let delivered: Vec<String> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["status"] == "fulfilled")
        .filter_map(|o| o["orderId"].as_str().map(str::to_owned))
        .collect();
    if delivered.is_empty() {
        return;
    }
    let order = &delivered[rng.random_range(0..delivered.len())];
    let stars = rng.random_range(1..=5);
    let (written, tries) = api
        .post(
            &format!("/v1/orders/{order}/review"),
            Some(token),
            None,
            Some(&json!({ "stars": stars, "text": "Fresh, and on the day" })),
        )
        .await;
    record(journal, "review", &written, tries);
    if written.code() == Some("review.exists") && rng.random_bool(0.3) {
        let (edited, tries) = api
            .send_retried(
                "PATCH",
                &format!("/v1/orders/{order}/review"),
                Some(token),
                &[],
                Some(&json!({ "stars": rng.random_range(1..=5) })),
            )
            .await;
        record(journal, "edit review", &edited, tries);
    }
}

/// What a soak vase's readings do over the run (issue 53): each scenario crosses the care
/// thresholds and the markdown steps while the faults run, with readings that hover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Water from 80 % to 5 %: `water_low`, the first step.
    Dry,
    /// Up to 32 °C as the air dries: `too_hot`, the first step.
    Hot,
    /// Dry, hot and in the sun: three alerts, both steps, past its best.
    Ageing,
    /// Random readings in the healthy range, as before.
    Steady,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Dry,
        Scenario::Hot,
        Scenario::Ageing,
        Scenario::Steady,
    ];

    /// How far into its decline a vase is, `elapsed` into a run of `duration`: each period (the
    /// run, at most five minutes) falls over its first 70 % and then recovers (refilled, cooled,
    /// in the shade), so alerts open, clear and, in a run of several periods, close.
    fn progress(elapsed: Duration, duration: Duration) -> f64 {
        let period = duration
            .min(Duration::from_secs(300))
            .as_secs_f64()
            .max(1.0);
        let phase = (elapsed.as_secs_f64() % period) / period;
        if phase < 0.7 {
            phase / 0.7
        } else {
            0.0
        }
    }

    /// Water, temperature, humidity and light at `progress` (0..=1) of the decline, with jitter.
    fn reading(self, progress: f64, rng: &mut StdRng) -> (f64, f64, f64, f64) {
        let p = progress.clamp(0.0, 1.0);
        let jitter = rng.random_range(-2.0..2.0);
        let (water, temperature, humidity, light) = match self {
            Scenario::Dry => (80.0 - 75.0 * p, 18.0, 60.0, 800.0),
            Scenario::Hot => (80.0, 18.0 + 14.0 * p, 60.0 - 33.0 * p, 800.0),
            Scenario::Ageing => (
                80.0 - 80.0 * p,
                18.0 + 14.0 * p,
                60.0 - 40.0 * p,
                800.0 + 39_200.0 * p,
            ),
            Scenario::Steady => (
                f64::from(rng.random_range(30..100)),
                f64::from(rng.random_range(12..22)),
                f64::from(rng.random_range(40..80)),
                f64::from(rng.random_range(100..900)),
            ),
        };
        (
            (water + jitter).clamp(0.0, 100.0),
            temperature + jitter,
            humidity.clamp(0.0, 100.0),
            light.max(0.0),
        )
    }
}

async fn vase_actor(
    target: Target,
    (vase_id, pem, key): (String, String, String),
    (mut rng, scenario, duration): (StdRng, Scenario, Duration),
    deadline: Instant,
    journal: Shared,
) -> Result<(), String> {
    let started = Instant::now();
    use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
    let mut options = MqttOptions::new(
        vase_id.clone(),
        target.mqtt.ip().to_string(),
        target.mqtt.port(),
    );
    options.set_keep_alive(Duration::from_secs(20));
    options.set_transport(devstack::mosquitto::tls(
        target.ca_pem.clone(),
        Some((pem.into_bytes(), key.into_bytes())),
    ));
    let (client, mut events) = AsyncClient::new(options, 64);
    let acked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = acked.clone();
    let driver = tokio::spawn(async move {
        // A refused connection is retried: a certificate attached a moment ago may still be in
        // the broker's CRL until it reloads.
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::Disconnect)) => break,
                Ok(Event::Incoming(Packet::PubAck(_))) => {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
    });
    let mut published = 0u64;
    let mut newest = 0i64;
    while Instant::now() < deadline {
        // Whole milliseconds, as the vase's state keeps them.
        let now = time::OffsetDateTime::now_utc();
        let now = now
            .replace_nanosecond(now.millisecond() as u32 * 1_000_000)
            .unwrap_or(now);
        // Some late (sent a minute ago), some twice.
        let sent = if rng.random_bool(0.1) {
            now - time::Duration::seconds(60)
        } else {
            now
        };
        let sent_ms = (sent.unix_timestamp_nanos() / 1_000_000) as i64;
        let sent = sent
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| e.to_string())?;
        let (topic, body) = if rng.random_bool(0.5) {
            ("heartbeat", json!({ "sentAt": sent }))
        } else {
            let progress = Scenario::progress(started.elapsed(), duration);
            let (water, temperature, humidity, light) = scenario.reading(progress, &mut rng);
            (
                "telemetry",
                json!({
                    "sentAt": sent,
                    "waterLevelPct": water,
                    "temperatureC": temperature,
                    "humidityPct": humidity,
                    "lightLux": light,
                }),
            )
        };
        let copies = if rng.random_bool(0.1) { 2 } else { 1 };
        for _ in 0..copies {
            let queued = client
                .publish(
                    format!("vases/{vase_id}/{topic}"),
                    QoS::AtLeastOnce,
                    false,
                    body.to_string(),
                )
                .await;
            if queued.is_ok() {
                published += 1;
                if topic == "heartbeat" {
                    newest = newest.max(sent_ms);
                }
            }
            journal.lock().unwrap().vase_messages += 1;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..1200))).await;
    }
    // Every message acknowledged by the broker (QoS 1) before the vase goes.
    let flushed = Instant::now() + Duration::from_secs(20);
    while acked.load(std::sync::atomic::Ordering::Relaxed) < published && Instant::now() < flushed {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if acked.load(std::sync::atomic::Ordering::Relaxed) < published {
        return Err(format!(
            "vase {vase_id}: the broker acknowledged too few messages"
        ));
    }
    if newest > 0 {
        journal
            .lock()
            .unwrap()
            .newest_heartbeat
            .insert(vase_id.clone(), newest);
    }
    let _ = client.disconnect().await;
    driver.abort();
    Ok(())
}

async fn pause(rng: &mut StdRng, pace: Pace) {
    let (low, high) = pace.think_ms;
    if high > 0 {
        tokio::time::sleep(Duration::from_millis(rng.random_range(low..=high))).await;
    }
}

/// Requests by outcome, for the report.
pub fn outcomes(journal: &Journal) -> Value {
    json!(journal.outcomes)
}
