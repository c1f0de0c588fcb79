//! The soak's auditor: once the traffic has stopped and the system is quiet, it reads the
//! table, the simulated gateway's ledger, the live table, the queues and what each customer's
//! socket received, and checks the invariants of docs/architecture.md over everything at once.
//!
//! An invariant is one function from the [`Evidence`] to a [`Check`] (what it looked at and
//! every violation), listed in [`INVARIANTS`]: a new state or money path adds its own.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Map, Value};

use crate::soak::Journal;
use bouquet_app::domain::events::Actor;

/// Everything the auditor reads, once.
pub struct Evidence {
    /// The marketplace table's items, as JSON.
    pub items: Vec<Value>,
    /// The live table's items.
    pub live_items: Vec<Value>,
    /// Each of the stack's queues: messages waiting (visible and in flight), and the bodies
    /// of those in failure destinations.
    pub queues: BTreeMap<String, (u64, Vec<String>)>,
    pub journal: Journal,
    /// Connections the dev stack's API Gateway will never send `$disconnect` for (their
    /// `$connect` or `$disconnect` function failed: AWS retries neither), from `GET /_faults`.
    pub undelivered_disconnects: BTreeSet<String>,
    /// Milliseconds since the epoch, when the evidence was read.
    pub now_ms: i64,
}

/// One invariant's result.
pub struct Check {
    pub name: &'static str,
    /// How many things it checked (orders, charges, frames...).
    pub checked: usize,
    pub violations: Vec<String>,
}

pub type Invariant = fn(&Evidence) -> Check;

/// Every invariant, in the order they are printed.
pub const INVARIANTS: &[Invariant] = &[
    bouquet_sold_or_held_once,
    holds_counters_match_holds,
    one_charge_per_paid_order,
    analytics_equal_paid_orders,
    outbox_events_reached_analytics_once,
    nothing_left_parked,
    no_connection_or_subscription_leaked,
    public_subscriptions_sit_in_leased_shards,
    customers_see_their_own_orders_only,
    pending_payments_resolved,
    vases_keep_their_newest_heartbeat,
    rejected_orders_refunded_once,
    delivery_details_stay_with_their_readers,
    erased_reviews_keep_no_text,
    suspended_shops_sell_nothing,
    suspended_shops_write_nothing,
    bouquets_show_their_latest_photo,
    orders_show_their_latest_delivery_photo,
    catalogue_indexes_hold_the_listed_bouquets_at_their_score,
    paid_orders_split_by_the_rule_to_their_shop,
    refunds_take_back_transfer_and_fee,
    invoice_numbers_run_without_gap_per_shop,
    earnings_equal_the_orders_per_shop_and_day,
    ratings_equal_the_visible_reviews,
    prices_stay_between_floor_and_list,
    orders_keep_the_price_they_were_reserved_at,
    one_open_alert_per_vase_and_condition,
    open_alerts_hold_in_the_latest_reading,
    no_reading_outlives_its_retention,
    coverage_equals_each_shops_area,
];

/// How long after its lease (or after the gateway left it unanswered) a payment may stay
/// pending.
pub const PENDING_PAYMENT_BOUND: Duration = Duration::from_secs(120);

fn s<'a>(item: &'a Value, name: &str) -> &'a str {
    item[name].as_str().unwrap_or_default()
}

fn n(item: &Value, name: &str) -> i64 {
    item[name].as_i64().unwrap_or_default()
}

fn with_prefix<'a>(items: &'a [Value], prefix: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    items.iter().filter(move |i| s(i, "pk").starts_with(prefix))
}

fn orders(evidence: &Evidence) -> Vec<&Value> {
    with_prefix(&evidence.items, "ORDER#")
        .filter(|o| s(o, "sk") == "ORDER")
        .collect()
}

/// Sold to its customer: paid, and neither rejected nor refunded since.
fn paid(order: &Value) -> bool {
    matches!(
        s(order, "status"),
        "paid" | "accepted" | "out_for_delivery" | "fulfilled"
    )
}

/// What an order's lines add up to, in minor units.
fn lines_total(order: &Value) -> i64 {
    order["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| n(l, "priceMinor"))
        .sum()
}

fn order_bouquets(order: &Value) -> Vec<&str> {
    order["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["bouquetId"].as_str())
        .collect()
}

/// No bouquet is sold twice or held by two live orders; a sold bouquet names the one paid
/// order that has it, and every paid order's bouquets are sold to it.
pub fn bouquet_sold_or_held_once(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let (mut sold_to, mut held_by) = (
        HashMap::<&str, Vec<&str>>::new(),
        HashMap::<&str, Vec<&str>>::new(),
    );
    for order in orders(evidence) {
        let id = s(order, "orderId");
        let live_hold = match s(order, "status") {
            "reserved" => n(order, "reservedUntil") > evidence.now_ms,
            "payment_pending" => true,
            _ => false,
        };
        for bouquet in order_bouquets(order) {
            if paid(order) {
                sold_to.entry(bouquet).or_default().push(id);
            }
            if live_hold {
                held_by.entry(bouquet).or_default().push(id);
            }
        }
    }
    let bouquets: Vec<&Value> = with_prefix(&evidence.items, "BOUQUET#")
        .filter(|b| s(b, "sk") == "BOUQUET")
        .collect();
    for bouquet in &bouquets {
        let id = s(bouquet, "bouquetId");
        let buyers = sold_to.get(id).cloned().unwrap_or_default();
        if buyers.len() > 1 {
            violations.push(format!("bouquet {id} sold to {buyers:?}"));
        }
        if let Some(holders) = held_by.get(id).filter(|h| h.len() > 1) {
            violations.push(format!("bouquet {id} held by {holders:?}"));
        }
        match (s(bouquet, "status"), buyers.first()) {
            ("sold", Some(buyer)) if s(bouquet, "orderId") == *buyer => {}
            ("sold", _) => violations.push(format!(
                "bouquet {id} is sold to {:?}, which is not a paid order",
                s(bouquet, "orderId")
            )),
            (status, Some(buyer)) => violations.push(format!(
                "bouquet {id} is {status} but order {buyer} paid for it"
            )),
            _ => {}
        }
    }
    Check {
        name: "no bouquet sold or held twice",
        checked: bouquets.len(),
        violations,
    }
}

/// Each customer's holds counter (the cap's) equals its orders that hold bouquets.
pub fn holds_counters_match_holds(evidence: &Evidence) -> Check {
    let mut holding = HashMap::<&str, i64>::new();
    for order in orders(evidence) {
        if matches!(s(order, "status"), "reserved" | "payment_pending") {
            *holding.entry(s(order, "customerId")).or_default() += 1;
        }
    }
    let mut violations = Vec::new();
    let customers = &evidence.journal.customers;
    for customer in customers {
        let counter = evidence
            .items
            .iter()
            .find(|i| s(i, "pk") == format!("CUSTOMER#{customer}#HOLDS"))
            .map(|i| n(i, "holding"))
            .unwrap_or(0);
        let real = holding.get(customer.as_str()).copied().unwrap_or(0);
        if counter != real {
            violations.push(format!(
                "{customer}: counter {counter}, orders holding {real}"
            ));
        }
    }
    Check {
        name: "every customer's holds counter equals its holds",
        checked: customers.len(),
        violations,
    }
}

/// Every paid order has exactly one standing (approved, unrefunded) charge, the one it names;
/// every approved charge is a paid order's or refunded.
pub fn one_charge_per_paid_order(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let charges: Vec<&Value> = with_prefix(&evidence.items, "SIMPAY#")
        .filter(|c| s(c, "outcome") == "approved")
        .collect();
    let mut standing = HashMap::<&str, Vec<&str>>::new();
    for charge in &charges {
        let key = s(charge, "pk").trim_start_matches("SIMPAY#");
        let order = key.rsplit_once('-').map(|(o, _)| o).unwrap_or(key);
        if charge["refunded"].as_bool() != Some(true) {
            standing
                .entry(order)
                .or_default()
                .push(s(charge, "chargeId"));
        }
    }
    let all = orders(evidence);
    for order in &all {
        let id = s(order, "orderId");
        let standing = standing.remove(id).unwrap_or_default();
        if paid(order) {
            if standing != [s(order, "chargeId")] {
                violations.push(format!(
                    "paid order {id} names charge {:?}; standing charges {standing:?}",
                    s(order, "chargeId")
                ));
            }
        } else if !standing.is_empty() && s(order, "status") != "payment_pending" {
            violations.push(format!(
                "order {id} is {} with standing charges {standing:?} (neither paid nor refunded)",
                s(order, "status")
            ));
        }
    }
    for (order, charges) in standing {
        violations.push(format!("charges {charges:?} for unknown order {order}"));
    }
    Check {
        name: "every paid order has one charge; every charge a paid order or a refund",
        checked: all.len() + charges.len(),
        violations,
    }
}

pub fn utc_day(millis: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .map(|t| t.date().to_string())
        .unwrap_or_default()
}

/// The analytics projection's sales and revenue per vendor and day equal the paid orders'.
pub fn analytics_equal_paid_orders(evidence: &Evidence) -> Check {
    let mut expected = BTreeMap::<(String, String), (i64, i64)>::new();
    let paid_events: HashMap<&str, i64> = with_prefix(&evidence.items, "OUTBOX#")
        .filter(|e| s(e, "eventName") == "OrderPaid")
        .map(|e| (s(e, "aggregateId"), n(e, "occurredAt")))
        .collect();
    let mut violations = Vec::new();
    // Sales count payments: a rejected order was sold, then refunded.
    let was_paid = |o: &Value| paid(o) || s(o, "status") == "rejected";
    for order in orders(evidence).into_iter().filter(|o| was_paid(o)) {
        let Some(at) = paid_events.get(s(order, "orderId")) else {
            violations.push(format!(
                "paid order {} has no OrderPaid",
                s(order, "orderId")
            ));
            continue;
        };
        let entry = expected
            .entry((s(order, "vendorId").to_owned(), utc_day(*at)))
            .or_default();
        entry.0 += 1;
        entry.1 += n(order, "totalMinor");
    }
    let mut projected = BTreeMap::<(String, String), (i64, i64)>::new();
    for day in with_prefix(&evidence.items, "ANALYTICS#") {
        let vendor = s(day, "pk").trim_start_matches("ANALYTICS#").to_owned();
        let date = s(day, "sk").trim_start_matches("DAY#").to_owned();
        projected.insert((vendor, date), (n(day, "sales"), n(day, "revenue_EUR")));
    }
    for (key, want) in &expected {
        let got = projected.get(key).copied().unwrap_or_default();
        if got != *want {
            violations.push(format!(
                "vendor {} on {}: projected {} sales / {} cents, paid orders {} / {}",
                key.0, key.1, got.0, got.1, want.0, want.1
            ));
        }
    }
    for (key, got) in &projected {
        if got.0 != 0 && !expected.contains_key(key) {
            violations.push(format!(
                "vendor {} on {}: {} sales, no paid order",
                key.0, key.1, got.0
            ));
        }
    }
    Check {
        name: "analytics totals equal the paid orders per vendor and day",
        checked: expected.len(),
        violations,
    }
}

/// Every outbox event the analytics consumer takes reached it and was applied once (its
/// dedupe marker), none left behind.
pub fn outbox_events_reached_analytics_once(evidence: &Evidence) -> Check {
    let applied: HashSet<&str> = with_prefix(&evidence.items, "PROCESSED#vendor-analytics#")
        .map(|p| s(p, "pk").trim_start_matches("PROCESSED#vendor-analytics#"))
        .collect();
    let events: Vec<&Value> = with_prefix(&evidence.items, "OUTBOX#")
        .filter(|e| {
            matches!(
                s(e, "eventName"),
                "OrderPaid" | "OrderCancelled" | "ReservationExpired" | "OrderFulfilled"
            )
        })
        .collect();
    let violations = events
        .iter()
        .filter(|e| !applied.contains(s(e, "eventId")))
        .map(|e| {
            format!(
                "{} {} of {} never reached the analytics consumer",
                s(e, "eventName"),
                s(e, "eventId"),
                s(e, "aggregateId")
            )
        })
        .collect();
    Check {
        name: "every outbox event reached its consumer (applied once)",
        checked: events.len(),
        violations,
    }
}

/// What the system does with what lands in a queue (docs/operations.md, "What replays
/// itself, and what waits for a person"), by the queue's logical name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuePolicy {
    /// Work, or a parking lot that is replayed by itself: empty once the system is quiet.
    Drains,
    /// Kept whole and not replayed (a live frame late is worth less than none; a sweep's next
    /// run does the work): every message must be whole.
    KeptWhole,
    /// Waits for a person: a soak must leave nothing there.
    WaitsForAPerson,
}

pub fn queue_policy(queue: &str) -> QueuePolicy {
    let logical = queue.rsplit_once('-').map(|(_, l)| l).unwrap_or(queue);
    match logical {
        "LiveFailureQueue"
        | "LiveDeadLetterQueue"
        | "FanoutDeadLetterQueue"
        | "ScheduledRunFailureQueue" => QueuePolicy::KeptWhole,
        // An order email whose invocation died three times (the soak kills a function in about
        // one invocation in twenty: 73 in one CI run) is parked whole; a person may replay it,
        // and the consumer sends only what it has not sent. Nothing else depends on it.
        "EmailDeadLetterQueue" | "EmailFailureQueue" => QueuePolicy::KeptWhole,
        "OutboxFailureQueue"
        | "AnalyticsDeadLetterQueue"
        | "AnalyticsFailureQueue"
        | "VaseMessagesDeadLetterQueue"
        // A photo's event that failed three times: redriven once S3 or DynamoDB is back.
        | "PhotoDeadLetterQueue" => QueuePolicy::WaitsForAPerson,
        _ => QueuePolicy::Drains,
    }
}

/// A failed invocation's record is whole: it parses and carries what failed (Lambda's
/// invocation record has `requestPayload`; a parked unit or event is the JSON itself).
fn whole(body: &str) -> bool {
    serde_json::from_str::<Value>(body).is_ok_and(|v| v.is_object() || v.is_array())
}

/// Once the system is quiet: work queues and the outbox's parking lot (replayed by itself)
/// are empty; what is kept for reading is whole; nothing waits for a person.
pub fn nothing_left_parked(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    for (queue, (waiting, bodies)) in &evidence.queues {
        let sample = || {
            bodies
                .first()
                .map(|b| b.chars().take(300).collect::<String>())
                .unwrap_or_default()
        };
        match queue_policy(queue) {
            _ if *waiting == 0 => {}
            QueuePolicy::KeptWhole => {
                let broken = bodies.iter().filter(|b| !whole(b)).count();
                if broken > 0 || bodies.len() as u64 != *waiting {
                    violations.push(format!(
                        "{queue}: {waiting} kept, {} read, {broken} not whole",
                        bodies.len()
                    ));
                }
            }
            policy => violations.push(format!(
                "{queue} ({policy:?}): {waiting} message(s) left: {}",
                sample()
            )),
        }
    }
    Check {
        name: "nothing left parked; what is kept is whole",
        checked: evidence.queues.len(),
        violations,
    }
}

/// How many messages each kept-whole queue holds (the report prints them).
pub fn kept(evidence: &Evidence) -> BTreeMap<&str, u64> {
    evidence
        .queues
        .iter()
        .filter(|(q, (n, _))| *n > 0 && queue_policy(q) == QueuePolicy::KeptWhole)
        .map(|(q, (n, _))| (q.as_str(), *n))
        .collect()
}

/// Every socket was closed: no connection, subscription or connection-limit slot remains,
/// except what a `$disconnect` AWS never sent left behind (best effort, as AWS documents it):
/// that is bounded by the TTL, and each holder's counter holds exactly one slot per
/// connection item still stored.
pub fn no_connection_or_subscription_leaked(evidence: &Evidence) -> Check {
    let retention = bouquet_app::store::CONNECTION_RETENTION.as_secs() as i64;
    let undelivered = |id: &str| evidence.undelivered_disconnects.contains(id);
    let mut violations = Vec::new();
    let mut stored_per_holder: HashMap<&str, i64> = HashMap::new();
    for item in &evidence.live_items {
        let (pk, sk) = (s(item, "pk"), s(item, "sk"));
        if let Some(id) = pk.strip_prefix("CONNECTION#") {
            *stored_per_holder.entry(s(item, "limitKey")).or_default() += 1;
            let expires_in_time = n(item, "expiresAt") > 0
                && n(item, "expiresAt") <= n(item, "connectedAt") / 1000 + retention;
            if !undelivered(id) {
                violations.push(format!("{pk} left, though its $disconnect arrived: {item}"));
            } else if !expires_in_time {
                violations.push(format!(
                    "{pk} left without a TTL within {retention} s: {item}"
                ));
            }
        } else if let Some(id) = sk
            .strip_prefix("CONNECTION#")
            .filter(|_| pk.starts_with("CHANNEL#"))
        {
            if !undelivered(id) || n(item, "expiresAt") <= 0 {
                violations.push(format!("{pk} / {sk} subscription left: {item}"));
            }
        }
    }
    for item in with_prefix(&evidence.live_items, "LIMIT#") {
        let holder = &s(item, "pk")["LIMIT#".len()..];
        let stored = stored_per_holder.get(holder).copied().unwrap_or(0);
        if n(item, "open") != stored || (stored > 0 && n(item, "expiresAt") <= 0) {
            violations.push(format!(
                "LIMIT#{holder} counts {} open, {stored} connection(s) stored: {item}",
                n(item, "open")
            ));
        }
    }
    Check {
        name: "no connection or subscription leaked",
        checked: evidence.live_items.len(),
        violations,
    }
}

/// Fan-out only where someone listens must never skip a listener: every stored subscription
/// to a public channel (`catalogue`, `bouquet:{id}`) sits in a shard whose lease
/// (`OCCUPIED#{key}`, `s{shard}`) runs until its expiry, less the renewal margin a container
/// may leave (`live::LEASE_RENEWAL`; a connection lives 2 h, its subscription 2 h 10 min).
pub fn public_subscriptions_sit_in_leased_shards(evidence: &Evidence) -> Check {
    let margin = bouquet_app::live::LEASE_RENEWAL.as_secs() as i64;
    let leases: HashMap<&str, &Value> = with_prefix(&evidence.live_items, "OCCUPIED#")
        .map(|item| (&s(item, "pk")["OCCUPIED#".len()..], item))
        .collect();
    let mut violations = Vec::new();
    let mut checked = 0;
    for item in with_prefix(&evidence.live_items, "CHANNEL#") {
        let Some((key, shard)) = s(item, "pk")["CHANNEL#".len()..].rsplit_once('#') else {
            continue;
        };
        let public = key == "catalogue" || key.starts_with("bouquet:");
        if !public || !s(item, "sk").starts_with("CONNECTION#") {
            continue;
        }
        checked += 1;
        let lease = leases.get(key).map_or(0, |l| n(l, &format!("s{shard}")));
        if lease < n(item, "expiresAt") - margin {
            violations.push(format!(
                "{} / {} expires at {} but its shard's lease ends at {lease}",
                s(item, "pk"),
                s(item, "sk"),
                n(item, "expiresAt")
            ));
        }
    }
    Check {
        name: "every public subscription sits in a leased shard",
        checked,
        violations,
    }
}

/// Each customer's socket saw frames of its own orders only, and of every order it paid.
pub fn customers_see_their_own_orders_only(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let owner: HashMap<&str, &str> = evidence
        .journal
        .orders
        .iter()
        .flat_map(|(c, orders)| orders.iter().map(move |o| (o.as_str(), c.as_str())))
        .collect();
    let mut checked = 0;
    for (customer, frames) in &evidence.journal.frames {
        for frame in frames {
            checked += 1;
            for (order, whose) in &owner {
                if whose != customer && frame.contains(order) {
                    violations.push(format!("{customer} received {whose}'s order {order}"));
                }
            }
        }
    }
    // Push is at most once (docs/contract.md): a broadcast that failed is kept whole, not replayed.
    let failed_broadcasts: Vec<&String> = evidence
        .queues
        .iter()
        .filter(|(q, _)| queue_policy(q) == QueuePolicy::KeptWhole)
        .flat_map(|(_, (_, bodies))| bodies)
        .collect();
    for order in orders(evidence).into_iter().filter(|o| paid(o)) {
        let id = s(order, "orderId");
        let Some(customer) = owner.get(id) else {
            continue;
        };
        let seen = evidence
            .journal
            .frames
            .get(*customer)
            .is_some_and(|frames| {
                frames
                    .iter()
                    .any(|f| f.contains(id) && f.contains("OrderPaid"))
            });
        let kept = failed_broadcasts
            .iter()
            .any(|b| b.contains(id) && b.contains("OrderPaid"));
        if !seen && !kept {
            violations.push(format!(
                "{customer} never received OrderPaid of its order {id}, and no failed broadcast of it is kept"
            ));
        }
    }
    Check {
        name: "every customer received its own order frames (or the failed broadcast is kept whole) and no one else's",
        checked,
        violations,
    }
}

/// No payment stays pending past its lease (or the gateway's non-answer) by more than
/// [`PENDING_PAYMENT_BOUND`], unless its customer may still be authenticating.
pub fn pending_payments_resolved(evidence: &Evidence) -> Check {
    let bound = PENDING_PAYMENT_BOUND.as_millis() as i64;
    let mut violations = Vec::new();
    let pending: Vec<&Value> = orders(evidence)
        .into_iter()
        .filter(|o| s(o, "status") == "payment_pending")
        .collect();
    for order in &pending {
        let authenticating = n(order, "authenticatingUntil") > evidence.now_ms;
        let due = n(order, "dueAt");
        if !authenticating && evidence.now_ms - due > bound {
            violations.push(format!(
                "order {} pending {} s past its lease",
                s(order, "orderId"),
                (evidence.now_ms - due) / 1000
            ));
        }
    }
    Check {
        name: "every pending payment resolves within 2 minutes of its lease",
        checked: pending.len() + evidence.journal.unanswered_payments.len(),
        violations,
    }
}

/// Each vase that beat is online, at the newest heartbeat it sent: late and duplicated ones
/// moved nothing backwards, and none was lost.
pub fn vases_keep_their_newest_heartbeat(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    for (vase, newest) in &evidence.journal.newest_heartbeat {
        let item = evidence
            .items
            .iter()
            .find(|i| s(i, "pk") == format!("VASE#{vase}") && s(i, "sk") == "VASE");
        match item {
            None => violations.push(format!("vase {vase} has no item")),
            Some(item) => {
                let last = n(item, "lastHeartbeatAt");
                if last != *newest || s(item, "connection") != "online" {
                    violations.push(format!(
                        "vase {vase}: {} at {last}, its newest heartbeat {newest}",
                        s(item, "connection")
                    ));
                }
            }
        }
    }
    Check {
        name: "every vase is online at the newest heartbeat it sent",
        checked: evidence.journal.newest_heartbeat.len(),
        violations,
    }
}

/// Every order its vendor rejected was refunded, once, through the gateway: the refund is
/// confirmed on the order, the charge is marked refunded in the ledger (a flag: a second
/// refund of it is none), and its bouquets are no longer its.
pub fn rejected_orders_refunded_once(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let rejected: Vec<&Value> = orders(evidence)
        .into_iter()
        .filter(|o| s(o, "status") == "rejected")
        .collect();
    for order in &rejected {
        let id = s(order, "orderId");
        if order["refundedAt"].as_i64().is_none() {
            violations.push(format!("rejected order {id} has no confirmed refund"));
        }
        let charge = with_prefix(&evidence.items, "SIMPAY#")
            .find(|c| s(c, "chargeId") == s(order, "chargeId") && s(c, "outcome") == "approved");
        match charge {
            Some(charge) if charge["refunded"].as_bool() == Some(true) => {}
            Some(_) => violations.push(format!("rejected order {id}: its charge is not refunded")),
            None => violations.push(format!(
                "rejected order {id}: no charge {:?}",
                s(order, "chargeId")
            )),
        }
        let withdrawn = order["bouquetsWithdrawn"].as_bool() == Some(true);
        for bouquet in order_bouquets(order) {
            let item =
                with_prefix(&evidence.items, "BOUQUET#").find(|b| s(b, "bouquetId") == bouquet);
            if item.is_some_and(|b| s(b, "orderId") == id) {
                violations.push(format!(
                    "rejected order {id} still holds or owns bouquet {bouquet}"
                ));
            }
            if withdrawn && item.is_some_and(|b| s(b, "status") != "withdrawn") {
                violations.push(format!(
                    "rejected order {id} withdrew bouquet {bouquet}, which is on sale"
                ));
            }
        }
    }
    Check {
        name: "every rejected order refunded once, its bouquets back on sale (or withdrawn, when the florist said so)",
        checked: rejected.len(),
        violations,
    }
}

/// Every sold order has its delivery details (no payment without them), and no personal field
/// of any order's details (recipient, phone, street, card message) appears in an outbox
/// event, a frame any customer received, or a failure destination's message.
pub fn delivery_details_stay_with_their_readers(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let mut personal = Vec::new();
    let all_orders = orders(evidence);
    for order in &all_orders {
        let id = s(order, "orderId");
        let delivery = &order["delivery"];
        if (paid(order) || s(order, "status") == "rejected") && !delivery.is_object() {
            violations.push(format!("order {id} was paid without delivery details"));
        }
        for field in [
            &delivery["recipientName"],
            &delivery["recipientPhone"],
            &delivery["address"]["street"],
            &delivery["cardMessage"],
            &delivery["contactEmail"],
        ] {
            if let Some(text) = field
                .as_str()
                .filter(|t| t.len() >= 4 && *t != "[redacted]")
            {
                personal.push((id, text));
            }
        }
    }
    let mut leaked = |place: String, text: &str| {
        for (id, value) in &personal {
            if text.contains(value) {
                violations.push(format!("{place} carries order {id}'s {value:?}"));
            }
        }
    };
    for event in with_prefix(&evidence.items, "OUTBOX#") {
        leaked(format!("event {}", s(event, "eventId")), &event.to_string());
    }
    // An idempotency record lives 24 h beside the order: it keeps the answer without the
    // details, so that redaction and erasure, which change the order, leave no copy (issue 38).
    for record in with_prefix(&evidence.items, "IDEMPOTENCY#") {
        leaked(
            format!("idempotency record {}", s(record, "pk")),
            &record.to_string(),
        );
    }
    for (customer, frames) in &evidence.journal.frames {
        for frame in frames {
            leaked(format!("a frame to {customer}"), frame);
        }
    }
    for (queue, (_, bodies)) in &evidence.queues {
        for body in bodies {
            leaked(format!("a message in {queue}"), body);
        }
    }
    Check {
        name: "every sold order has delivery details, and none of them is in an event, an idempotency record, a frame or a parked message",
        checked: all_orders.len(),
        violations,
    }
}

/// Runs every invariant and prints each with its counts; returns how many violations.
pub fn audit(evidence: &Evidence) -> (usize, Vec<Value>) {
    let mut total = 0;
    let mut report = Vec::new();
    for invariant in INVARIANTS {
        let check = invariant(evidence);
        total += check.violations.len();
        println!(
            "  {} {} (checked {}, violations {})",
            if check.violations.is_empty() {
                "ok  "
            } else {
                "FAIL"
            },
            check.name,
            check.checked,
            check.violations.len()
        );
        for violation in check.violations.iter().take(20) {
            println!("       - {violation}");
        }
        report.push(json!({
            "invariant": check.name,
            "checked": check.checked,
            "violations": check.violations,
        }));
    }
    (total, report)
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// An item as JSON (numbers as numbers).
pub fn item_json(item: &HashMap<String, AttributeValue>) -> Value {
    Value::Object(
        item.iter()
            .map(|(k, v)| (k.clone(), value_json(v)))
            .collect::<Map<String, Value>>(),
    )
}

fn value_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!(s),
        AttributeValue::N(n) => n
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| n.parse::<f64>().map(Value::from))
            .unwrap_or(Value::Null),
        AttributeValue::Bool(b) => json!(b),
        AttributeValue::M(m) => item_json(m),
        AttributeValue::L(l) => Value::Array(l.iter().map(value_json).collect()),
        AttributeValue::Ss(ss) => json!(ss),
        _ => Value::Null,
    }
}

/// The items of `items` that belong to none of a seeded season's shops and vases (`manifest`,
/// [`crate::season::Season::manifest`]): the season is history written straight into the
/// table, without the events and counters the invariants follow, so the auditor checks the
/// load's own shops; the season's own consistency is its generator's tests'. Returns how many
/// were set aside.
pub fn set_aside_season(items: &mut Vec<Value>, manifest: &Value) -> usize {
    let names = |field: &str| -> HashSet<String> {
        manifest[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let (vendors, vases) = (names("vendorIds"), names("vaseIds"));
    let before = items.len();
    items.retain(|item| {
        let pk = s(item, "pk");
        let owner = |prefix: &str| {
            pk.strip_prefix(prefix)
                .map(|rest| rest.split('#').next().unwrap_or(rest))
        };
        !(vendors.contains(s(item, "vendorId"))
            || owner("VENDOR#").is_some_and(|id| vendors.contains(id))
            || vases.contains(s(item, "vaseId"))
            || owner("VASE#").is_some_and(|id| vases.contains(id)))
    });
    before - items.len()
}

/// Every item of `table`, as JSON.
pub async fn scan(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<Vec<Value>, String> {
    Ok(crate::scan_all(client, table)
        .await?
        .iter()
        .map(item_json)
        .collect())
}

/// A suspended shop's bouquets are all off sale (flagged with the time, out of the catalogue
/// index, in no order created after that time or the shop's), and a bouquet is off sale only
/// while its shop is suspended.
pub fn suspended_shops_sell_nothing(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let suspended_since: HashMap<&str, i64> = with_prefix(&evidence.items, "VENDOR#")
        .filter(|v| s(v, "sk") == "VENDOR" && v["suspendedAt"].is_number())
        .map(|v| (s(v, "vendorId"), n(v, "suspendedAt")))
        .collect();
    let bouquets: Vec<&Value> = with_prefix(&evidence.items, "BOUQUET#")
        .filter(|b| s(b, "sk") == "BOUQUET")
        .collect();
    for bouquet in &bouquets {
        let id = s(bouquet, "bouquetId");
        let flagged = bouquet["suspended"] == true;
        match suspended_since.get(s(bouquet, "vendorId")) {
            Some(since) => {
                if !flagged {
                    violations.push(format!("bouquet {id} of a suspended shop is on sale"));
                }
                if bouquet.get("catalogueShard").is_some() {
                    violations.push(format!(
                        "bouquet {id} of a suspended shop is in the catalogue"
                    ));
                }
                // Taken off sale at `suspendedAt` (stamped after the read its write was
                // conditioned on), it is in no order created after that.
                let off_sale_at = bouquet["suspendedAt"].as_i64();
                let since_flag = off_sale_at.unwrap_or(*since);
                if flagged && off_sale_at.is_none() {
                    violations.push(format!("bouquet {id} is off sale without a time"));
                }
                let ordered_after = orders(evidence)
                    .into_iter()
                    .any(|o| n(o, "createdAt") > since_flag && order_bouquets(o).contains(&id));
                if ordered_after {
                    violations.push(format!(
                        "bouquet {id} was reserved after its shop's suspension took it off sale"
                    ));
                }
            }
            None if flagged => {
                violations.push(format!("bouquet {id} is off sale though its shop trades"))
            }
            None => {}
        }
    }
    Check {
        name: "a suspended shop's bouquets are off sale, and only those",
        checked: bouquets.len(),
        violations,
    }
}

/// Issue 51: an erased customer's reviews keep their stars but no text: the review of every
/// redacted order whose customer asked for erasure (`personalDataDays` 0). (A redacted order's
/// delivery photo is `orders_show_their_latest_delivery_photo`'s; the photos' objects,
/// `system/abuse.rs`'s.)
pub fn erased_reviews_keep_no_text(evidence: &Evidence) -> Check {
    let reviews: HashMap<&str, &Value> = with_prefix(&evidence.items, "ORDER#")
        .filter(|i| s(i, "sk") == "REVIEW")
        .map(|r| (s(r, "pk"), r))
        .collect();
    let mut violations = Vec::new();
    let mut checked = 0;
    for order in orders(evidence) {
        let erased = order["personalDataDays"].as_i64() == Some(0);
        if !erased || order["redactedAt"].is_null() {
            continue;
        }
        let Some(review) = reviews.get(s(order, "pk")) else {
            continue;
        };
        checked += 1;
        if review.get("text").is_some_and(|t| !t.is_null()) {
            violations.push(format!(
                "the review of order {} keeps its text after its customer's erasure",
                s(order, "orderId")
            ));
        }
    }
    Check {
        name: "an erased customer's reviews keep their stars and no text",
        checked,
        violations,
    }
}

/// Whether `name` is an event of a shop's own write: the domain's classification of every
/// event ([`Actor::of`]), the same rule the pipeline enforces (a shop's open orders' steps
/// are not among them: they go on while it is suspended).
fn shop_write(name: &str) -> bool {
    Actor::of(name) == Some(Actor::Shop)
}

/// How long a transaction may be in flight after the stamp it carries: a stamp is taken
/// before the transaction is sent, and under the soak's faults one attempt may be held up to
/// 1.5 s by the proxy and retried by the SDK on a throttle. A write decided that close to a
/// suspension's or a reinstatement's stamp may be ordered on either side of its mark.
const MARK_IN_FLIGHT_MS: i64 = 5_000;

/// Issue 38: nothing written by a suspended shop after its suspension's stamp. Each shop's
/// suspensions are read from its `VendorSuspended` and `VendorReinstated` events (a shop may
/// be suspended and reinstated during a run); no event of a shop's own write falls inside one
/// (past [`MARK_IN_FLIGHT_MS`]).
pub fn suspended_shops_write_nothing(evidence: &Evidence) -> Check {
    let mut changes: HashMap<String, Vec<(i64, bool)>> = HashMap::new();
    let events: Vec<&Value> = with_prefix(&evidence.items, "OUTBOX#").collect();
    // The detail is the event's envelope; its payload is under `data`.
    let vendor_of = |event: &Value| -> Option<String> {
        let detail: Value =
            serde_json::from_str(event["detail"].as_str().unwrap_or("{}")).unwrap_or(Value::Null);
        detail["data"]["vendorId"].as_str().map(str::to_owned)
    };
    for event in &events {
        let suspended = match s(event, "eventName") {
            "VendorSuspended" => true,
            "VendorReinstated" => false,
            _ => continue,
        };
        let Some(vendor) = vendor_of(event) else {
            continue;
        };
        changes
            .entry(vendor)
            .or_default()
            .push((n(event, "occurredAt"), suspended));
    }
    for history in changes.values_mut() {
        history.sort();
    }
    // Inside a suspension, away from both its ends by the in-flight allowance: a write
    // decided just after the stamp may have been ordered before the mark, and one decided
    // just before a reinstatement may have landed after it (its transaction then saw the shop
    // trading).
    let suspended_at = |vendor: &str, at: i64| -> Option<i64> {
        let history = changes.get(vendor)?;
        let before = history.iter().take_while(|(when, _)| *when < at).count();
        let (since, suspended) = *history.get(before.checked_sub(1)?)?;
        let until = history.get(before).map_or(i64::MAX, |(when, _)| *when);
        (suspended && since + MARK_IN_FLIGHT_MS < at && at + MARK_IN_FLIGHT_MS < until)
            .then_some(since)
    };
    let mut violations = Vec::new();
    let mut checked = 0;
    for event in events.iter().filter(|e| shop_write(s(e, "eventName"))) {
        checked += 1;
        let Some(vendor) = vendor_of(event) else {
            violations.push(format!(
                "{} ({}) names no shop",
                s(event, "eventName"),
                s(event, "aggregateId")
            ));
            continue;
        };
        let at = n(event, "occurredAt");
        if let Some(since) = suspended_at(&vendor, at) {
            violations.push(format!(
                "shop {vendor} wrote {} ({}) at {at}, after its suspension at {since}",
                s(event, "eventName"),
                s(event, "aggregateId")
            ));
        }
    }
    Check {
        name: "a suspended shop writes nothing after its suspension's stamp",
        checked,
        violations,
    }
}

/// Each bouquet shows its latest processed photo: no upload that ended `ready` is newer than
/// the photo its bouquet shows (uploads ids are ULIDs, ordered as they were allowed); and every
/// upload whose file S3 took has ended (shown, refused or superseded), none lost on the way.
pub fn bouquets_show_their_latest_photo(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let shown: HashMap<&str, &str> = with_prefix(&evidence.items, "BOUQUET#")
        .filter(|b| s(b, "sk") == "BOUQUET")
        .map(|b| {
            (
                s(b, "bouquetId"),
                b["photo"]["uploadId"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // Proof-of-delivery uploads are the next invariant's.
    let ready: Vec<&Value> = with_prefix(&evidence.items, "PHOTO_UPLOAD#")
        .filter(|u| s(u, "status") == "ready" && u.get("orderId").is_none())
        .collect();
    for upload in &ready {
        let (id, bouquet) = (s(upload, "uploadId"), s(upload, "bouquetId"));
        match shown.get(bouquet) {
            Some(photo) if *photo >= id => {}
            Some(photo) => violations.push(format!(
                "bouquet {bouquet} shows photo {photo:?}, older than its ready upload {id}"
            )),
            None => violations.push(format!(
                "upload {id} is ready for a bouquet {bouquet} that is gone"
            )),
        }
    }
    let status: HashMap<&str, &str> = with_prefix(&evidence.items, "PHOTO_UPLOAD#")
        .map(|u| (s(u, "uploadId"), s(u, "status")))
        .collect();
    for upload in &evidence.journal.photo_uploads {
        match status.get(upload.as_str()) {
            Some(&"ready" | &"rejected" | &"superseded") => {}
            other => violations.push(format!(
                "upload {upload}, whose file S3 took, has not ended ({})",
                other.unwrap_or(&"no record")
            )),
        }
    }
    Check {
        name: "every bouquet shows its latest processed photo",
        checked: ready.len() + evidence.journal.photo_uploads.len(),
        violations,
    }
}

/// Every bouquet is in the catalogue's indexes exactly while it is listed (available or held,
/// its shop trading: `catalogueShard`), by its id (`catalogueSort`), by the score its vase
/// last gave it (`freshnessSort`, which every write of the score moves with it) and by its
/// price (`priceSort`).
pub fn catalogue_indexes_hold_the_listed_bouquets_at_their_score(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let bouquets: Vec<&Value> = with_prefix(&evidence.items, "BOUQUET#")
        .filter(|b| s(b, "sk") == "BOUQUET")
        .collect();
    for bouquet in &bouquets {
        let id = s(bouquet, "bouquetId");
        let listed = matches!(s(bouquet, "status"), "available" | "reserved")
            && bouquet["suspended"] != true;
        let indexed = bouquet.get("catalogueShard").is_some();
        if listed != indexed {
            violations.push(format!(
                "bouquet {id} ({}) is {}in the catalogue",
                s(bouquet, "status"),
                if indexed { "" } else { "not " }
            ));
        }
        if indexed && s(bouquet, "catalogueSort") != id {
            violations.push(format!("bouquet {id} is out of place in the newest order"));
        }
        let at_score = match bouquet["freshness"].as_u64() {
            Some(score) => format!("{score:03}#{id}"),
            None => format!("-#{id}"),
        };
        let at_price = format!("{:012}#{id}", n(bouquet, "priceMinor"));
        if s(bouquet, "priceSort") != at_price {
            violations.push(format!(
                "bouquet {id} sits at {:?} in the price order, not {at_price:?}",
                s(bouquet, "priceSort")
            ));
        }
        if s(bouquet, "freshnessSort") != at_score {
            violations.push(format!(
                "bouquet {id} sits at {:?} in the freshness order, not {at_score:?}",
                s(bouquet, "freshnessSort")
            ));
        }
    }
    Check {
        name: "the catalogue's indexes hold the listed bouquets, each at its score and price",
        checked: bouquets.len(),
        violations,
    }
}

/// Every order that was paid (rejected ones too) totals its lines; its split is the rounding
/// rule's (fee = total × commission rounded half up, `bouquet_domain::commission`); it names
/// its shop's payout account (reservations need one); and its charge was for that total, to
/// that account, with that fee.
pub fn paid_orders_split_by_the_rule_to_their_shop(evidence: &Evidence) -> Check {
    use bouquet_app::domain::commission::CommissionRate;
    use bouquet_app::domain::{Currency, Money};
    let mut violations = Vec::new();
    let charged: Vec<&Value> = orders(evidence)
        .into_iter()
        .filter(|o| paid(o) || s(o, "status") == "rejected")
        .collect();
    for order in &charged {
        let id = s(order, "orderId");
        let total = n(order, "totalMinor");
        let lines = lines_total(order);
        // Orders given their details before issue 41 have no fee: zero.
        let delivery = order["deliveryFeeMinor"].as_i64().unwrap_or(0);
        if total != lines + delivery {
            violations.push(format!(
                "order {id} totals {total}, its lines {lines} and its delivery {delivery}"
            ));
        }
        let (Some(bps), Some(fee)) = (order["commissionBps"].as_i64(), order["feeMinor"].as_i64())
        else {
            violations.push(format!("paid order {id} has no split"));
            continue;
        };
        let currency = Currency::parse(s(order, "currency"));
        let rule = CommissionRate::from_basis_points(bps)
            .ok()
            .zip(currency.ok())
            .map(|(rate, currency)| {
                rate.settle(Money::from_minor(total, currency))
                    .fee()
                    .minor()
            });
        if rule != Some(fee) {
            violations.push(format!(
                "order {id}: fee {fee} on {total} at {bps} bp; the rule gives {rule:?}"
            ));
        }
        let shop_account = with_prefix(&evidence.items, "VENDOR#")
            .find(|v| s(v, "sk") == "VENDOR" && s(v, "vendorId") == s(order, "vendorId"))
            .map(|v| s(v, "payoutAccountId"));
        let account = s(order, "payoutAccount");
        if account.is_empty() || Some(account) != shop_account {
            violations.push(format!(
                "order {id} was paid to {account:?}, its shop's account is {shop_account:?}"
            ));
        }
        let charge = with_prefix(&evidence.items, "SIMPAY#")
            .find(|c| s(c, "chargeId") == s(order, "chargeId") && s(c, "outcome") == "approved");
        match charge {
            Some(charge)
                if n(charge, "amountMinor") == total
                    && s(charge, "destination") == account
                    && charge["applicationFeeMinor"].as_i64() == Some(fee) => {}
            Some(charge) => violations.push(format!(
                "order {id} ({total}, fee {fee}, to {account}): its charge was {} to {:?} with fee {:?}",
                n(charge, "amountMinor"),
                s(charge, "destination"),
                charge["applicationFeeMinor"].as_i64()
            )),
            None => violations.push(format!("paid order {id}: no approved charge")),
        }
    }
    Check {
        name: "every paid order totals its lines, splits by the rounding rule and was charged to its shop's account with that fee",
        checked: charged.len(),
        violations,
    }
}

/// Every refunded charge that went to a shop's account took back the transfer and the
/// marketplace's fee (flags on the provider's one refund: a retried refund is the same one).
pub fn refunds_take_back_transfer_and_fee(evidence: &Evidence) -> Check {
    let refunded: Vec<&Value> = with_prefix(&evidence.items, "SIMPAY#")
        .filter(|c| c["refunded"].as_bool() == Some(true) && !s(c, "destination").is_empty())
        .collect();
    let violations = refunded
        .iter()
        .filter(|c| {
            c["transferReversed"].as_bool() != Some(true)
                || c["feeRefunded"].as_bool() != Some(true)
        })
        .map(|c| {
            format!(
                "charge {} to {} was refunded without taking back its transfer and fee",
                s(c, "chargeId"),
                s(c, "destination")
            )
        })
        .collect();
    Check {
        name: "every refunded charge to a shop took back its transfer and the fee",
        checked: refunded.len(),
        violations,
    }
}

/// Each shop's paid orders (rejected ones included: they were invoiced, then refunded) carry
/// the numbers 1 to n of its invoice sequence, each once, and n is the sequence's last number;
/// no order that was never paid has one.
pub fn invoice_numbers_run_without_gap_per_shop(evidence: &Evidence) -> Check {
    let mut numbers = BTreeMap::<&str, Vec<i64>>::new();
    let mut violations = Vec::new();
    for order in orders(evidence) {
        let invoiced = paid(order) || s(order, "status") == "rejected";
        match (order["invoiceNumber"].as_i64(), invoiced) {
            (Some(number), true) => numbers
                .entry(s(order, "vendorId"))
                .or_default()
                .push(number),
            (None, true) => violations.push(format!(
                "paid order {} has no invoice number",
                s(order, "orderId")
            )),
            (Some(number), false) => violations.push(format!(
                "order {} ({}) was never paid but has invoice number {number}",
                s(order, "orderId"),
                s(order, "status")
            )),
            (None, false) => {}
        }
    }
    let last: HashMap<&str, i64> = with_prefix(&evidence.items, "VENDOR#")
        .filter(|i| s(i, "sk") == "INVOICES")
        .map(|i| (s(i, "pk").trim_start_matches("VENDOR#"), n(i, "lastNumber")))
        .collect();
    for (vendor, taken) in &mut numbers {
        taken.sort_unstable();
        let expected: Vec<i64> = (1..=taken.len() as i64).collect();
        if *taken != expected {
            violations.push(format!(
                "shop {vendor}'s invoice numbers are {taken:?}, not 1 to {}",
                taken.len()
            ));
        }
        if last.get(vendor).copied().unwrap_or(0) != taken.len() as i64 {
            violations.push(format!(
                "shop {vendor}'s sequence stands at {:?}, its orders took {}",
                last.get(vendor),
                taken.len()
            ));
        }
    }
    for (vendor, number) in &last {
        if !numbers.contains_key(vendor) && *number != 0 {
            violations.push(format!(
                "shop {vendor}'s sequence stands at {number} with no invoiced order"
            ));
        }
    }
    Check {
        name: "each shop's invoice numbers run 1 to n, no gap, no duplicate",
        checked: numbers.values().map(Vec::len).sum(),
        violations,
    }
}

/// Each shop's earnings per day (the projection's fees, refunds and fees refunded, in EUR) are
/// the sums of its orders' on the day of their `OrderPaid` and `OrderRejected`, and the
/// marketplace's commission for that shop and day is its fees less the fees refunded.
pub fn earnings_equal_the_orders_per_shop_and_day(evidence: &Evidence) -> Check {
    // (shop, day) → [fees, refunds, fees refunded]
    let mut expected = BTreeMap::<(String, String), [i64; 3]>::new();
    let events: HashMap<(&str, &str), i64> = with_prefix(&evidence.items, "OUTBOX#")
        .filter(|e| matches!(s(e, "eventName"), "OrderPaid" | "OrderRejected"))
        .map(|e| ((s(e, "aggregateId"), s(e, "eventName")), n(e, "occurredAt")))
        .collect();
    let mut violations = Vec::new();
    for order in orders(evidence) {
        let (id, shop) = (s(order, "orderId"), s(order, "vendorId").to_owned());
        let fee = n(order, "feeMinor");
        if let Some(at) = events.get(&(id, "OrderPaid")) {
            expected.entry((shop.clone(), utc_day(*at))).or_default()[0] += fee;
        }
        if s(order, "status") == "rejected" {
            match events.get(&(id, "OrderRejected")) {
                Some(at) => {
                    let day = expected.entry((shop, utc_day(*at))).or_default();
                    day[1] += n(order, "totalMinor");
                    day[2] += fee;
                }
                None => violations.push(format!("rejected order {id} has no OrderRejected")),
            }
        }
    }
    let mut projected = BTreeMap::<(String, String), [i64; 3]>::new();
    for day in with_prefix(&evidence.items, "ANALYTICS#") {
        let key = (
            s(day, "pk").trim_start_matches("ANALYTICS#").to_owned(),
            s(day, "sk").trim_start_matches("DAY#").to_owned(),
        );
        projected.insert(
            key,
            [
                n(day, "fees_EUR"),
                n(day, "refunds_EUR"),
                n(day, "feesRefunded_EUR"),
            ],
        );
    }
    let commission: HashMap<(String, String), i64> = with_prefix(&evidence.items, "COMMISSION")
        .flat_map(|day| {
            let date = s(day, "sk").trim_start_matches("DAY#").to_owned();
            day.as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| {
                    let shop = k.strip_prefix("shop_")?.strip_suffix("_EUR")?;
                    Some(((shop.to_owned(), date.clone()), v.as_i64()?))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    for (key, want) in &expected {
        let got = projected.get(key).copied().unwrap_or_default();
        if got != *want {
            violations.push(format!(
                "shop {} on {}: projected fees/refunds/fees refunded {got:?}, its orders {want:?}",
                key.0, key.1
            ));
        }
        let net_commission = want[0] - want[2];
        if commission.get(key).copied().unwrap_or(0) != net_commission {
            violations.push(format!(
                "shop {} on {}: the marketplace's commission {:?}, its orders {net_commission}",
                key.0,
                key.1,
                commission.get(key)
            ));
        }
    }
    for (key, got) in &projected {
        if *got != [0, 0, 0] && !expected.contains_key(key) {
            violations.push(format!(
                "shop {} on {}: money {got:?} and no order",
                key.0, key.1
            ));
        }
    }
    Check {
        name: "each shop's earnings and the commission per day are the sums of its orders",
        checked: expected.len(),
        violations,
    }
}

/// Each shop's rating (its counters by stars) equals its visible reviews, star by star, and
/// every review is of a delivered order of that shop.
/// Each order shows its latest processed proof-of-delivery photo, unless its details were
/// redacted (then it shows none); only an order out for delivery or delivered has one, and
/// its sizes are private keys under the order, never a public path.
pub fn orders_show_their_latest_delivery_photo(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let orders: HashMap<&str, &Value> = orders(evidence)
        .into_iter()
        .map(|o| (s(o, "orderId"), o))
        .collect();
    let mut checked = 0;
    for order in orders.values() {
        let Some(photo) = order.get("deliveryPhoto") else {
            continue;
        };
        checked += 1;
        let id = s(order, "orderId");
        if !matches!(s(order, "status"), "out_for_delivery" | "fulfilled") {
            violations.push(format!(
                "order {id} has a delivery photo while {}",
                s(order, "status")
            ));
        }
        if order.get("redactedAt").is_some() {
            violations.push(format!("order {id} kept its delivery photo past redaction"));
        }
        let prefix = format!("delivered/{id}/");
        for variant in photo["variants"].as_array().into_iter().flatten() {
            if !s(variant, "path").starts_with(&prefix) {
                violations.push(format!(
                    "order {id}'s delivery photo has a size at {}",
                    s(variant, "path")
                ));
            }
        }
    }
    let ready: Vec<&Value> = with_prefix(&evidence.items, "PHOTO_UPLOAD#")
        .filter(|u| s(u, "status") == "ready" && u.get("orderId").is_some())
        .collect();
    for upload in &ready {
        checked += 1;
        let (id, order) = (s(upload, "uploadId"), s(upload, "orderId"));
        match orders.get(order) {
            Some(o) if o.get("redactedAt").is_some() => {}
            Some(o) if o["deliveryPhoto"]["uploadId"].as_str().unwrap_or_default() >= id => {}
            Some(o) => violations.push(format!(
                "order {order} shows delivery photo {:?}, older than its ready upload {id}",
                o["deliveryPhoto"]["uploadId"]
            )),
            None => violations.push(format!(
                "upload {id} is ready for an order {order} that is gone"
            )),
        }
    }
    Check {
        name: "each order shows its latest proof-of-delivery photo, privately",
        checked,
        violations,
    }
}

pub fn ratings_equal_the_visible_reviews(evidence: &Evidence) -> Check {
    let mut visible = BTreeMap::<&str, [i64; 5]>::new();
    let mut violations = Vec::new();
    let delivered: HashMap<&str, &str> = orders(evidence)
        .into_iter()
        .filter(|o| s(o, "status") == "fulfilled")
        .map(|o| (s(o, "orderId"), s(o, "vendorId")))
        .collect();
    let reviews: Vec<&Value> = with_prefix(&evidence.items, "ORDER#")
        .filter(|i| s(i, "sk") == "REVIEW")
        .collect();
    for review in &reviews {
        let shop = s(review, "vendorId");
        if delivered.get(s(review, "orderId")) != Some(&shop) {
            violations.push(format!(
                "review of order {} is not of a delivered order of shop {shop}",
                s(review, "orderId")
            ));
        }
        let stars = n(review, "stars");
        if !(1..=5).contains(&stars) {
            violations.push(format!(
                "review of order {} has {stars} stars",
                s(review, "orderId")
            ));
        } else if review.get("hiddenAt").is_none() {
            visible.entry(shop).or_default()[stars as usize - 1] += 1;
        }
    }
    let ratings: HashMap<&str, [i64; 5]> = with_prefix(&evidence.items, "VENDOR#")
        .filter(|i| s(i, "sk") == "RATING")
        .map(|i| {
            let shop = s(i, "pk").trim_start_matches("VENDOR#");
            (shop, [1, 2, 3, 4, 5].map(|k| n(i, &format!("stars{k}"))))
        })
        .collect();
    for shop in visible
        .keys()
        .chain(ratings.keys())
        .collect::<BTreeSet<_>>()
    {
        let want = visible.get(shop).copied().unwrap_or_default();
        let got = ratings.get(shop).copied().unwrap_or_default();
        if want != got {
            violations.push(format!(
                "shop {shop}'s rating counts {got:?} by stars, its visible reviews {want:?}"
            ));
        }
    }
    // Every bouquet on sale stands in the catalogue's rating order at its shop's rating (a
    // sold or withdrawn one is in no catalogue order).
    let mut bouquets = 0;
    for bouquet in with_prefix(&evidence.items, "BOUQUET#")
        .filter(|b| s(b, "sk") == "BOUQUET" && matches!(s(b, "status"), "available" | "reserved"))
    {
        bouquets += 1;
        let counts = ratings
            .get(s(bouquet, "vendorId"))
            .copied()
            .unwrap_or_default();
        let rating = bouquet_app::domain::review::Rating { by_stars: counts };
        let want = bouquet_app::store::rating_sort(&rating, s(bouquet, "bouquetId"));
        if s(bouquet, "ratingSort") != want {
            violations.push(format!(
                "bouquet {} stands at {:?} in the rating order, its shop's rating at {want:?}",
                s(bouquet, "bouquetId"),
                s(bouquet, "ratingSort")
            ));
        }
    }
    Check {
        name: "each shop's rating equals its visible reviews, and its bouquets stand at it",
        checked: reviews.len() + bouquets,
        violations,
    }
}

/// Issue 53: how many markdowns, withdrawals past their best and alerts the run's vases caused
/// (the report prints them: a soak whose vases crossed no threshold proves little).
pub fn vase_events(evidence: &Evidence) -> BTreeMap<&'static str, usize> {
    let names = [
        "BouquetRepriced",
        "BouquetPastItsBest",
        "VaseAlertOpened",
        "VaseAlertClosed",
    ];
    let mut counts: BTreeMap<&'static str, usize> = names.iter().map(|n| (*n, 0)).collect();
    for event in with_prefix(&evidence.items, "OUTBOX#") {
        if let Some(count) = counts.get_mut(s(event, "eventName")) {
            *count += 1;
        }
    }
    counts
}

/// Issue 53: the shop's vase rules item of `vendor` (`None`: it set none, the defaults).
fn vase_rules<'a>(evidence: &'a Evidence, vendor: &str) -> Option<&'a Value> {
    evidence
        .items
        .iter()
        .find(|i| s(i, "pk") == format!("VENDOR#{vendor}") && s(i, "sk") == "VASE_RULES")
}

/// Issue 53: no bouquet sells above its list price, and none marked down sells under its shop's
/// floor (the rule as it stands: the soak does not change a rule once set); a marked-down
/// bouquet names the step of its shop's rule that set its price.
pub fn prices_stay_between_floor_and_list(evidence: &Evidence) -> Check {
    use bouquet_app::domain::markdown::MarkdownRule;
    use bouquet_app::domain::{Currency, Money};
    let mut violations = Vec::new();
    let bouquets: Vec<&Value> = with_prefix(&evidence.items, "BOUQUET#").collect();
    for bouquet in &bouquets {
        let id = s(bouquet, "bouquetId");
        let price = n(bouquet, "priceMinor");
        let list = bouquet["listPriceMinor"].as_i64().unwrap_or(price);
        if price > list || price <= 0 {
            violations.push(format!("bouquet {id} sells at {price}, listed at {list}"));
        }
        let Some(step) = bouquet.get("markdown") else {
            continue;
        };
        let rule: Option<MarkdownRule> = vase_rules(evidence, s(bouquet, "vendorId"))
            .and_then(|r| serde_json::from_value(r["markdown"].clone()).ok());
        let Some(rule) = rule else {
            violations.push(format!(
                "bouquet {id} is marked down by a shop with no rule"
            ));
            continue;
        };
        let Ok(currency) = Currency::parse(s(bouquet, "currency")) else {
            violations.push(format!("bouquet {id} has no currency"));
            continue;
        };
        let floor = rule.floor(Money::from_minor(list, currency)).minor();
        if price < floor {
            violations.push(format!(
                "bouquet {id} sells at {price}, under its floor {floor}"
            ));
        }
        if !rule
            .steps
            .iter()
            .any(|s| serde_json::to_value(s).ok().as_ref() == Some(step))
        {
            violations.push(format!(
                "bouquet {id} names a step {step} its shop's rule lacks"
            ));
        }
    }
    Check {
        name: "every price lies between its floor and its list price",
        checked: bouquets.len(),
        violations,
    }
}

/// Issue 53: a held or paid order's lines are what it was reserved at: they add up to the
/// total its `OrderReserved` event announced, whatever markdowns came after.
pub fn orders_keep_the_price_they_were_reserved_at(evidence: &Evidence) -> Check {
    use bouquet_app::domain::Money;
    let mut reserved_totals: HashMap<String, i64> = HashMap::new();
    for event in with_prefix(&evidence.items, "OUTBOX#") {
        if s(event, "eventName") != "OrderReserved" {
            continue;
        }
        let detail: Value =
            serde_json::from_str(event["detail"].as_str().unwrap_or("{}")).unwrap_or(Value::Null);
        let total = &detail["data"]["total"];
        if let (Some(order), Ok(money)) = (
            detail["data"]["orderId"].as_str(),
            Money::parse_amount(
                total["amount"].as_str().unwrap_or_default(),
                total["currency"].as_str().unwrap_or_default(),
            ),
        ) {
            reserved_totals.insert(order.to_owned(), money.minor());
        }
    }
    let mut violations = Vec::new();
    let mut checked = 0;
    for order in orders(evidence) {
        let id = s(order, "orderId");
        let Some(reserved) = reserved_totals.get(id) else {
            continue;
        };
        checked += 1;
        let lines = lines_total(order);
        if lines != *reserved {
            violations.push(format!(
                "order {id} ({}) holds lines of {lines}, reserved at {reserved}",
                s(order, "status")
            ));
        }
    }
    Check {
        name: "every held or paid order's lines are the prices it was reserved at",
        checked,
        violations,
    }
}

/// Issue 53: at most one open alert per vase and condition, and the vase's own list of open
/// alerts names exactly the open alert items.
pub fn one_open_alert_per_vase_and_condition(evidence: &Evidence) -> Check {
    let mut violations = Vec::new();
    let mut open: HashMap<(String, String), Vec<i64>> = HashMap::new();
    let alerts: Vec<&Value> = with_prefix(&evidence.items, "ALERT#").collect();
    for alert in &alerts {
        if alert.get("closedAt").is_none() {
            open.entry((
                s(alert, "vaseId").to_owned(),
                s(alert, "condition").to_owned(),
            ))
            .or_default()
            .push(n(alert, "openedAt"));
        }
    }
    for ((vase, condition), openings) in &open {
        if openings.len() > 1 {
            violations.push(format!(
                "vase {vase} has {} open {condition} alerts",
                openings.len()
            ));
        }
    }
    for vase in with_prefix(&evidence.items, "VASE#").filter(|i| s(i, "sk") == "VASE") {
        let id = s(vase, "vaseId");
        for listed in vase["openAlerts"].as_array().into_iter().flatten() {
            let condition = s(listed, "condition");
            let opened = bouquet_app::domain::Timestamp::parse_rfc3339(s(listed, "openedAt"))
                .map(|t| t.as_millis());
            let item = open.get(&(id.to_owned(), condition.to_owned()));
            if item.is_none_or(|at| opened.is_none_or(|o| !at.contains(&o))) {
                violations.push(format!(
                    "vase {id} lists an open {condition} alert with no open alert item"
                ));
            }
        }
    }
    Check {
        name: "at most one open alert per vase and condition, as the vase lists them",
        checked: alerts.len(),
        violations,
    }
}

/// Issue 53: every open alert's condition holds in its vase's latest reading by its shop's
/// thresholds, or it is within its clear time (`clearSince`); an `offline` alert's vase is
/// offline.
pub fn open_alerts_hold_in_the_latest_reading(evidence: &Evidence) -> Check {
    use bouquet_app::domain::care::{CareThresholds, Condition};
    use bouquet_app::domain::{Reading, Timestamp};
    let mut violations = Vec::new();
    let mut checked = 0;
    for vase in with_prefix(&evidence.items, "VASE#").filter(|i| s(i, "sk") == "VASE") {
        let id = s(vase, "vaseId");
        let thresholds: CareThresholds = vase_rules(evidence, s(vase, "vendorId"))
            .and_then(|r| serde_json::from_value(r["care"].clone()).ok())
            .unwrap_or_default();
        let latest = vase.get("latest").map(|r| Reading {
            sent_at: Timestamp::from_millis(n(r, "sentAt")),
            water_level_pct: r["waterLevelPct"].as_f64().unwrap_or_default(),
            temperature_c: r["temperatureC"].as_f64().unwrap_or_default(),
            humidity_pct: r["humidityPct"].as_f64().unwrap_or_default(),
            light_lux: r["lightLux"].as_f64().unwrap_or_default(),
        });
        for alert in vase["openAlerts"].as_array().into_iter().flatten() {
            checked += 1;
            let Some(condition) = Condition::parse(s(alert, "condition")) else {
                violations.push(format!("vase {id} lists an unknown condition {alert}"));
                continue;
            };
            if condition == Condition::Offline {
                if s(vase, "connection") != "offline" {
                    violations.push(format!(
                        "vase {id} is {} with an open offline alert",
                        s(vase, "connection")
                    ));
                }
                continue;
            }
            let Some(reading) = latest else {
                violations.push(format!(
                    "vase {id} has an open {condition} alert and no reading"
                ));
                continue;
            };
            let clearing = alert
                .get("clearSince")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse_rfc3339)
                .is_some_and(|since| {
                    reading.sent_at.as_millis() - since.as_millis()
                        < thresholds.clear_after().as_millis() as i64
                });
            if !thresholds.holds(condition, &reading) && !clearing {
                violations.push(format!(
                    "vase {id}: an open {condition} alert, but its latest reading {reading:?} clears it"
                ));
            }
        }
    }
    Check {
        name: "every open alert's condition holds in its vase's latest reading (or is clearing)",
        checked,
        violations,
    }
}

/// Issue 53: no reading outlives its retention: a raw reading expires 48 h after it was sent, a
/// bucket 30 days after it started, a closed alert 30 days after it closed (an open one never).
pub fn no_reading_outlives_its_retention(evidence: &Evidence) -> Check {
    use bouquet_app::domain::care::ALERT_RETENTION;
    use bouquet_app::domain::history::{BUCKET_RETENTION, RAW_RETENTION};
    let mut violations = Vec::new();
    let mut checked = 0;
    let seconds = |ms: i64| ms.div_euclid(1000);
    for item in with_prefix(&evidence.items, "VASE#") {
        let sk = s(item, "sk");
        let (start, retention) = if sk.starts_with("READING#") {
            (n(item, "sentAt"), RAW_RETENTION)
        } else if sk.starts_with("BUCKET#") {
            let Some(start) = item["start"]
                .as_str()
                .and_then(bouquet_app::domain::Timestamp::parse_rfc3339)
            else {
                violations.push(format!("bucket {sk} has no start"));
                continue;
            };
            (start.as_millis(), BUCKET_RETENTION)
        } else {
            continue;
        };
        checked += 1;
        let bound = seconds(start) + retention.as_secs() as i64;
        if item["expiresAt"].as_i64().is_none_or(|at| at > bound + 1) {
            violations.push(format!(
                "{} {sk} expires at {:?}, after {bound}",
                s(item, "pk"),
                item.get("expiresAt")
            ));
        }
    }
    for alert in with_prefix(&evidence.items, "ALERT#") {
        checked += 1;
        match (alert["closedAt"].as_i64(), alert["expiresAt"].as_i64()) {
            (None, None) => {}
            (Some(closed), Some(at))
                if at <= seconds(closed) + ALERT_RETENTION.as_secs() as i64 + 1 => {}
            (closed, at) => violations.push(format!(
                "alert {} closed at {closed:?} expires at {at:?}",
                s(alert, "alertId")
            )),
        }
    }
    Check {
        name: "no reading, bucket or closed alert outlives its retention",
        checked,
        violations,
    }
}

/// Issue 54: the coverage index offers each shop exactly where its delivery settings say it
/// delivers (the defaults' every country for a shop that set none), with those settings, so a
/// where-and-when catalogue never lists a shop checkout would refuse, nor misses one. A shop
/// with neither settings nor coverage predates the index and is left out.
pub fn coverage_equals_each_shops_area(evidence: &Evidence) -> Check {
    use bouquet_app::domain::delivery::DeliverySettings;
    let mut violations = Vec::new();
    let mut indexed: HashMap<String, BTreeSet<(String, String)>> = HashMap::new();
    let mut indexed_settings: HashMap<String, Vec<Value>> = HashMap::new();
    for item in with_prefix(&evidence.items, "COVERAGE#") {
        let shop = s(item, "vendorId").to_owned();
        let key = s(item, "pk").trim_start_matches("COVERAGE#");
        let (country, prefix) = key.split_once('#').unwrap_or((key, ""));
        indexed
            .entry(shop.clone())
            .or_default()
            .insert((country.to_owned(), prefix.to_owned()));
        indexed_settings
            .entry(shop)
            .or_default()
            .push(item["settings"].clone());
    }
    let shops: Vec<&Value> = with_prefix(&evidence.items, "VENDOR#")
        .filter(|i| s(i, "sk") == "VENDOR")
        .collect();
    for shop in &shops {
        let id = s(shop, "vendorId");
        let has_settings = evidence
            .items
            .iter()
            .any(|i| s(i, "pk") == format!("VENDOR#{id}") && s(i, "sk") == "DELIVERY");
        // Shops onboarded before the index (none in a soak) have neither: not indexed yet.
        if !has_settings && !indexed.contains_key(id) {
            continue;
        }
        let saved = evidence
            .items
            .iter()
            .find(|i| s(i, "pk") == format!("VENDOR#{id}") && s(i, "sk") == "DELIVERY")
            .and_then(|i| serde_json::from_value::<DeliverySettings>(i["settings"].clone()).ok());
        let settings = saved.unwrap_or_else(DeliverySettings::unset);
        let expected: BTreeSet<(String, String)> = settings.coverage().into_iter().collect();
        let found = indexed.get(id).cloned().unwrap_or_default();
        if found != expected {
            violations.push(format!(
                "shop {id} is indexed under {found:?}, delivers to {expected:?}"
            ));
        }
        let public = DeliverySettings {
            contact_email: None,
            ..settings
        };
        for copy in indexed_settings.get(id).into_iter().flatten() {
            if serde_json::from_value::<DeliverySettings>(copy.clone())
                .ok()
                .as_ref()
                != Some(&public)
            {
                violations.push(format!(
                    "shop {id}'s coverage holds other settings than its own"
                ));
                break;
            }
        }
    }
    Check {
        name: "each shop is indexed exactly where its delivery settings deliver",
        checked: shops.len(),
        violations,
    }
}
