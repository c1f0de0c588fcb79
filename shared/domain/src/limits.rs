//! Abuse limits (docs/contract.md, "Abuse limits"): how many times one subject (an order, a customer)
//! may do a thing within a window of time, counted in fixed windows aligned to the epoch.
//!
//! A fixed window is one counter item per window, written with a conditional `ADD`: exact
//! under concurrency and one write per counted action. Its known cost is the boundary: up to
//! twice `max` can pass within one window's length straddling two windows. The limits here
//! bound abuse (card testing, hold churn), where that factor does not matter.

use std::time::Duration;

use crate::clock::Timestamp;

/// What a limit counts, naming its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counted {
    /// Declined payment attempts on one order.
    DeclinesPerOrder,
    /// Declined payment attempts by one customer.
    DeclinesPerCustomer,
    /// Reservations made by one customer.
    ReservationsPerCustomer,
}

impl Counted {
    /// The counter's name in its key.
    pub fn name(self) -> &'static str {
        match self {
            Counted::DeclinesPerOrder => "declines-order",
            Counted::DeclinesPerCustomer => "declines-customer",
            Counted::ReservationsPerCustomer => "reservations",
        }
    }
}

/// At most `max` of `counted` per `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub counted: Counted,
    pub max: u32,
    pub window: Duration,
}

/// One window of a limit: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Timestamp,
    pub end: Timestamp,
}

/// A refusal: the limit that was reached and when to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitReached {
    pub counted: Counted,
    /// Whole seconds until the window ends (at least 1): the `Retry-After`.
    pub retry_after_secs: u64,
}

impl RateLimit {
    /// The window `now` falls in.
    pub fn window(&self, now: Timestamp) -> Window {
        let length = (self.window.as_millis() as i64).max(1);
        let start = now.as_millis().div_euclid(length) * length;
        Window {
            start: Timestamp::from_millis(start),
            end: Timestamp::from_millis(start + length),
        }
    }

    /// Whether `count` already counted in `now`'s window leaves room for one more.
    pub fn check(&self, count: u32, now: Timestamp) -> Result<(), LimitReached> {
        if count < self.max {
            return Ok(());
        }
        Err(self.reached(now))
    }

    /// The refusal at `now`: try again when the window ends.
    pub fn reached(&self, now: Timestamp) -> LimitReached {
        let left_ms = self.window(now).end.as_millis() - now.as_millis();
        LimitReached {
            counted: self.counted,
            retry_after_secs: (left_ms.max(0) as u64).div_ceil(1000).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DECLINES: RateLimit = RateLimit {
        counted: Counted::DeclinesPerOrder,
        max: 5,
        window: Duration::from_secs(600),
    };

    #[test]
    fn the_max_th_action_passes_and_the_next_waits_for_the_window_to_end() {
        let now = Timestamp::from_millis(600_000 * 7 + 1_500);
        assert!(DECLINES.check(4, now).is_ok());
        assert_eq!(
            DECLINES.check(5, now),
            Err(LimitReached {
                counted: Counted::DeclinesPerOrder,
                retry_after_secs: 599,
            })
        );
        let next = DECLINES.window(now).end;
        assert_eq!(
            DECLINES.window(next).start,
            next,
            "a new window, a new count"
        );
    }

    proptest! {
        #[test]
        fn a_window_holds_now_and_retry_after_reaches_its_end(
            now in 0i64..4_000_000_000_000,
            window_secs in 1u64..100_000,
        ) {
            let limit = RateLimit { window: Duration::from_secs(window_secs), ..DECLINES };
            let now = Timestamp::from_millis(now);
            let window = limit.window(now);
            prop_assert!(window.start <= now && now < window.end);
            prop_assert_eq!(window.end.as_millis() - window.start.as_millis(), window_secs as i64 * 1000);
            let retry = limit.reached(now).retry_after_secs;
            prop_assert!(retry >= 1 && retry <= window_secs);
            // Waiting Retry-After seconds lands in the next window, never in this one.
            let later = Timestamp::from_millis(now.as_millis() + retry as i64 * 1000);
            prop_assert!(later >= window.end);
        }
    }
}
