//! `devstack bench`: cold start, warm latency, memory and size of the real function
//! binaries, each run as a process under a local Lambda Runtime API against the emulator.
//! It prints a table; docs/performance.md quotes it with this command.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::lambda::Functions;
use bouquet_template::Template;

use crate::runtime_api::FunctionProcess;
use crate::server::LocalApi;

use crate::error::DevError;

pub struct BenchOptions<'a> {
    pub binaries: &'a Path,
    pub cold_runs: usize,
    pub warm_invocations: usize,
    /// A binary's environment: its function's variables from the template, resolved, plus the
    /// SDK's settings (the TLS endpoint, the trust store, credentials).
    pub environment: &'a dyn Fn(&str) -> Vec<(String, String)>,
}

/// The baseline every figure is divided by, built in the same run (`localstack/hello-world`).
pub const HELLO_WORLD: &str = "hello-world";

/// The pause before each cold start (see the cold-start loop).
const SETTLE: Duration = Duration::from_millis(100);

/// The binaries whose requests are measured beside the hello world: a read by key, a query,
/// and the reservation transaction.
const REQUESTS: [&str; 4] = [HELLO_WORLD, "get-bouquet", "list-bouquets", "create-order"];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// API Gateway v2 events for the benchmarked routes.
fn event(
    method: &str,
    route: &str,
    path: &str,
    params: Value,
    claims: Option<Value>,
    body: Option<Value>,
) -> Value {
    let mut context = json!({
        "accountId": "123456789012", "apiId": "bench", "domainName": "bench.local", "domainPrefix": "bench",
        "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "bench" },
        "requestId": ulid::Ulid::new().to_string(), "routeKey": format!("{method} {route}"), "stage": "$default",
        "time": "02/Dec/2026:16:16:51 +0000", "timeEpoch": 0,
    });
    if let Some(claims) = claims {
        context["authorizer"] = json!({ "jwt": { "claims": claims, "scopes": null } });
    }
    let mut event = json!({
        "version": "2.0", "routeKey": format!("{method} {route}"), "rawPath": path, "rawQueryString": "",
        "headers": { "content-type": "application/json" }, "requestContext": context, "isBase64Encoded": false,
    });
    if !params.is_null() {
        event["pathParameters"] = params;
    }
    if let Some(body) = body {
        event["body"] = json!(body.to_string());
    }
    event
}

/// Seeds through the HTTP API (the functions in `functions`), then measures.
pub async fn run(
    functions: &Functions,
    template: &Template,
    options: BenchOptions<'_>,
) -> Result<String, DevError> {
    let secret = "bench-secret";
    let api = LocalApi::from_template(
        template,
        functions,
        std::sync::Arc::new(crate::jwt::verifier(secret, None)),
    )?;
    let admin =
        crate::jwt::mint(secret, "admin", "bench-admin", None, 3600).map_err(DevError::from)?;
    let vendor = crate::seed::post(
        &api,
        &admin,
        "/v1/vendors",
        "bench-vendor",
        json!({ "name": "Bench" }),
    )
    .await?;
    let vendor_id = vendor["vendorId"]
        .as_str()
        .ok_or("seeding failed")?
        .to_owned();
    let seller = crate::jwt::mint(secret, "vendor", "bench-seller", Some(&vendor_id), 3600)
        .map_err(DevError::from)?;
    crate::seed::onboard_payouts(&api, &seller, &vendor_id).await?;
    let needed = options.cold_runs + options.warm_invocations + 1;
    let mut bouquets = Vec::with_capacity(needed);
    for i in 0..needed {
        let path = format!("/v1/vendors/{vendor_id}/bouquets");
        let body =
            json!({ "name": format!("B{i}"), "price": { "amount": "10.00", "currency": "EUR" } });
        let b =
            crate::seed::post(&api, &seller, &path, &format!("bench-bouquet-{i}"), body).await?;
        bouquets.push(b["bouquetId"].as_str().ok_or("seeding failed")?.to_owned());
    }
    let customer = |i: usize| json!({ "sub": format!("bench-{i}"), "role": "customer" });
    let mut next_bouquet = bouquets.iter().cycle();
    let mut make_event = |function: &str, i: usize| match function {
        "list-bouquets" => event(
            "GET",
            "/v1/bouquets",
            "/v1/bouquets",
            Value::Null,
            None,
            None,
        ),
        "create-order" => event(
            "POST",
            "/v1/orders",
            "/v1/orders",
            Value::Null,
            Some(customer(i)),
            Some(json!({ "bouquetIds": [next_bouquet.next().cloned()] })),
        ),
        // get-bouquet, and the hello world (which ignores its event).
        _ => event(
            "GET",
            "/v1/bouquets/{bouquetId}",
            &format!("/v1/bouquets/{}", bouquets[0]),
            json!({ "bouquetId": bouquets[0] }),
            None,
            None,
        ),
    };

    let mut binaries: Vec<String> = template
        .http_routes()?
        .into_iter()
        .map(|route| route.binary)
        .collect();
    binaries.sort();
    binaries.dedup();
    binaries.insert(0, HELLO_WORLD.to_owned());

    // Cold starts, interleaved: every binary once per round, so the machine's noise falls on
    // all of them alike. Each round starts one place further along, so no binary always
    // follows the same one, and each start waits for the machine to settle after the last
    // process: on two cores the emulator's work for a heavy first request (list-bouquets)
    // otherwise landed on the next binary's init, always list-orders.
    let mut inits: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    let mut firsts: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    for run in 0..options.cold_runs {
        for index in (0..binaries.len()).map(|k| (k + run) % binaries.len()) {
            let binary = &binaries[index];
            tokio::time::sleep(SETTLE).await;
            let process = spawn(&options, binary).await?;
            inits[index].push(
                process
                    .init_duration(Duration::from_secs(20))
                    .await
                    .ok_or_else(|| DevError::Unexpected(format!("{binary} did not start")))?,
            );
            if REQUESTS.contains(&binary.as_str()) {
                let started = Instant::now();
                let answer = process
                    .api
                    .invoke(make_event(binary, run), Duration::from_secs(10))
                    .await
                    .map_err(DevError::from)?;
                firsts[index].push(started.elapsed());
                succeeded(binary, &answer)?;
            }
            process.stop().await;
        }
    }

    let hello_init = median(&mut inits[0]);
    let mut report = format!(
        "Cold start: init is spawn to the first poll of the Runtime API, {} runs each, \
         interleaved; zipped is deflate -9 (gzip), as in a deployment zip.\n\n\
         | binary | size MiB | zipped MiB | init p50 ms | init max ms | init / hello world |\n\
         |---|---|---|---|---|---|\n",
        options.cold_runs
    );
    let mut worst = (0.0f64, String::new());
    for (index, binary) in binaries.iter().enumerate() {
        let path = options.binaries.join(binary);
        let size = std::fs::metadata(&path).map_err(DevError::Io)?.len();
        let init = median(&mut inits[index]);
        let ratio = init.as_secs_f64() / hello_init.as_secs_f64();
        if index > 0 && ratio > worst.0 {
            worst = (ratio, binary.clone());
        }
        report.push_str(&format!(
            "| {binary} | {:.2} | {:.2} | {} | {} | {ratio:.2}x |\n",
            mib(size),
            mib(deflated_size(&path)?),
            ms(init),
            ms(*inits[index].last().unwrap_or(&Duration::ZERO)),
        ));
    }
    report.push_str(&format!(
        "\nSlowest HTTP function to start: {} at {:.2}x the hello world's init ({} ms).\n\n",
        worst.1,
        worst.0,
        ms(hello_init)
    ));

    report.push_str(&format!(
        "Requests: the first request of a fresh process (a TLS handshake with the endpoint in \
         front of the emulator, then the function's calls), p50 of {} processes; warm: {} \
         invocations in one process.\n\n\
         | binary | first request p50 ms | first / hello world | warm p50 / p90 / p99 ms | peak RSS MiB | RSS / hello world |\n\
         |---|---|---|---|---|---|\n",
        options.cold_runs, options.warm_invocations
    ));
    let hello_first = median(&mut firsts[0]);
    let mut hello_rss = 0.0;
    for binary in REQUESTS {
        let index = binaries
            .iter()
            .position(|b| b == binary)
            .ok_or_else(|| DevError::Unexpected(format!("{binary} is not a route's function")))?;
        let process = spawn(&options, binary).await?;
        process
            .init_duration(Duration::from_secs(20))
            .await
            .ok_or_else(|| DevError::Unexpected(format!("{binary} did not start")))?;
        let first = process
            .api
            .invoke(make_event(binary, usize::MAX), Duration::from_secs(10))
            .await
            .map_err(DevError::from)?;
        succeeded(binary, &first)?;
        let mut warm = Vec::with_capacity(options.warm_invocations);
        for i in 0..options.warm_invocations {
            let event = make_event(binary, options.cold_runs + i);
            let started = Instant::now();
            let answer = process
                .api
                .invoke(event, Duration::from_secs(10))
                .await
                .map_err(DevError::from)?;
            warm.push(started.elapsed());
            succeeded(binary, &answer)?;
        }
        let rss = process.peak_rss_kib().unwrap_or(0) as f64 / 1024.0;
        process.stop().await;
        if binary == HELLO_WORLD {
            hello_rss = rss;
        }
        warm.sort();
        let first = median(&mut firsts[index]);
        report.push_str(&format!(
            "| {binary} | {} | {:.2}x | {} / {} / {} | {rss:.1} | {:.2}x |\n",
            ms(first),
            first.as_secs_f64() / hello_first.as_secs_f64(),
            ms(percentile(&warm, 0.5)),
            ms(percentile(&warm, 0.9)),
            ms(percentile(&warm, 0.99)),
            rss / hello_rss,
        ));
    }
    Ok(report)
}

async fn spawn(options: &BenchOptions<'_>, binary: &str) -> Result<FunctionProcess, DevError> {
    FunctionProcess::spawn_logging_to(
        &options.binaries.join(binary),
        binary,
        &(options.environment)(binary),
        std::process::Stdio::null(),
    )
    .await
    .map_err(DevError::from)
}

fn succeeded(binary: &str, answer: &Value) -> Result<(), DevError> {
    match answer["statusCode"].as_u64() {
        Some(status) if status < 500 => Ok(()),
        _ => Err(DevError::Unexpected(format!("{binary} answered {answer}"))),
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    percentile(samples, 0.5)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// The binary's size deflated at level 9 (`gzip -9`), what a zip of it weighs within bytes.
fn deflated_size(path: &Path) -> Result<u64, DevError> {
    let output = std::process::Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .map_err(DevError::Io)?;
    if !output.status.success() {
        return Err(DevError::Unexpected(format!(
            "gzip failed on {}",
            path.display()
        )));
    }
    Ok(output.stdout.len() as u64)
}

/// How long the first build of each SDK client takes in a fresh process, built as the
/// functions build them (`bouquet_aws::client!` on the Lambda-environment configuration), in
/// a function's order: DynamoDB at init, then the IoT and Cognito clients that
/// `bouquet_aws::lazy_client!` defers to the first request that needs them. Call it before
/// anything else in the process builds a client.
pub fn first_client_builds() -> Result<Vec<(&'static str, Duration)>, DevError> {
    let sdk = bouquet_aws::aws_sdk_config().map_err(|e| DevError::Unexpected(e.to_string()))?;
    let mut builds = Vec::new();
    let started = Instant::now();
    let _dynamodb = bouquet_aws::client!(aws_sdk_dynamodb, &sdk);
    builds.push(("DynamoDB (at init)", started.elapsed()));
    let started = Instant::now();
    let _iot = bouquet_aws::client!(aws_sdk_iot, &sdk);
    builds.push(("IoT (lazy, at its first call)", started.elapsed()));
    let started = Instant::now();
    let _cognito = bouquet_aws::client!(aws_sdk_cognitoidentityprovider, &sdk);
    builds.push(("Cognito (lazy, at its first call)", started.elapsed()));
    Ok(builds)
}

/// The first use of aws-lc's random generator in this process, the cost that CPU jitter
/// entropy adds to a cold start unless the build sets `AWS_LC_SYS_NO_JITTER_ENTROPY=1`.
pub fn first_random_fill() -> Duration {
    let started = Instant::now();
    let mut bytes = [0u8; 32];
    let _ = aws_lc_rs::rand::fill(&mut bytes);
    started.elapsed()
}
