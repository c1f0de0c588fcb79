//! Lambda's scaling, locally: a function runs in as many sandboxes (processes of its built
//! binary, each under its own Runtime API, each with its own init) as it has invocations at
//! once. An idle sandbox is reused, the most recently used first, and retired after
//! [`Scaling::idle_lifetime`]; one whose binary was rebuilt is retired at once.
//!
//! Concurrency is bounded as Lambda bounds it: a function with `ReservedConcurrentExecutions`
//! has that many of its own, carved out of the stack's limit (Lambda's account limit, a
//! `devstack up` option); every other function shares what is left. An invocation past its
//! bound is throttled at once (`TooManyRequestsException`), never queued: the caller decides
//! (API Gateway answers 500, asynchronous and event-source invokers retry).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::runtime_api::{FunctionProcess, InvokeError};

/// The stack's concurrency and how long an idle sandbox lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scaling {
    /// Sandboxes of all functions at once (Lambda's account limit, 1,000 by default on AWS).
    pub account_concurrency: usize,
    /// How long an unused sandbox is kept warm.
    pub idle_lifetime: Duration,
}

impl Default for Scaling {
    /// 64 at once suits 2 cores: a debug sandbox idles at about 10 MiB and waits mostly on the
    /// emulator; a 5-minute idle lifetime is within what Lambda keeps.
    fn default() -> Self {
        Self {
            account_concurrency: 64,
            idle_lifetime: Duration::from_secs(300),
        }
    }
}

/// A bound on sandboxes at once: the account's unreserved pool, or a function's reservation.
#[derive(Clone, Debug)]
pub struct Concurrency(Arc<Semaphore>);

impl Concurrency {
    pub fn new(limit: usize) -> Self {
        Self(Arc::new(Semaphore::new(limit)))
    }

    fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }
}

struct Sandbox {
    process: FunctionProcess,
    built_at: SystemTime,
    idle_since: Instant,
}

/// What a function's sandboxes did: the dev stack reports it at `GET /local/functions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionReport {
    pub invocations: u64,
    /// Invocations that started a sandbox (an init).
    pub cold_starts: u64,
    /// Invocations refused past the function's concurrency.
    pub throttles: u64,
    /// Sandboxes alive now, and how many of them are busy.
    pub sandboxes: usize,
    pub busy: usize,
    /// The most sandboxes busy at once.
    pub peak_concurrency: usize,
    /// Waiting for a sandbox (its init, on a cold start, and the hand-over), per invocation.
    pub wait_ms: Percentiles,
    /// The function's own time, from taking the event to answering it.
    pub duration_ms: Percentiles,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    /// All of it, summed: a share of where the time went.
    pub total: f64,
}

impl Percentiles {
    fn of<'a>(samples: impl IntoIterator<Item = &'a f64>) -> Self {
        let mut sorted: Vec<f64> = samples.into_iter().copied().collect();
        if sorted.is_empty() {
            return Self::default();
        }
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        Self {
            p50: at(0.5),
            p99: at(0.99),
            max: sorted[sorted.len() - 1],
            total: sorted.iter().sum(),
        }
    }
}

/// The most samples kept per figure: the latest ones (so `total` is over them too).
const SAMPLES: usize = 100_000;

#[derive(Default)]
struct Counters {
    invocations: u64,
    cold_starts: u64,
    throttles: u64,
    busy: usize,
    peak: usize,
    wait_ms: VecDeque<f64>,
    duration_ms: VecDeque<f64>,
}

fn keep(samples: &mut VecDeque<f64>, value: f64) {
    if samples.len() == SAMPLES {
        samples.pop_front();
    }
    samples.push_back(value);
}

/// One function's sandboxes.
pub struct Sandboxes {
    binary: String,
    path: PathBuf,
    env: Vec<(String, String)>,
    concurrency: Concurrency,
    idle_lifetime: Duration,
    idle: Mutex<Vec<Sandbox>>,
    counters: Mutex<Counters>,
}

impl Sandboxes {
    pub fn new(
        binary: &str,
        path: &Path,
        env: Vec<(String, String)>,
        concurrency: Concurrency,
        idle_lifetime: Duration,
    ) -> Self {
        Self {
            binary: binary.to_owned(),
            path: path.to_owned(),
            env,
            concurrency,
            idle_lifetime,
            idle: Mutex::default(),
            counters: Mutex::default(),
        }
    }

    /// Runs `event` in an idle sandbox of the current build, or a new one; throttled when the
    /// function is at its concurrency.
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Value, InvokeError> {
        let Some(_permit) = self.concurrency.admit() else {
            self.count(|c| c.throttles += 1);
            return Err(InvokeError::Throttled);
        };
        let asked = Instant::now();
        let built_at = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .map_err(|source| InvokeError::Spawn {
                binary: self.path.clone(),
                source,
            })?;
        let (sandbox, cold) = match self.take_idle(built_at) {
            Some(sandbox) => (sandbox, false),
            None => (self.start(built_at).await?, true),
        };
        self.count(|c| {
            c.invocations += 1;
            c.cold_starts += u64::from(cold);
            c.busy += 1;
            c.peak = c.peak.max(c.busy);
        });
        let (outcome, taken_at) = sandbox.process.api.invoke_timed(event, timeout).await;
        let answered = Instant::now();
        self.count(|c| {
            c.busy -= 1;
            let taken_at = taken_at.unwrap_or(answered);
            keep(
                &mut c.wait_ms,
                ms(taken_at.saturating_duration_since(asked)),
            );
            keep(
                &mut c.duration_ms,
                ms(answered.saturating_duration_since(taken_at)),
            );
        });
        match &outcome {
            // A sandbox that timed out or died is not reused, as Lambda resets it.
            Err(InvokeError::Timeout(_) | InvokeError::Gone) => sandbox.process.stop().await,
            _ => self.put_back(sandbox),
        }
        outcome
    }

    /// The most recently used idle sandbox of this build; retires stale and expired ones.
    fn take_idle(&self, built_at: SystemTime) -> Option<Sandbox> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let lifetime = self.idle_lifetime;
        let before = idle.len();
        idle.retain(|s| s.built_at == built_at && s.idle_since.elapsed() < lifetime);
        if idle.len() < before {
            tracing::info!(function = %self.binary, retired = before - idle.len(), "idle or outdated sandboxes retired");
        }
        idle.pop()
    }

    fn put_back(&self, mut sandbox: Sandbox) {
        sandbox.idle_since = Instant::now();
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sandbox);
    }

    /// A new sandbox: the binary, started, its init not yet awaited (the invocation waits for
    /// the first poll at the Runtime API).
    async fn start(&self, built_at: SystemTime) -> Result<Sandbox, InvokeError> {
        let process = FunctionProcess::spawn(&self.path, &self.binary, &self.env)
            .await
            .map_err(|source| InvokeError::Spawn {
                binary: self.path.clone(),
                source,
            })?;
        Ok(Sandbox {
            process,
            built_at,
            idle_since: Instant::now(),
        })
    }

    /// Retires idle sandboxes past their lifetime (the dev stack calls it now and then).
    pub fn retire_idle(&self) -> usize {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let before = idle.len();
        let lifetime = self.idle_lifetime;
        idle.retain(|s| s.idle_since.elapsed() < lifetime);
        before - idle.len()
    }

    pub fn report(&self) -> FunctionReport {
        let idle = self.idle.lock().map(|i| i.len()).unwrap_or_default();
        let c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        FunctionReport {
            invocations: c.invocations,
            cold_starts: c.cold_starts,
            throttles: c.throttles,
            sandboxes: idle + c.busy,
            busy: c.busy,
            peak_concurrency: c.peak,
            wait_ms: Percentiles::of(&c.wait_ms),
            duration_ms: Percentiles::of(&c.duration_ms),
        }
    }

    fn count(&self, change: impl FnOnce(&mut Counters)) {
        change(&mut self.counters.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_read_from_the_sorted_samples() {
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let p = Percentiles::of(&samples);
        assert_eq!((p.p50, p.p99, p.max, p.total), (51.0, 99.0, 100.0, 5050.0));
        assert_eq!(Percentiles::of(&[]), Percentiles::default());
    }

    #[test]
    fn a_bound_admits_its_limit_and_throttles_the_next_until_one_ends() {
        let bound = Concurrency::new(2);
        let first = bound.admit().expect("one");
        let _second = bound.admit().expect("two");
        assert!(bound.admit().is_none(), "the third is throttled");
        drop(first);
        assert!(bound.admit().is_some(), "admitted once one ended");
    }
}
