//! The template's functions as Lambda runs them: each one's built binary (the same `main.rs`
//! that is deployed) in sandboxes, processes under their own local Runtime API, as many as it
//! has invocations at once, up to its concurrency (see [`crate::sandboxes`]). A sandbox
//! started after its binary changed runs the new build, so a rebuilt handler is picked up
//! while the stack runs (as `sam local` and `cargo lambda watch` do). Nothing here links a
//! function crate: adding a function is its crate plus its entry in `template.yaml`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use bouquet_template::Template;

use crate::cognito::LocalUserPool;
use crate::provision::{resolve, Names};
use crate::runtime_api::FunctionProcess;
pub use crate::runtime_api::InvokeError;
use crate::sandboxes::{Concurrency, FunctionReport, Sandboxes, Scaling};

/// How a trigger calls a function: the event as JSON in, the function's response as JSON
/// out. The dev stack's mappings, rules, schedules and HTTP API all call functions through
/// it; tests may hand them an in-process one.
pub type Invoke =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, InvokeError>> + Send + Sync>;

/// How long one invocation may take before the caller gives up (Lambda's timeout).
pub const INVOKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an asynchronous or event-source invoker keeps retrying a throttled invocation
/// in place before it counts as a failed attempt (Lambda retries throttles for up to six
/// hours without using a retry attempt; here a minute, then the attempt counts).
pub const THROTTLE_PATIENCE: Duration = Duration::from_secs(60);

/// Invokes as Lambda's asynchronous invoker does: a throttle is retried with a growing
/// backoff (100 ms to 2 s) and uses no attempt, for up to `patience`.
pub async fn invoke_retrying_throttles(
    invoke: &Invoke,
    event: Value,
    patience: Duration,
) -> Result<Value, InvokeError> {
    let until = tokio::time::Instant::now() + patience;
    let mut backoff = Duration::from_millis(100);
    loop {
        match invoke(event.clone()).await {
            Err(InvokeError::Throttled) if tokio::time::Instant::now() + backoff < until => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
            outcome => return outcome,
        }
    }
}

/// One asynchronous invocation attempt, as rules and schedules make it: throttles retried
/// in place for [`THROTTLE_PATIENCE`].
pub async fn invoke_attempt(invoke: &Invoke, event: Value) -> Result<Value, InvokeError> {
    invoke_retrying_throttles(invoke, event, THROTTLE_PATIENCE).await
}

/// Where `cargo build` puts the function binaries: `$CARGO_TARGET_DIR/debug` or
/// `target/debug`.
pub fn default_binaries_dir() -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("target"))
        .join("debug")
}

/// One function: its binary, its environment (the template's variables, resolved) and its
/// sandboxes.
pub struct LocalFunction {
    binary: String,
    path: PathBuf,
    env: Vec<(String, String)>,
    sandboxes: Sandboxes,
}

impl LocalFunction {
    /// A function sharing the stack's `concurrency` (or holding its own reservation), its
    /// idle sandboxes kept for `idle_lifetime`.
    pub fn new(
        binary: &str,
        path: PathBuf,
        env: Vec<(String, String)>,
        concurrency: Concurrency,
        idle_lifetime: Duration,
    ) -> Self {
        Self {
            sandboxes: Sandboxes::new(binary, &path, env.clone(), concurrency, idle_lifetime),
            binary: binary.to_owned(),
            path,
            env,
        }
    }

    pub fn binary(&self) -> &str {
        &self.binary
    }

    /// Delivers `event` to the function and waits for its answer.
    pub async fn invoke(&self, event: Value) -> Result<Value, InvokeError> {
        if let Some(after) = crate::faults::kill_after() {
            return self.invoke_and_crash(event, after).await;
        }
        self.sandboxes.invoke(event, INVOKE_TIMEOUT).await
    }

    /// What its sandboxes did.
    pub fn report(&self) -> FunctionReport {
        self.sandboxes.report()
    }

    /// A fault: the invocation runs in a sandbox of its own that is killed `after` it got the
    /// event, so the crash takes this invocation only, as a dying Lambda sandbox does.
    async fn invoke_and_crash(&self, event: Value, after: Duration) -> Result<Value, InvokeError> {
        let doomed = FunctionProcess::spawn(&self.path, &self.binary, &self.env)
            .await
            .map(Arc::new)
            .map_err(|source| InvokeError::Spawn {
                binary: self.path.clone(),
                source,
            })?;
        let killer = doomed.clone();
        tokio::spawn(async move {
            killer.api.wait_ready(INVOKE_TIMEOUT).await;
            tokio::time::sleep(after).await;
            killer.crash();
        });
        doomed.api.invoke(event, INVOKE_TIMEOUT).await
    }

    /// This function as an [`Invoke`].
    pub fn invoker(self: &Arc<Self>) -> Invoke {
        let function = self.clone();
        Arc::new(move |event| {
            let function = function.clone();
            Box::pin(async move { function.invoke(event).await })
        })
    }
}

/// Every function of the template, by binary name.
#[derive(Clone, Default)]
pub struct Functions {
    by_binary: HashMap<String, Arc<LocalFunction>>,
}

impl Functions {
    /// The template's functions, their binaries in `binaries`, their environment resolved
    /// against the provisioned `names`.
    pub fn from_template(
        template: &Template,
        names: &Names,
        binaries: &Path,
        local: &LocalSettings,
    ) -> Result<Self, bouquet_template::TemplateError> {
        let mut by_binary = HashMap::new();
        let pool = crate::cognito::LocalUserPool::from_names(names);
        let functions = template.functions()?;
        // A reservation is the function's own and leaves the rest to everyone else.
        let reserved_of = |function: &bouquet_template::Function| {
            let value = &function.properties["ReservedConcurrentExecutions"];
            match value {
                Value::Null => None,
                value => resolve(template, value, names).parse::<u64>().ok(),
            }
        };
        let reserved: u64 = functions.iter().filter_map(reserved_of).sum();
        let unreserved = Concurrency::new(
            (local.scaling.account_concurrency as u64)
                .saturating_sub(reserved)
                .max(1) as usize,
        );
        for function in functions {
            let mut env = template.environment(&function, &|v| resolve(template, v, names));
            local.apply(&mut env, pool.as_ref());
            let concurrency = match reserved_of(&function) {
                Some(own) => Concurrency::new(own as usize),
                None => unreserved.clone(),
            };
            let local = LocalFunction::new(
                &function.binary,
                binaries.join(&function.binary),
                env,
                concurrency,
                local.scaling.idle_lifetime,
            );
            by_binary.insert(function.binary.clone(), Arc::new(local));
        }
        Ok(Self { by_binary })
    }

    /// Each function's report, by binary, sorted.
    pub fn report(&self) -> std::collections::BTreeMap<String, FunctionReport> {
        self.by_binary
            .iter()
            .map(|(binary, function)| (binary.clone(), function.report()))
            .collect()
    }

    /// Retires every idle sandbox past its lifetime; how many.
    pub fn retire_idle(&self) -> usize {
        self.by_binary
            .values()
            .map(|f| f.sandboxes.retire_idle())
            .sum()
    }

    pub fn get(&self, binary: &str) -> Option<&Arc<LocalFunction>> {
        self.by_binary.get(binary)
    }

    /// The [`Invoke`] of `binary`, if the template has it.
    pub fn invoker(&self, binary: &str) -> Option<Invoke> {
        self.get(binary).map(LocalFunction::invoker)
    }

    /// The binaries that are missing (not built yet), sorted.
    pub fn missing(&self) -> Vec<PathBuf> {
        let mut missing: Vec<PathBuf> = self
            .by_binary
            .values()
            .filter(|f| !f.path.exists())
            .map(|f| f.path.clone())
            .collect();
        missing.sort();
        missing
    }
}

/// What differs locally from the deployed environment: tokens are the dev stack's HS256
/// ones, not the user pool's, and the WebSocket management API is the dev stack's.
#[derive(Clone, Debug)]
pub struct LocalSettings {
    pub jwt_secret: String,
    /// E.g. `http://127.0.0.1:3001`.
    pub websocket_management_url: String,
    /// The functions' endpoint for every service when it is not the dev stack's own (the fault
    /// proxy).
    pub aws_endpoint_url: Option<String>,
    /// Where the browser posts photo uploads: the dev stack's `/local/s3` (e.g.
    /// `http://127.0.0.1:3000/local/s3`), which hands them to the emulator's S3 as the bucket's
    /// regional endpoint would take them.
    pub photo_upload_url: Option<String>,
    /// The stack's concurrency and the sandboxes' idle lifetime.
    pub scaling: Scaling,
}

impl Default for LocalSettings {
    fn default() -> Self {
        Self {
            jwt_secret: crate::jwt::secret_from_env(),
            websocket_management_url: "http://127.0.0.1:3001".into(),
            aws_endpoint_url: None,
            photo_upload_url: None,
            scaling: Scaling::default(),
        }
    }
}

/// The signing secret of the local `payment-webhook` (local only, never a deployed secret).
pub const LOCAL_WEBHOOK_SECRET: &str = "whsec_bouquet_local";
/// The local Connect endpoint's signing secret: the simulated provider's account reports.
pub const LOCAL_CONNECT_WEBHOOK_SECRET: &str = "whsec_bouquet_local_connect";

impl LocalSettings {
    /// Rewrites a function's resolved environment for the dev stack: token validators trust
    /// the local pool (its JWKS on the emulator) and the dev stack's minted tokens.
    pub fn apply(&self, env: &mut Vec<(String, String)>, pool: Option<&LocalUserPool>) {
        let validates_tokens = env.iter().any(|(k, _)| k == "JWKS_URL");
        env.retain(|(k, _)| {
            !(validates_tokens && matches!(k.as_str(), "JWKS_URL" | "JWT_ISSUER" | "JWT_AUDIENCE"))
        });
        if validates_tokens {
            env.push(("LOCAL_JWT_SECRET".into(), self.jwt_secret.clone()));
            env.push(("LOCAL_JWT_ISSUER".into(), crate::jwt::ISSUER.into()));
            env.push(("LOCAL_JWT_AUDIENCE".into(), crate::jwt::AUDIENCE.into()));
            if let Some(pool) = pool {
                env.push(("JWT_ISSUER".into(), pool.issuer.clone()));
                env.push(("JWT_AUDIENCE".into(), pool.client_id.clone()));
                env.push(("JWKS_URL".into(), pool.jwks_url.clone()));
            }
        }
        for (key, value) in env.iter_mut() {
            match key.as_str() {
                "WEBSOCKET_MANAGEMENT_URL" => value.clone_from(&self.websocket_management_url),
                // The local console is served from this machine, not the distribution.
                "CONSOLE_ORIGINS" => *value = "http://localhost,http://127.0.0.1".into(),
                _ => {}
            }
        }
        let upload_bucket = env
            .iter()
            .find(|(k, _)| k == "PHOTO_UPLOAD_BUCKET")
            .map(|(_, v)| v.clone());
        if let (Some(base), Some(bucket)) = (&self.photo_upload_url, upload_bucket) {
            for (key, value) in env.iter_mut() {
                if key == "PHOTO_UPLOAD_URL" {
                    *value = format!("{}/{bucket}", base.trim_end_matches('/'));
                }
            }
        }
        if let Some(endpoint) = &self.aws_endpoint_url {
            // Every service the functions call, DynamoDB's too, goes through it.
            const ENDPOINTS: [&str; 3] = [
                "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_DYNAMODB",
                "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
            ];
            env.retain(|(k, _)| !ENDPOINTS.contains(&k.as_str()));
            env.extend(ENDPOINTS.map(|k| (k.to_owned(), endpoint.clone())));
        }
        // The local cloud cannot reach Stripe: the simulated gateway, opted into explicitly.
        if env.iter().any(|(k, _)| k == "PAYMENT_PROVIDER") {
            simulated_payments(env);
        }
        // Stripe's webhook: a local signing secret instead of the SSM parameter (the emulator
        // has none); sign local test events with it (`stripe_webhook::sign`).
        if env
            .iter()
            .any(|(k, _)| k == "STRIPE_WEBHOOK_SECRET_PARAMETER")
        {
            env.push(("STRIPE_WEBHOOK_SECRET".into(), LOCAL_WEBHOOK_SECRET.into()));
            env.push((
                "STRIPE_CONNECT_WEBHOOK_SECRET".into(),
                LOCAL_CONNECT_WEBHOOK_SECRET.into(),
            ));
        }
    }
}

/// Resolves a binary name to how it is invoked: the built binaries, or (in tests) handlers
/// in process.
pub trait Resolver: Send + Sync {
    fn invoker(&self, binary: &str) -> Option<Invoke>;

    /// The [`Invoke`] of `binary`, which a trigger of the template needs.
    fn require(&self, binary: &str) -> Result<Invoke, crate::error::DevError> {
        self.invoker(binary).ok_or_else(|| {
            crate::error::DevError::Unsupported(format!("no function builds {binary}"))
        })
    }
}

impl Resolver for Functions {
    fn invoker(&self, binary: &str) -> Option<Invoke> {
        Functions::invoker(self, binary)
    }
}

/// Any function from a binary name to an [`Invoke`] resolves (tests pick their own).
impl<F> Resolver for F
where
    F: Fn(&str) -> Option<Invoke> + Send + Sync,
{
    fn invoker(&self, binary: &str) -> Option<Invoke> {
        self(binary)
    }
}

/// Sets `env` to take payments with the simulated gateway, explicitly opted into (what the
/// template's `PaymentProvider=simulated` and `AllowSimulatedPayments=true` give a stage).
pub fn simulated_payments(env: &mut Vec<(String, String)>) {
    env.retain(|(k, _)| !matches!(k.as_str(), "PAYMENT_PROVIDER" | "ALLOW_SIMULATED_PAYMENTS"));
    env.push(("PAYMENT_PROVIDER".into(), "simulated".into()));
    env.push(("ALLOW_SIMULATED_PAYMENTS".into(), "true".into()));
}
