//! The local cloud's DynamoDB: the dynoxide engine (SQLite underneath) on DynamoDB's JSON
//! protocol, both `DynamoDB_20120810` and `DynamoDBStreams_20120810` on one port, so the SDKs
//! reach it through `AWS_ENDPOINT_URL_DYNAMODB` and `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`
//! (docs/local-cloud.md). The rest of the local cloud (SQS, EventBridge, S3, IoT, Cognito,
//! SES, SSM) stays on moto.
//!
//! The engine deletes expired items only when asked; DynamoDB's TTL deletes them in the
//! background (AWS documents "within a few days", typically minutes), with a stream record
//! whose identity is the DynamoDB service. A sweep every `--ttl-sweep-seconds` plays that part.

use std::time::Duration;

use clap::Parser;
use dynoxide::Database;

#[derive(Parser)]
#[command(about = "DynamoDB and DynamoDB Streams for the local cloud (dynoxide on SQLite)")]
struct Args {
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 4567)]
    port: u16,
    /// A SQLite file to keep the tables in across restarts; in memory when absent.
    #[arg(long, env = "BOUQUET_DYNAMODB_FILE")]
    file: Option<String>,
    /// Seconds between two sweeps of expired items (0: never).
    #[arg(long, default_value_t = 30)]
    ttl_sweep_seconds: u64,
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let db = match &args.file {
        Some(path) => Database::new(path),
        None => Database::memory(),
    }
    .map_err(|e| format!("opening the DynamoDB engine: {e}"))?;
    if args.ttl_sweep_seconds > 0 {
        let sweeper = db.clone();
        let every = Duration::from_secs(args.ttl_sweep_seconds);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let db = sweeper.clone();
                // The sweep holds the engine's lock a page at a time: off the server's threads.
                match tokio::task::spawn_blocking(move || db.sweep_ttl()).await {
                    Ok(Ok(0)) => {}
                    Ok(Ok(deleted)) => eprintln!("ttl sweep: {deleted} expired items deleted"),
                    Ok(Err(e)) => eprintln!("ttl sweep failed: {e}"),
                    Err(e) => eprintln!("ttl sweep panicked: {e}"),
                }
            }
        });
    }
    dynoxide::server::start(&args.host, args.port, db).await
}
