//! `devstack`: the local cloud's command line. See `localstack/run.sh` for the usual entry.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use bouquet_app::domain::SystemClock;
use bouquet_app::store::Store;
use bouquet_app::{App, Config};
use bouquet_template::Template;
use devstack::error::DevError;
use devstack::lambda::{default_binaries_dir, Functions};
use devstack::sandboxes::Scaling;
use devstack::{jwt, provision, seed, server::LocalApi};

#[derive(Parser)]
#[command(about = "The bouquet marketplace's local cloud")]
struct Cli {
    /// Prefix of local resource names.
    #[arg(long, default_value = "bouquet-local", global = true)]
    stack: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Provision the template's resources, seed demo data and serve the HTTP API.
    Up {
        #[arg(long, env = "DEVSTACK_PORT", default_value_t = 3000)]
        port: u16,
        /// Skip the demo vendor and bouquets.
        #[arg(long)]
        no_seed: bool,
        /// Run schedules this many times faster (e.g. 60: a minutely sweeper every second).
        #[arg(long, default_value_t = 1)]
        schedule_speedup: u32,
        /// The MQTT broker's port (IoT Core's part: Mosquitto, TLS with the vase's
        /// certificate). Not 1883: Debian's own mosquitto service may listen there.
        #[arg(long, env = "DEVSTACK_MQTT_PORT", default_value_t = 8883)]
        mqtt_port: u16,
        /// The WebSocket API's port (live updates and its @connections endpoint).
        #[arg(long, env = "DEVSTACK_WS_PORT", default_value_t = 3001)]
        ws_port: u16,
        /// Close a WebSocket connection after this many seconds without a client frame.
        #[arg(long, default_value_t = 600)]
        ws_idle_seconds: u64,
        /// Close a WebSocket connection after this many seconds in all.
        #[arg(long, default_value_t = 7200)]
        ws_max_age_seconds: u64,
        /// Inject AWS-shaped faults at this rate (`rate=0.05,seed=7`): the functions reach
        /// the emulator through a proxy that fails their calls, processes are killed
        /// mid-invocation, batches delivered twice (`devstack::faults`).
        #[arg(long, env = "DEVSTACK_FAULTS")]
        faults: Option<String>,
        /// The fault proxy's port (`GET /_faults` reports, `POST /_faults/off` stops them).
        #[arg(long, default_value_t = 0)]
        faults_port: u16,
        /// Template parameters as a deployment would override them (`Name=Value`, repeated):
        /// a load from one address raises `EdgeRequestsPerIpPerMinute`, as a load test on AWS
        /// would.
        #[arg(long = "parameter-override")]
        parameter_overrides: Vec<String>,
        /// Sandboxes of all functions at once (Lambda's account concurrency): past it, an
        /// invocation is throttled as Lambda throttles.
        #[arg(long, env = "DEVSTACK_CONCURRENCY", default_value_t = Scaling::default().account_concurrency)]
        concurrency: usize,
        /// How long an idle sandbox is kept warm before it is retired.
        #[arg(long, default_value_t = Scaling::default().idle_lifetime.as_secs())]
        sandbox_idle_seconds: u64,
    },
    /// Create the template's resources on AWS_ENDPOINT_URL (idempotent).
    Provision,
    /// Measure the real function binaries: init, first request, warm latency, memory, size.
    Bench {
        /// Where the built binaries are, the hello world's among them (`./localstack/bench.sh`
        /// builds them all in one run and calls this).
        #[arg(long, default_value = "target/release")]
        binaries: std::path::PathBuf,
        #[arg(long, default_value_t = 10)]
        cold_runs: usize,
        #[arg(long, default_value_t = 200)]
        warm_invocations: usize,
    },
    /// Measure vase messages per second through MQTT, the topic rules, SQS and ingest.
    BenchVases {
        #[arg(long, default_value_t = 20)]
        vases: usize,
        #[arg(long, default_value_t = 2000)]
        messages: usize,
    },
    /// Invoke a function of the template once with a JSON payload (its built binary, on this
    /// stack's resources), e.g. `devstack invoke redrive-outbox` after a bus outage.
    Invoke {
        binary: String,
        #[arg(default_value = "{}")]
        payload: String,
    },
    /// Subscribe to live-update channels on the WebSocket API and print what is pushed,
    /// e.g. `devstack watch --channel bouquet:<id>` (add `--token` for `orders` or
    /// `vendor:<id>`).
    Watch {
        #[arg(long = "channel", required = true)]
        channels: Vec<String>,
        #[arg(long)]
        token: Option<String>,
        #[arg(long, default_value = "ws://127.0.0.1:3001")]
        url: String,
    },
    /// Print a bearer token the local authorizer accepts.
    Token {
        #[arg(long, value_parser = ["customer", "vendor", "admin"])]
        role: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        vendor_id: Option<String>,
        /// An address the token carries as verified: the only one mail for this user goes to.
        #[arg(long)]
        email: Option<String>,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: i64,
    },
}

/// Provisions every resource of the template the emulator serves; the app on its table.
async fn provision_all(
    template: &Template,
    stack: &str,
) -> Result<(App, provision::Names, aws_config::SdkConfig), DevError> {
    // A tool, not a function: the SDK's general provider chain (a profile works too).
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let names = provision::provision_resources(template, stack, &sdk).await?;
    let table = names
        .get("MarketTable")
        .cloned()
        .ok_or("template.yaml has no MarketTable")?;
    eprintln!(
        "provisioned {} resources for stack {stack}: table {table}",
        names.keys().filter(|k| !k.contains('.')).count()
    );
    let mut store = Store::new(aws_sdk_dynamodb::Client::new(&sdk), table);
    if let Some(live) = names.get("LiveTable") {
        store = store.with_live_table(live.clone());
    }
    Ok((
        App::new(store, Arc::new(SystemClock), Config::from_env()?),
        names,
        sdk,
    ))
}

#[tokio::main]
async fn main() -> Result<(), DevError> {
    tracing_init();
    let cli = Cli::parse();
    match cli.command {
        Command::Token {
            role,
            sub,
            vendor_id,
            email,
            ttl,
        } => {
            println!(
                "{}",
                jwt::mint_verified(
                    &jwt::secret_from_env(),
                    &role,
                    &sub,
                    vendor_id.as_deref(),
                    email.as_deref(),
                    ttl
                )?
            );
        }
        Command::Bench {
            binaries,
            cold_runs,
            warm_invocations,
        } => {
            let entropy = devstack::bench::first_random_fill();
            let client_builds = devstack::bench::first_client_builds()?;
            let template = Template::repository()?;
            let stack = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
            let (_, names, _) = provision_all(&template, &stack).await?;
            let functions =
                Functions::from_template(&template, &names, &binaries, &Default::default())?;
            // The functions reach the local cloud through TLS, as they reach AWS: moto and the
            // DynamoDB engine each behind a proxy, one trust store for both.
            let upstreams = devstack::faults::Upstreams::from_env()?;
            let tls = devstack::tls_proxy::TlsProxy::start(&upstreams.emulator.to_string()).await?;
            let tls_dynamodb =
                devstack::tls_proxy::TlsProxy::start(&upstreams.dynamodb.to_string()).await?;
            let mut trust = std::fs::read_to_string(&tls.trust_store)?;
            trust.push_str(&tls_dynamodb.certificate_pem);
            std::fs::write(&tls.trust_store, trust)?;
            let mut sdk_settings = vec![
                ("AWS_ENDPOINT_URL".to_owned(), tls.endpoint.clone()),
                (
                    "AWS_ENDPOINT_URL_DYNAMODB".to_owned(),
                    tls_dynamodb.endpoint.clone(),
                ),
                (
                    "AWS_ENDPOINT_URL_DYNAMODB_STREAMS".to_owned(),
                    tls_dynamodb.endpoint.clone(),
                ),
                (
                    "SSL_CERT_FILE".to_owned(),
                    tls.trust_store.display().to_string(),
                ),
            ];
            for key in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"] {
                if let Ok(value) = std::env::var(key) {
                    sdk_settings.push((key.to_owned(), value));
                }
            }
            let by_binary: std::collections::HashMap<String, Vec<(String, String)>> = template
                .functions()?
                .into_iter()
                .map(|function| {
                    let mut env = template
                        .environment(&function, &|v| provision::resolve(&template, v, &names));
                    env.extend(sdk_settings.iter().cloned());
                    // Measured as before: the simulated gateway (the emulator has no Stripe).
                    devstack::lambda::simulated_payments(&mut env);
                    (function.binary, env)
                })
                .collect();
            let environment = |binary: &str| {
                by_binary
                    .get(binary)
                    .cloned()
                    .unwrap_or_else(|| sdk_settings.clone())
            };
            let options = devstack::bench::BenchOptions {
                binaries: &binaries,
                cold_runs,
                warm_invocations,
                environment: &environment,
            };
            let report = devstack::bench::run(&functions, &template, options).await?;
            println!(
                "first aws-lc random fill in a fresh process: {:.2} ms",
                entropy.as_secs_f64() * 1000.0
            );
            let client_builds: Vec<String> = client_builds
                .iter()
                .map(|(client, took)| format!("{client} {:.2} ms", took.as_secs_f64() * 1000.0))
                .collect();
            println!(
                "first build of each SDK client in a fresh process: {}",
                client_builds.join(", ")
            );
            println!("{report}");
        }
        Command::BenchVases { vases, messages } => {
            let template = Template::repository()?;
            let stack = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
            let (app, names, sdk) = provision_all(&template, &stack).await?;
            let options = devstack::bench_vases::VaseBench { vases, messages };
            let report =
                devstack::bench_vases::run(&template, app, names, &stack, &sdk, options).await?;
            println!("{report}");
        }
        Command::Watch {
            channels,
            token,
            url,
        } => devstack::watch::watch(&url, token.as_deref(), &channels).await?,
        Command::Invoke { binary, payload } => {
            let template = Template::repository()?;
            let (_, names, _) = provision_all(&template, &cli.stack).await?;
            let functions = Functions::from_template(
                &template,
                &names,
                &default_binaries_dir(),
                &Default::default(),
            )?;
            let function = functions
                .get(&binary)
                .ok_or_else(|| DevError::Unsupported(format!("no function builds {binary}")))?;
            let answer = function.invoke(serde_json::from_str(&payload)?).await?;
            println!("{answer}");
        }
        Command::Provision => {
            let (_, names, _) = provision_all(&Template::repository()?, &cli.stack).await?;
            let mut resources: Vec<_> = names.iter().filter(|(k, _)| !k.contains('.')).collect();
            resources.sort();
            for (logical, local) in resources {
                println!("{logical}\t{local}");
            }
        }
        Command::Up {
            port,
            no_seed,
            schedule_speedup,
            mqtt_port,
            ws_port,
            ws_idle_seconds,
            ws_max_age_seconds,
            faults,
            faults_port,
            parameter_overrides,
            concurrency,
            sandbox_idle_seconds,
        } => {
            let template =
                Template::repository()?.with_parameter_overrides(&parameter_overrides)?;
            let (_, mut names, sdk) = provision_all(&template, &cli.stack).await?;
            // With faults, the functions (not the dev stack's own triggers, which play AWS)
            // reach the emulator through the fault proxy.
            let mut fault_proxy = None;
            if let Some(spec) = faults {
                let faults = devstack::faults::install(devstack::faults::Faults::parse(&spec)?)?;
                let upstreams = devstack::faults::Upstreams::from_env()?;
                let proxy =
                    devstack::faults::FaultProxy::start(faults, &upstreams, faults_port).await?;
                eprintln!(
                    "faults: rate {} seed {}; the functions reach the local cloud through {} (GET /_faults)",
                    faults.rate,
                    faults.seed,
                    proxy.endpoint()
                );
                fault_proxy = Some(proxy.endpoint());
            }
            let iot = devstack::iot_core::start(
                &template,
                &cli.stack,
                &sdk,
                &mut names,
                SocketAddr::from(([127, 0, 0, 1], mqtt_port)),
            )
            .await?;
            let secret = jwt::secret_from_env();
            // Every function runs its built binary (`cargo build --bins`), restarted when it
            // is rebuilt.
            let local = devstack::lambda::LocalSettings {
                jwt_secret: secret.clone(),
                websocket_management_url: format!("http://127.0.0.1:{ws_port}"),
                aws_endpoint_url: fault_proxy,
                photo_upload_url: Some(format!("http://127.0.0.1:{port}/local/s3")),
                scaling: Scaling {
                    account_concurrency: concurrency,
                    idle_lifetime: Duration::from_secs(sandbox_idle_seconds),
                },
            };
            let functions =
                Functions::from_template(&template, &names, &default_binaries_dir(), &local)?;
            eprintln!(
                "functions: up to {concurrency} sandboxes at once, idle ones retired after {sandbox_idle_seconds} s (GET /local/functions reports them)"
            );
            let retiring = functions.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    let retired = retiring.retire_idle();
                    if retired > 0 {
                        tracing::info!(retired, "idle sandboxes retired");
                    }
                }
            });
            for missing in functions.missing() {
                eprintln!("not built yet: {} (cargo build --bins)", missing.display());
            }
            let pool = devstack::cognito::LocalUserPool::from_names(&names);
            // CloudFront's caching in front, as the console's distribution has it on AWS.
            let api = LocalApi::from_template(
                &template,
                &functions,
                Arc::new(jwt::verifier(&secret, pool.as_ref())),
            )?
            .with_edge_cache(&template)
            .with_edge_limits(devstack::edge_limits::EdgeLimits::from_template(
                &template,
                &|v| provision::resolve(&template, v, &names),
            )?);
            let mut demo_vendor = None;
            if !no_seed {
                let ports = seed::SeedPorts {
                    emulator: std::env::var("AWS_ENDPOINT_URL")
                        .unwrap_or_else(|_| "http://127.0.0.1:4566".into()),
                    sqs: aws_sdk_sqs::Client::new(&sdk),
                    vase_queue_url: names.get("VaseMessagesQueue").cloned(),
                };
                let seeded = seed::seed(&api, &secret, &ports).await?;
                demo_vendor = Some(seeded.vendor_id.clone());
                eprintln!(
                    "demo vendor {} with bouquets {}",
                    seeded.vendor_id,
                    seeded.bouquet_ids.join(", ")
                );
                // The vase's certificate and key where the simulator finds them (a replayed
                // registration returns no key: the files of the first run stay).
                let files = devstack::mosquitto::IotFiles::from_env()?;
                let (certificate, key) = (files.path("demo-vase.pem"), files.path("demo-vase.key"));
                if let Some((pem, private_key)) = &seeded.vase_credentials {
                    std::fs::write(&certificate, pem)?;
                    std::fs::write(&key, private_key)?;
                }
                eprintln!(
                    "demo vase {} (its bouquet: {}); make it beat and report:\n  cargo run -p vase-simulator -- --vase-id {} --broker 127.0.0.1:{} --cert {} --key {} --ca {} --scenario drying-out",
                    seeded.vase_id,
                    seeded.bouquet_ids.first().map(String::as_str).unwrap_or("-"),
                    seeded.vase_id,
                    iot.address.port(),
                    certificate.display(),
                    key.display(),
                    files.path("ca.pem").display(),
                );
                eprintln!(
                    "vendor token:   {}",
                    jwt::mint_verified(
                        &secret,
                        "vendor",
                        "vendor-demo",
                        Some(&seeded.vendor_id),
                        Some("vendor-demo@example.com"),
                        86_400
                    )?
                );
            }
            eprintln!(
                "customer token: {}",
                jwt::mint_verified(
                    &secret,
                    "customer",
                    "customer-demo",
                    None,
                    Some("customer-demo@example.com"),
                    86_400
                )?
            );
            eprintln!(
                "admin token:    {}",
                jwt::mint(&secret, "admin", "admin-demo", None, 86_400)?
            );
            for (function, every) in
                devstack::schedules::start(&template, &names, &functions, schedule_speedup, &sdk)?
            {
                eprintln!("schedule: {function} every {every:?}");
            }
            for mapping in devstack::streams::start_all(&template, &names, &functions, &sdk)? {
                eprintln!("stream mapping: {mapping}");
            }
            for mapping in devstack::queues::start_all(&template, &names, &functions, &sdk)? {
                eprintln!("SQS mapping: {mapping}");
            }
            for rule in
                devstack::rules::start_all(&template, &names, &cli.stack, &functions, &sdk).await?
            {
                eprintln!("EventBridge target: {rule}");
            }
            eprintln!("MQTT (IoT Core) on {}", iot.address);
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            let websocket = devstack::websocket::LocalWebSocketApi::from_template(
                &template,
                &functions,
                devstack::websocket::Limits {
                    idle: std::time::Duration::from_secs(ws_idle_seconds),
                    max_age: std::time::Duration::from_secs(ws_max_age_seconds),
                },
            )?;
            let live = async {
                match websocket {
                    Some(websocket) => {
                        let listener = tokio::net::TcpListener::bind(SocketAddr::from((
                            [127, 0, 0, 1],
                            ws_port,
                        )))
                        .await?;
                        eprintln!("WebSocket API on ws://127.0.0.1:{ws_port} (?token=...)");
                        websocket.serve_on(listener).await
                    }
                    None => std::future::pending().await,
                }
            };
            let table = names
                .get("MarketTable")
                .cloned()
                .ok_or_else(|| DevError::Unsupported("no MarketTable provisioned".into()))?;
            let api = api.with_console(
                devstack::console::Console::new(
                    &devstack::console::repository_web_dir(),
                    devstack::console::Console::local_config(
                        ws_port,
                        demo_vendor.as_deref(),
                        pool.as_ref(),
                    ),
                    secret.clone(),
                )
                .with_functions(functions.clone())
                .with_ledger(bouquet_app::payments::TableLedger::new(
                    aws_sdk_dynamodb::Client::new(&sdk),
                    table,
                ))
                .with_sent_mail(
                    std::env::var("AWS_ENDPOINT_URL")
                        .as_deref()
                        .unwrap_or("http://127.0.0.1:4566"),
                )
                .with_photos(
                    std::env::var("AWS_ENDPOINT_URL")
                        .as_deref()
                        .unwrap_or("http://127.0.0.1:4566"),
                    devstack::console::PhotoBuckets {
                        uploads: names.get("PhotoUploadBucket").cloned().unwrap_or_default(),
                        photos: names.get("PhotoBucket").cloned().unwrap_or_default(),
                    },
                    bouquet_photos::s3::client(&sdk),
                )
                .with_read_signer(
                    bouquet_photos::PostPolicySigner::from_sdk(
                        &sdk,
                        names.get("PhotoUploadBucket").cloned().unwrap_or_default(),
                        format!(
                            "http://127.0.0.1:{port}/local/s3/{}",
                            names.get("PhotoUploadBucket").cloned().unwrap_or_default()
                        ),
                    )
                    .map_err(|e| devstack::error::DevError::Aws(Box::new(e)))?,
                )
                .with_security_headers(devstack::console::security_headers(
                    &template,
                    &format!("ws://127.0.0.1:{ws_port}"),
                    std::env::var("AWS_ENDPOINT_URL")
                        .as_deref()
                        .unwrap_or("http://127.0.0.1:4566")
                        .trim_end_matches('/'),
                )),
            );
            eprintln!("web console on http://{address}/ (sign in as any role there)");
            eprintln!("HTTP API on http://{address}/v1 (Ctrl-C to stop)");
            tokio::select! {
                served = api.serve(address) => served?,
                served = live => served?,
                _ = tokio::signal::ctrl_c() => eprintln!("stopping"),
            }
        }
    }
    Ok(())
}

fn tracing_init() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
}
