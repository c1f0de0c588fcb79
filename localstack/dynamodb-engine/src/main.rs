//! The local cloud's DynamoDB: the dynoxide engine (SQLite underneath) on DynamoDB's JSON
//! protocol, both `DynamoDB_20120810` and `DynamoDBStreams_20120810` on one port, so the SDKs
//! reach it through `AWS_ENDPOINT_URL_DYNAMODB` and `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`
//! (docs/local-cloud.md). The rest of the local cloud (SQS, EventBridge, S3, IoT, Cognito,
//! SES, SSM) stays on moto.
//!
//! Two things are added to the engine, each where it falls short of DynamoDB (docs/local-cloud.md):
//!
//! - **Stream records indexed.** dynoxide keeps every table's stream records in one SQLite table
//!   without an index: each write asked for the stream's last sequence number by reading all of
//!   them, and each `GetRecords` scanned them, so a 30-minute soak slowed from a 4 ms median
//!   request to 600 ms. Two indexes on (table, [shard,] sequence number as an integer), made
//!   before serving, turn both into index searches (SQLite's own min/max optimisation).
//!   That needs a database file (in memory, the engine's connection is the only one): a fresh
//!   one under the temporary directory unless `--file` names one, removed at exit.
//! - **TTL.** The engine deletes expired items only when asked; DynamoDB's TTL deletes them in the
//!   background (AWS documents "within a few days", typically minutes), with a stream record
//!   whose identity is the DynamoDB service. A sweep every `--ttl-sweep-seconds` plays that part
//!   when asked for.

use std::path::{Path, PathBuf};
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
    /// A SQLite file that keeps the tables across restarts; a fresh temporary one, removed at
    /// exit, when absent.
    #[arg(long, env = "BOUQUET_DYNAMODB_FILE")]
    file: Option<PathBuf>,
    /// Seconds between two sweeps of expired items (0, the default: never). Off by default:
    /// the tests run their clocks in the past (2026-12-02), so every item they give a TTL has
    /// expired by the wall clock a sweep reads, and the code never relies on TTL.
    #[arg(long, default_value_t = 0)]
    ttl_sweep_seconds: u64,
}

/// The stream-record indexes dynoxide 3.2 does not make (the module's doc).
const STREAM_RECORD_INDEXES: &str = "
    CREATE INDEX IF NOT EXISTS bouquet_stream_records_by_sequence
        ON _stream_records (table_name, CAST(sequence_number AS INTEGER));
    CREATE INDEX IF NOT EXISTS bouquet_stream_records_by_shard_sequence
        ON _stream_records (table_name, shard_id, CAST(sequence_number AS INTEGER));";

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let (path, temporary) = match &args.file {
        Some(path) => (path.clone(), false),
        None => {
            // RAM-backed where the machine has it: nothing of a local run needs to reach a disk.
            let dir = ["/dev/shm"]
                .iter()
                .map(PathBuf::from)
                .find(|d| d.is_dir())
                .unwrap_or_else(std::env::temp_dir);
            let path = dir.join(format!("bouquet-dynamodb-{}.sqlite", std::process::id()));
            remove_database(&path);
            (path, true)
        }
    };
    let db = Database::new(&path.to_string_lossy())
        .map_err(|e| format!("opening the DynamoDB engine on {}: {e}", path.display()))?;
    rusqlite::Connection::open(&path)
        .and_then(|c| c.execute_batch(STREAM_RECORD_INDEXES))
        .map_err(|e| format!("indexing the stream records of {}: {e}", path.display()))?;
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
    let served = dynoxide::server::start(&args.host, args.port, db).await;
    if temporary {
        remove_database(&path);
    }
    served
}

/// A database file and SQLite's companions (write-ahead log, shared memory).
fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
