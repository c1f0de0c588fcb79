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

/// The instant work must stop for an invocation whose deadline is `deadline_ms` (epoch
/// milliseconds, as the Lambda runtime gives it; 0 when there is none: then `fallback` from
/// now), keeping `margin` to answer.
pub fn deadline(deadline_ms: u64, margin: Duration, fallback: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    if deadline_ms == 0 {
        return now + fallback;
    }
    let wall_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    now + Duration::from_millis(deadline_ms.saturating_sub(wall_ms)).saturating_sub(margin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_keeps_its_margin() {
        let now = tokio::time::Instant::now();
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let at = deadline(
            wall_ms + 10_000,
            Duration::from_secs(3),
            Duration::from_secs(1),
        );
        let left = at.duration_since(now);
        assert!(
            left <= Duration::from_millis(7_010) && left > Duration::from_secs(6),
            "{left:?}"
        );
        let none = deadline(0, Duration::from_secs(3), Duration::from_secs(30));
        assert!(none.duration_since(now) >= Duration::from_secs(30));
    }

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
