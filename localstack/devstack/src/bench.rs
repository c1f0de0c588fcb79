//! `devstack bench`: cold start, warm latency, memory and size of the real function
//! binaries, each run as a process under a local Lambda Runtime API against the emulator.
//! It prints a table; the README's performance section quotes it with this command.

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
    pub env: Vec<(String, String)>,
}

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
    let mut report = String::from("| function | binary | init (cold) p50 / max ms | first request ms | warm p50 / p90 / p99 ms | peak RSS MiB |\n|---|---|---|---|---|---|\n");
    for function in ["get-bouquet", "list-bouquets", "create-order"] {
        let binary = options.binaries.join(function);
        let size = std::fs::metadata(&binary).map_err(DevError::Io)?.len();
        let mut make_event = |i: usize| match function {
            "get-bouquet" => event(
                "GET",
                "/v1/bouquets/{bouquetId}",
                &format!("/v1/bouquets/{}", bouquets[0]),
                json!({ "bouquetId": bouquets[0] }),
                None,
                None,
            ),
            "list-bouquets" => event(
                "GET",
                "/v1/bouquets",
                "/v1/bouquets",
                Value::Null,
                None,
                None,
            ),
            _ => event(
                "POST",
                "/v1/orders",
                "/v1/orders",
                Value::Null,
                Some(customer(i)),
                Some(json!({ "bouquetIds": [next_bouquet.next().cloned()] })),
            ),
        };
        let mut inits = Vec::new();
        let mut firsts = Vec::new();
        for run in 0..options.cold_runs {
            let process = FunctionProcess::spawn(&binary, function, &options.env)
                .await
                .map_err(DevError::from)?;
            inits.push(
                process
                    .init_duration(Duration::from_secs(20))
                    .await
                    .ok_or("the function did not start")?,
            );
            let started = Instant::now();
            let answer = process
                .api
                .invoke(make_event(run), Duration::from_secs(10))
                .await
                .map_err(DevError::from)?;
            firsts.push(started.elapsed());
            if answer["statusCode"].as_u64().is_none_or(|s| s >= 500) {
                return Err(DevError::Unexpected(format!(
                    "{function} answered {answer}"
                )));
            }
            process.stop().await;
        }
        let process = FunctionProcess::spawn(&binary, function, &options.env)
            .await
            .map_err(DevError::from)?;
        process
            .init_duration(Duration::from_secs(20))
            .await
            .ok_or("the function did not start")?;
        process
            .api
            .invoke(make_event(usize::MAX), Duration::from_secs(10))
            .await
            .map_err(DevError::from)?;
        let mut warm = Vec::new();
        for i in 0..options.warm_invocations {
            let event = make_event(options.cold_runs + i);
            let started = Instant::now();
            process
                .api
                .invoke(event, Duration::from_secs(10))
                .await
                .map_err(DevError::from)?;
            warm.push(started.elapsed());
        }
        let rss = process.peak_rss_kib().unwrap_or(0);
        process.stop().await;
        inits.sort();
        firsts.sort();
        warm.sort();
        report.push_str(&format!(
            "| {function} | {:.1} MiB | {} / {} | {} | {} / {} / {} | {:.1} |\n",
            size as f64 / 1_048_576.0,
            ms(percentile(&inits, 0.5)),
            ms(*inits.last().unwrap_or(&Duration::ZERO)),
            ms(percentile(&firsts, 0.5)),
            ms(percentile(&warm, 0.5)),
            ms(percentile(&warm, 0.9)),
            ms(percentile(&warm, 0.99)),
            rss as f64 / 1024.0,
        ));
    }
    Ok(report)
}

/// The first use of aws-lc's random generator in this process, the cost that CPU jitter
/// entropy adds to a cold start unless the build sets `AWS_LC_SYS_NO_JITTER_ENTROPY=1`.
pub fn first_random_fill() -> Duration {
    let started = Instant::now();
    let mut bytes = [0u8; 32];
    let _ = aws_lc_rs::rand::fill(&mut bytes);
    started.elapsed()
}
