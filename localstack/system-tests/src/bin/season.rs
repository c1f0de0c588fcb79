//! Seeds a season of trading into a running dev stack's table (issue 50;
//! [`system_tests::season`]) and prints what the catalogue's first page costs at the origin
//! before and after, side by side:
//!
//!   season --stack NAME --api http://127.0.0.1:3000 [--seed 50] [--scale 1.0]
//!          [--manifest localstack/.run/NAME-season.json]
//!
//! `--scale 1` is issue 50's season (200 shops, 5,000 bouquets on sale, 50,000 orders, 10,000
//! reviews, 2,000 vases with 48 hourly readings each); `--scale 0.1` a tenth of each. The
//! manifest names the season's shops and vases, which the soak's auditor sets aside
//! (`soak --season-manifest`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use bouquet_app::domain::clock::{Clock, SystemClock};
use bouquet_app::store::Store;
use system_tests::blackbox::Api;
use system_tests::season::{Season, SeasonSize};

#[derive(Parser)]
struct Args {
    /// The dev stack's name (its table is `{stack}-MarketTable`).
    #[arg(long)]
    stack: String,
    /// The dev stack's API, for the catalogue's figures.
    #[arg(long)]
    api: String,
    #[arg(long, default_value_t = 50)]
    seed: u64,
    /// The season's size against issue 50's.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Where to write the season's shops and vases (default `localstack/.run/{stack}-season.json`).
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// Requests per order of the catalogue, before and after.
    #[arg(long, default_value_t = 40)]
    probes: usize,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(error) = run(&args).await {
        eprintln!("season: {error}");
        std::process::exit(1);
    }
}

async fn run(args: &Args) -> Result<(), String> {
    let scaled = |n: usize| ((n as f64 * args.scale).round() as usize).max(1);
    let full = SeasonSize::ISSUE_50;
    let size = SeasonSize {
        shops: scaled(full.shops),
        bouquets_on_sale: scaled(full.bouquets_on_sale),
        orders: scaled(full.orders),
        reviews: scaled(full.reviews),
        vases: scaled(full.vases),
        readings_per_vase: full.readings_per_vase,
    };
    let api = Api::new(&args.api);
    let before = probe(&api, args.probes).await?;

    let started = Instant::now();
    let season = Season::generate(size, args.seed, SystemClock.now());
    let decided = started.elapsed();
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let table = format!("{}-MarketTable", args.stack);
    let store = Store::new(aws_sdk_dynamodb::Client::new(&sdk), &table);
    let history = season.history();
    let written = store
        .import(&history)
        .await
        .map_err(|e| format!("import into {table}: {e}"))?;
    let manifest = args.manifest.clone().unwrap_or_else(|| {
        system_tests::repository_root()
            .join("localstack/.run")
            .join(format!("{}-season.json", args.stack))
    });
    std::fs::write(&manifest, season.manifest().to_string())
        .map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut by_state: Vec<_> = season.orders_by_state().into_iter().collect();
    by_state.sort_by_key(|(state, _)| format!("{state:?}"));
    println!(
        "season (seed {}): {} shops, {} bouquets ({} on sale), {} orders {:?}, {} reviews, {} vases, {} readings",
        args.seed,
        season.vendors.len(),
        season.bouquets.len(),
        size.bouquets_on_sale,
        season.orders.len(),
        by_state,
        season.reviews.len(),
        season.vases.len(),
        season.readings.len(),
    );
    println!(
        "written: {written} items into {table} in {:.1} s (decided in {:.1} s); manifest {}",
        (started.elapsed() - decided).as_secs_f64(),
        decided.as_secs_f64(),
        manifest.display()
    );

    let after = probe(&api, args.probes).await?;
    println!("the catalogue's first page at the origin (edge cache missed), ms:");
    println!("  order: p50 / p99 on the table before, p50 / p99 with the season");
    for ((order, was), (_, now)) in before.iter().zip(&after) {
        println!(
            "  {order}: {:.1} / {:.1}, {:.1} / {:.1}",
            percentile(was, 50),
            percentile(was, 99),
            percentile(now, 50),
            percentile(now, 99)
        );
    }
    Ok(())
}

/// The catalogue's orders.
const SORTS: [&str; 5] = ["newest", "freshness", "price", "-price", "rating"];

/// `probes` first pages of each order, each a different `limit` (so the edge cache misses
/// and the origin answers); each request's time at the client, in ms.
async fn probe(api: &Api, probes: usize) -> Result<Vec<(&'static str, Vec<f64>)>, String> {
    let mut figures = Vec::new();
    // A run's keys differ from the last run's: the first page's limit moves by the clock.
    let offset = (SystemClock.now().as_millis() / 1000 % 17) as usize;
    for sort in SORTS {
        let mut times = Vec::new();
        for n in 0..probes {
            let limit = 10 + (n + offset) % 40;
            let path = format!("/v1/bouquets?sort={sort}&limit={limit}");
            let started = Instant::now();
            let answer = api.send("GET", &path, None, &[], None).await;
            let took = started.elapsed();
            if answer.status != 200 {
                return Err(format!("GET {path}: {} {}", answer.status, answer.body));
            }
            if answer
                .cache
                .as_deref()
                .is_some_and(|c| c.starts_with("Hit"))
            {
                continue;
            }
            times.push(took.as_secs_f64() * 1000.0);
        }
        figures.push((sort, times));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(figures)
}

fn percentile(values: &[f64], p: usize) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) * p) / 100]
}
