//! The one retry policy: bounded attempts with exponential backoff and full jitter, for
//! optimistic read-decide-write loops and for transient errors (throttling, transaction
//! conflicts, unprocessed batch keys). Jitter spreads colliding writers apart; the bound keeps
//! a request inside its deadline.

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Retry {
    attempt: u32,
    attempts: u32,
    started: bool,
    base: Duration,
    cap: Duration,
}

impl Retry {
    /// At most `attempts` tries in all (the first one included).
    pub const fn attempts(attempts: u32) -> Self {
        Self {
            attempt: 1,
            attempts,
            started: false,
            base: Duration::from_millis(10),
            cap: Duration::from_millis(200),
        }
    }

    /// A read-decide-write loop that lost a race: read again soon, a few times.
    pub const fn optimistic() -> Self {
        Self::attempts(3)
    }

    /// The attempt about to run, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The upper bound of the wait before attempt `attempt + 1`: `base * 2^(attempt-1)`,
    /// at most `cap`. The wait itself is drawn uniformly below it (full jitter).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The loop form, `while retry.next().await { ... }`: the first attempt runs at once,
    /// each later one after the backoff; `false` once the attempts are used up.
    pub async fn next(&mut self) -> bool {
        if !self.started {
            self.started = true;
            return true;
        }
        self.wait().await
    }

    /// After a failed attempt: `false` when the attempts are used up, else waits the
    /// jittered backoff and returns `true` (try again).
    pub async fn wait(&mut self) -> bool {
        if self.attempt >= self.attempts {
            return false;
        }
        let ceiling = self.ceiling(self.attempt);
        self.attempt += 1;
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        tokio::time::sleep(Duration::from_nanos(fastrand::u64(0..=nanos))).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_up_to_the_cap() {
        let retry = Retry::attempts(10);
        let ceilings: Vec<u128> = (1..=7).map(|a| retry.ceiling(a).as_millis()).collect();
        assert_eq!(ceilings, vec![10, 20, 40, 80, 160, 200, 200]);
    }

    #[tokio::test(start_paused = true)]
    async fn it_allows_exactly_the_given_attempts() {
        let mut retry = Retry::attempts(4);
        let mut tries = 1;
        while retry.wait().await {
            tries += 1;
        }
        assert_eq!(tries, 4);
        assert_eq!(retry.attempt(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_form_runs_each_attempt_once() {
        let mut retry = Retry::attempts(3);
        let mut runs = 0;
        while retry.next().await {
            runs += 1;
        }
        assert_eq!(runs, 3);
    }
}
