//! Restart strategies: whether and when a failed job runs again (Flink's
//! `restart-strategy.*`). The job then restarts from its latest complete
//! checkpoint.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A restart strategy, with Flink's defaults for each kind's options.
#[derive(Debug, Clone, PartialEq)]
pub enum RestartStrategy {
    /// A failure fails the job.
    None,
    /// Restart up to `attempts` times, waiting `delay` each time.
    FixedDelay {
        /// Restarts allowed in all (Flink's default 1).
        attempts: u32,
        /// Wait before each restart (1 s).
        delay: Duration,
    },
    /// Restart unless more than `max_failures` happened within `interval`.
    FailureRate {
        /// Failures tolerated per interval (1).
        max_failures: u32,
        /// The measuring window (1 min).
        interval: Duration,
        /// Wait before each restart (1 s).
        delay: Duration,
    },
    /// Restart with a delay growing by `multiplier` up to `max`, back to
    /// `initial` after `reset_threshold` without failure; `jitter` spreads
    /// each delay by up to that fraction.
    ExponentialDelay {
        /// First delay (1 s).
        initial: Duration,
        /// Largest delay (1 min).
        max: Duration,
        /// Growth per failure (1.5).
        multiplier: f64,
        /// Time without failure that resets the delay (1 h).
        reset_threshold: Duration,
        /// Random spread, a fraction of the delay (0.1).
        jitter: f64,
    },
}

impl RestartStrategy {
    /// Flink's fixed-delay defaults.
    pub fn fixed_delay(attempts: u32, delay: Duration) -> Self {
        RestartStrategy::FixedDelay { attempts, delay }
    }

    /// Flink's exponential-delay defaults (its default with checkpointing).
    pub fn exponential_delay() -> Self {
        RestartStrategy::ExponentialDelay {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(60),
            multiplier: 1.5,
            reset_threshold: Duration::from_secs(3600),
            jitter: 0.1,
        }
    }
}

/// The bookkeeping of one job's restarts.
#[derive(Debug)]
pub struct RestartTracker {
    strategy: RestartStrategy,
    restarts: u32,
    failures: VecDeque<Instant>,
    current_backoff: Option<Duration>,
    last_failure: Option<Instant>,
}

impl RestartTracker {
    /// A tracker for `strategy`.
    pub fn new(strategy: RestartStrategy) -> Self {
        RestartTracker {
            strategy,
            restarts: 0,
            failures: VecDeque::new(),
            current_backoff: None,
            last_failure: None,
        }
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// A failure happened at `now`: the delay before restarting, or `None`
    /// if the job must fail.
    pub fn on_failure(&mut self, now: Instant) -> Option<Duration> {
        let delay = match &self.strategy {
            RestartStrategy::None => None,
            RestartStrategy::FixedDelay { attempts, delay } => {
                (self.restarts < *attempts).then_some(*delay)
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval,
                delay,
            } => {
                self.failures.push_back(now);
                while self
                    .failures
                    .front()
                    .is_some_and(|t| now.duration_since(*t) > *interval)
                {
                    self.failures.pop_front();
                }
                (self.failures.len() as u32 <= *max_failures).then_some(*delay)
            }
            RestartStrategy::ExponentialDelay {
                initial,
                max,
                multiplier,
                reset_threshold,
                jitter,
            } => {
                let quiet = self
                    .last_failure
                    .is_some_and(|t| now.duration_since(t) >= *reset_threshold);
                let next = match self.current_backoff {
                    Some(b) if !quiet => b.mul_f64(*multiplier).min(*max),
                    _ => *initial,
                };
                self.current_backoff = Some(next);
                Some(apply_jitter(next, *jitter, now))
            }
        };
        self.last_failure = Some(now);
        if delay.is_some() {
            self.restarts += 1;
        }
        delay
    }
}

/// `delay` spread by up to ±`jitter` of itself, from a cheap time-seeded
/// value (the spread only needs to differ between jobs, not be random).
fn apply_jitter(delay: Duration, jitter: f64, now: Instant) -> Duration {
    if jitter <= 0.0 {
        return delay;
    }
    let seed = now.elapsed().subsec_nanos() ^ std::process::id();
    let unit = f64::from(seed % 2001) / 1000.0 - 1.0; // in [-1, 1]
    delay.mul_f64((1.0 + jitter * unit).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_grants_its_attempts_then_fails() {
        let mut t = RestartTracker::new(RestartStrategy::fixed_delay(2, Duration::from_millis(5)));
        let now = Instant::now();
        assert_eq!(t.on_failure(now), Some(Duration::from_millis(5)));
        assert_eq!(t.on_failure(now), Some(Duration::from_millis(5)));
        assert_eq!(t.on_failure(now), None);
        assert_eq!(t.restarts(), 2);
    }

    #[test]
    fn failure_rate_counts_failures_within_the_interval() {
        let mut t = RestartTracker::new(RestartStrategy::FailureRate {
            max_failures: 2,
            interval: Duration::from_secs(60),
            delay: Duration::ZERO,
        });
        let start = Instant::now();
        assert!(t.on_failure(start).is_some());
        assert!(t.on_failure(start + Duration::from_secs(1)).is_some());
        assert!(t.on_failure(start + Duration::from_secs(2)).is_none());
        // Two minutes later the old failures no longer count.
        assert!(t.on_failure(start + Duration::from_secs(122)).is_some());
    }

    #[test]
    fn exponential_delay_grows_caps_and_resets() {
        let mut t = RestartTracker::new(RestartStrategy::ExponentialDelay {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(3),
            multiplier: 2.0,
            reset_threshold: Duration::from_secs(100),
            jitter: 0.0,
        });
        let s = Instant::now();
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs());
        assert_eq!(secs(t.on_failure(s)), Some(1));
        assert_eq!(secs(t.on_failure(s + Duration::from_secs(1))), Some(2));
        assert_eq!(secs(t.on_failure(s + Duration::from_secs(2))), Some(3));
        assert_eq!(secs(t.on_failure(s + Duration::from_secs(3))), Some(3));
        assert_eq!(secs(t.on_failure(s + Duration::from_secs(200))), Some(1));
    }

    #[test]
    fn none_never_restarts() {
        let mut t = RestartTracker::new(RestartStrategy::None);
        assert_eq!(t.on_failure(Instant::now()), None);
    }
}
