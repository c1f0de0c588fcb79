//! The chaos soak (issue 29; `./localstack/soak.sh` starts the dev stack with faults and runs
//! this): seeded traffic for a set time while faults are injected, then the faults stop, the
//! system drains, and the auditor checks every invariant over what is left. Prints requests by
//! outcome, faults injected by kind, each invariant with its counts, and the seed; exits 1 on
//! any violation.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;

use system_tests::audit::{self, Evidence};
use system_tests::blackbox::Api;
use system_tests::soak::{self, Plan, Target};

#[derive(Parser)]
struct Args {
    /// The dev stack's name (its resources are `{stack}-...`).
    #[arg(long)]
    stack: String,
    #[arg(long)]
    api: String,
    #[arg(long)]
    ws: String,
    #[arg(long)]
    mqtt: SocketAddr,
    /// The CA the broker's certificate chains to (`$BOUQUET_IOT_DIR/ca.pem`).
    #[arg(long)]
    ca: PathBuf,
    /// The fault proxy (`GET /_faults`).
    #[arg(long)]
    faults: String,
    #[arg(long, default_value_t = 120)]
    seconds: u64,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    #[arg(long, default_value_t = 8)]
    customers: usize,
    #[arg(long, default_value_t = 2)]
    vases_per_vendor: usize,
    /// How long to wait for the system to drain after the traffic.
    #[arg(long, default_value_t = 300)]
    quiet_seconds: u64,
    /// The customers' pause between two orders, `MIN-MAX` milliseconds (`0`: none, a closed
    /// loop that measures throughput).
    #[arg(long, default_value = "50-400", value_parser = think_ms)]
    think_ms: (u64, u64),
    /// Write-heavy: the customers compete for this many of each shop's newest bouquets and
    /// write no reviews.
    #[arg(long)]
    write_heavy: Option<usize>,
    /// A season seeded into the table (`season`'s manifest): the auditor sets its shops and
    /// vases aside.
    #[arg(long)]
    season_manifest: Option<PathBuf>,
}

fn think_ms(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{text:?}: expected MIN-MAX milliseconds, or one number");
    let (low, high) = text.split_once('-').unwrap_or((text, text));
    let (low, high) = (
        low.trim().parse().map_err(|_| bad())?,
        high.trim().parse().map_err(|_| bad())?,
    );
    if low > high {
        return Err(bad());
    }
    Ok((low, high))
}

#[tokio::main]
async fn main() {
    system_tests::log_to_stderr();
    let args = Args::parse();
    match run(&args).await {
        Ok(0) => println!("soak passed: 0 violations (seed {})", args.seed),
        Ok(violations) => {
            println!(
                "soak FAILED: {violations} violation(s); replay with --seed {}",
                args.seed
            );
            std::process::exit(1);
        }
        Err(error) => {
            println!("soak could not run: {error} (seed {})", args.seed);
            std::process::exit(2);
        }
    }
}

async fn run(args: &Args) -> Result<usize, String> {
    let target = Target {
        api: args.api.clone(),
        ws: args.ws.clone(),
        mqtt: args.mqtt,
        ca_pem: std::fs::read(&args.ca).map_err(|e| format!("{}: {e}", args.ca.display()))?,
    };
    let plan = Plan {
        seed: args.seed,
        duration: Duration::from_secs(args.seconds),
        customers: args.customers,
        vendors: 2,
        bouquets_per_vendor: 6,
        vases_per_vendor: args.vases_per_vendor,
        customers_pace: system_tests::soak::Pace {
            think_ms: args.think_ms,
            hot_bouquets: args.write_heavy,
        },
    };
    let control = Api::new(&args.faults);
    let started = Instant::now();
    println!(
        "soak: {} s of traffic, seed {}, {} customers, {} vases, faults {}",
        args.seconds,
        args.seed,
        args.customers,
        2 * args.vases_per_vendor,
        control.send("GET", "/_faults", None, &[], None).await.body
    );
    let running = soak::run(&target, plan).await?;
    let traffic = started.elapsed();
    let faults = control
        .send("POST", "/_faults/off", None, &[], None)
        .await
        .body;
    // What the functions' sandboxes did during the traffic (the dev stack's report).
    let functions = Api::new(&args.api)
        .send("GET", "/local/functions", None, &[], None)
        .await
        .body;
    println!(
        "traffic done in {:.0} s; faults off; waiting for the system to drain",
        started.elapsed().as_secs_f64()
    );

    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let table = format!("{}-MarketTable", args.stack);
    let live_table = format!("{}-LiveTable", args.stack);
    let deadline = Instant::now() + Duration::from_secs(args.quiet_seconds);
    // The customers stay connected while the system drains (a payment the sweeper settles
    // now is still pushed to its customer), then leave; quiet includes their connections gone.
    let mut quiet_since = None;
    let mut settled_since: Option<Instant> = None;
    let mut running = Some(running);
    let mut journal = None;
    let mut polls = 0u32;
    let drained = loop {
        let undelivered = undelivered_disconnects(&control).await;
        let waiting = queue_depths(&sqs, &args.stack).await?;
        let items = audit::scan(&dynamodb, &table).await?;
        let live = audit::scan(&dynamodb, &live_table).await?;
        let now = audit::now_ms();
        // What drains by itself; kept and person-bound queues do not.
        let queued: u64 = waiting
            .iter()
            .filter(|(q, _)| audit::queue_policy(q) == audit::QueuePolicy::Drains)
            .map(|(_, n)| n)
            .sum();
        // Payments the gateway left unanswered, and rejections not yet refunded: the sweeper's.
        let unresolved = items
            .iter()
            .filter(|o| o["entity"] == "order")
            .filter(|o| {
                (o["status"] == "payment_pending"
                    && o["authenticatingUntil"].as_i64().unwrap_or(0) <= now)
                    || (o["status"] == "rejected" && o["refundedAt"].is_null())
            })
            .count();
        // A connection whose `$disconnect` will never arrive waits for the TTL (the auditor
        // checks it has one); only the others are waited for.
        let connections = live
            .iter()
            .filter_map(|i| i["pk"].as_str()?.strip_prefix("CONNECTION#"))
            .filter(|id| !undelivered.contains(*id))
            .count();
        // The customers leave once nothing is queued or pending for 5 s: a payment the sweeper
        // settled just now still has its event on the way to their sockets (stream, bus,
        // broadcast), which no queue depth shows.
        if queued == 0 && unresolved == 0 {
            let since = *settled_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_secs(5) {
                if let Some(running) = running.take() {
                    journal = Some(running.close().await);
                    quiet_since = None;
                    continue;
                }
            }
        } else {
            settled_since = None;
        }
        let quiet = queued == 0 && unresolved == 0 && connections == 0;
        if quiet {
            // Quiet twice, 5 s apart: nothing was merely between two hops.
            if quiet_since.is_some_and(|at: Instant| at.elapsed() >= Duration::from_secs(5)) {
                break true;
            }
            quiet_since.get_or_insert_with(Instant::now);
        } else {
            quiet_since = None;
        }
        if polls.is_multiple_of(10) {
            let busy: Vec<String> = waiting
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(q, n)| format!("{q}={n}"))
                .collect();
            eprintln!(
                "draining: queues {busy:?}, {unresolved} payments pending, {connections} connections"
            );
        }
        polls += 1;
        if Instant::now() >= deadline {
            println!(
                "not quiet after {} s: {queued} queued, {unresolved} payments pending, {connections} connections",
                args.quiet_seconds
            );
            break false;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let journal = match (journal, running) {
        (Some(journal), _) => journal,
        (None, Some(running)) => running.close().await,
        (None, None) => return Err("no journal".into()),
    };
    let journal = std::sync::Arc::try_unwrap(journal)
        .map_err(|_| "the journal is still shared".to_owned())?
        .into_inner()
        .map_err(|e| e.to_string())?;
    let mut items = audit::scan(&dynamodb, &table).await?;
    if let Some(path) = &args.season_manifest {
        let manifest: serde_json::Value = std::fs::read(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))?;
        let aside = audit::set_aside_season(&mut items, &manifest);
        println!(
            "the season's {aside} items are set aside: the auditor checks the load's own shops ({})",
            path.display()
        );
    }
    let evidence = Evidence {
        items,
        live_items: audit::scan(&dynamodb, &live_table).await?,
        queues: queue_contents(&sqs, &args.stack).await?,
        now_ms: audit::now_ms(),
        journal,
        undelivered_disconnects: undelivered_disconnects(&control).await,
    };
    println!(
        "drained: {drained} after {:.0} s in all",
        started.elapsed().as_secs_f64()
    );
    println!("requests by outcome (after the client's retries with the same key):");
    for (route, count) in &evidence.journal.outcomes {
        println!("  {route}: {count}");
    }
    println!(
        "  client retries of transient failures: {}; vase messages: {}; frames read: {}",
        evidence.journal.retries,
        evidence.journal.vase_messages,
        evidence
            .journal
            .frames
            .values()
            .map(Vec::len)
            .sum::<usize>()
    );
    print_load(&evidence.journal, traffic, &functions, &faults["emulator"]);
    println!("faults injected by kind (total {}):", faults["total"]);
    for (kind, count) in faults["injected"].as_object().into_iter().flatten() {
        println!("  {kind}: {count}");
    }
    println!(
        "kept whole, not replayed (docs/operations.md): {:?}",
        audit::kept(&evidence)
    );
    println!(
        "connections whose $disconnect AWS would never send, left to the TTL: {}",
        evidence.undelivered_disconnects.len()
    );
    println!(
        "what the vases did (issue 53): {:?}",
        audit::vase_events(&evidence)
    );
    println!("invariants:");
    let (violations, report) = audit::audit(&evidence);
    let summary = json!({
        "seed": args.seed,
        "seconds": args.seconds,
        "faults": faults,
        "requests": soak::outcomes(&evidence.journal),
        "invariants": report,
        "violations": violations,
    });
    if let Ok(path) = std::env::var("SOAK_REPORT") {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&summary).unwrap_or_default(),
        )
        .map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(violations)
}

/// The connections the dev stack will never send `$disconnect` for (`GET /_faults`).
async fn undelivered_disconnects(control: &Api) -> BTreeSet<String> {
    let report = control.send("GET", "/_faults", None, &[], None).await.body;
    report["undeliveredDisconnects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect()
}

async fn stack_queues(sqs: &aws_sdk_sqs::Client, stack: &str) -> Result<Vec<String>, String> {
    let listed = sqs
        .list_queues()
        .queue_name_prefix(format!("{stack}-"))
        .send()
        .await
        .map_err(|e| format!("listing queues: {}", bouquet_app::store::describe(&e)))?;
    Ok(listed.queue_urls().to_vec())
}

/// Messages waiting in each of the stack's queues (visible, in flight and delayed).
async fn queue_depths(
    sqs: &aws_sdk_sqs::Client,
    stack: &str,
) -> Result<BTreeMap<String, u64>, String> {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let mut depths = BTreeMap::new();
    for url in stack_queues(sqs, stack).await? {
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(|e| format!("{url}: {}", bouquet_app::store::describe(&e)))?;
        let count: u64 = attributes
            .attributes()
            .into_iter()
            .flatten()
            .filter_map(|(_, v)| v.parse::<u64>().ok())
            .sum();
        let name = url.rsplit('/').next().unwrap_or(&url).to_owned();
        depths.insert(name, count);
    }
    Ok(depths)
}

/// [`queue_depths`], with the bodies of each queue that holds something.
async fn queue_contents(
    sqs: &aws_sdk_sqs::Client,
    stack: &str,
) -> Result<BTreeMap<String, (u64, Vec<String>)>, String> {
    let depths = queue_depths(sqs, stack).await?;
    let mut contents = BTreeMap::new();
    for url in stack_queues(sqs, stack).await? {
        let name = url.rsplit('/').next().unwrap_or(&url).to_owned();
        let depth = depths.get(&name).copied().unwrap_or(0);
        let mut bodies = Vec::new();
        // Every message, each read once (hidden for ten minutes: the audit is the end).
        while (bodies.len() as u64) < depth.min(1_000) {
            let read = sqs
                .receive_message()
                .queue_url(&url)
                .max_number_of_messages(10)
                .visibility_timeout(600)
                .send()
                .await
                .map_err(|e| format!("{url}: {}", bouquet_app::store::describe(&e)))?;
            if read.messages().is_empty() {
                break;
            }
            bodies.extend(
                read.messages()
                    .iter()
                    .filter_map(|m| m.body().map(str::to_owned)),
            );
        }
        contents.insert(name, (depth, bodies));
    }
    Ok(contents)
}

/// The traffic as a load: requests a second, each route's p50 and p99 at the client, and
/// where the functions' time went: waiting for a sandbox, the function's own time, and of
/// that the emulator's (the calls the fault proxy forwarded).
fn print_load(
    journal: &soak::Journal,
    traffic: Duration,
    functions: &serde_json::Value,
    emulator: &serde_json::Value,
) {
    let requests: usize = journal.latency_ms.values().map(Vec::len).sum();
    println!(
        "load: {requests} requests in {:.0} s of traffic (setup included): {:.1} a second",
        traffic.as_secs_f64(),
        requests as f64 / traffic.as_secs_f64().max(1.0)
    );
    println!("  route: answers, p50 ms, p99 ms (at the client)");
    for (route, samples) in &journal.latency_ms {
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        println!(
            "  {route}: {}, {:.0}, {:.0}",
            sorted.len(),
            at(0.5),
            at(0.99)
        );
    }
    let (mut waited, mut worked) = (0.0, 0.0);
    println!("  function: invocations, cold starts, throttles, peak sandboxes, wait p50/p99 ms, duration p50/p99 ms");
    for (name, f) in functions.as_object().into_iter().flatten() {
        if f["invocations"].as_u64().unwrap_or(0) == 0 && f["throttles"].as_u64().unwrap_or(0) == 0
        {
            continue;
        }
        waited += f["waitMs"]["total"].as_f64().unwrap_or(0.0);
        worked += f["durationMs"]["total"].as_f64().unwrap_or(0.0);
        println!(
            "  {name}: {}, {}, {}, {}, {:.0}/{:.0}, {:.0}/{:.0}",
            f["invocations"],
            f["coldStarts"],
            f["throttles"],
            f["peakConcurrency"],
            f["waitMs"]["p50"].as_f64().unwrap_or(0.0),
            f["waitMs"]["p99"].as_f64().unwrap_or(0.0),
            f["durationMs"]["p50"].as_f64().unwrap_or(0.0),
            f["durationMs"]["p99"].as_f64().unwrap_or(0.0),
        );
    }
    let emulator_ms = emulator["totalMs"].as_f64().unwrap_or(0.0);
    let all = (waited + worked).max(1.0);
    println!(
        "  where the functions' time went: waiting for a sandbox {:.0} s ({:.0}%), the functions {:.0} s ({:.0}%), of which the emulator {:.0} s over {} calls ({:.0}% of all)",
        waited / 1000.0,
        100.0 * waited / all,
        worked / 1000.0,
        100.0 * worked / all,
        emulator_ms / 1000.0,
        emulator["calls"],
        100.0 * emulator_ms / all
    );
    // The local services' share by engine: what a faster engine could still win.
    if let Some(engines) = emulator["byEngine"].as_object() {
        for (engine, time) in engines {
            let ms = time["totalMs"].as_f64().unwrap_or(0.0);
            let calls = time["calls"].as_f64().unwrap_or(0.0).max(1.0);
            println!(
                "    {engine}: {:.0} s over {} calls ({:.1} ms a call, {:.0}% of the functions' time)",
                ms / 1000.0,
                time["calls"],
                ms / calls,
                100.0 * ms / all
            );
        }
    }
}
