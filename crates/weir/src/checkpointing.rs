//! Checkpointing and restart settings from configuration keys, with
//! Flink's names (`execution.checkpointing.*`, `restart-strategy.*`).

use std::path::PathBuf;
use std::time::Duration;

use weir_runtime::checkpoint::{
    CheckpointConfig, CheckpointRetention, CheckpointStorageConfig, CheckpointingMode,
};
use weir_runtime::recovery::RestartStrategy;

use crate::config::Configuration;
use crate::error::{Error, Result};

/// The keys read here.
pub mod keys {
    /// Time between checkpoints; checkpointing is off without it.
    pub const INTERVAL: &str = "execution.checkpointing.interval";
    /// `EXACTLY_ONCE` (default) or `AT_LEAST_ONCE`.
    pub const MODE: &str = "execution.checkpointing.mode";
    /// Checkpoint timeout (`10 min`).
    pub const TIMEOUT: &str = "execution.checkpointing.timeout";
    /// Least pause between checkpoints (`0 ms`).
    pub const MIN_PAUSE: &str = "execution.checkpointing.min-pause";
    /// Concurrent checkpoints (only 1 is supported).
    pub const MAX_CONCURRENT: &str = "execution.checkpointing.max-concurrent-checkpoints";
    /// Failed checkpoints in a row tolerated (0).
    pub const TOLERABLE_FAILURES: &str = "execution.checkpointing.tolerable-failed-checkpoints";
    /// `NO_EXTERNALIZED_CHECKPOINTS`, `RETAIN_ON_CANCELLATION`, `DELETE_ON_CANCELLATION`.
    pub const RETENTION: &str = "execution.checkpointing.externalized-checkpoint-retention";
    /// Completed checkpoints kept (1).
    pub const NUM_RETAINED: &str = "execution.checkpointing.num-retained";
    /// Directory of checkpoints (`file:///…` or a path).
    pub const DIR: &str = "execution.checkpointing.dir";
    /// Flink 1.x name of [`DIR`].
    pub const DIR_LEGACY: &str = "state.checkpoints.dir";
    /// `jobmanager` (memory) or `filesystem`.
    pub const STORAGE: &str = "execution.checkpointing.storage";
    /// Default directory of savepoints.
    pub const SAVEPOINT_DIR: &str = "execution.checkpointing.savepoint-dir";
    /// A checkpoint or savepoint to start from (as `-s`).
    pub const RECOVERY_PATH: &str = "execution.state-recovery.path";
    /// Flink 1.x name of [`RECOVERY_PATH`].
    pub const RECOVERY_PATH_LEGACY: &str = "execution.savepoint.path";
    /// Whether state of removed operators may be dropped on restore.
    pub const IGNORE_UNCLAIMED: &str = "execution.state-recovery.ignore-unclaimed-state";
    /// Flink 1.x name of [`IGNORE_UNCLAIMED`].
    pub const IGNORE_UNCLAIMED_LEGACY: &str = "execution.savepoint.ignore-unclaimed-state";
    /// `none`, `fixed-delay`, `failure-rate` or `exponential-delay`.
    pub const RESTART: &str = "restart-strategy.type";
    /// Fixed delay: restarts allowed (1).
    pub const FIXED_ATTEMPTS: &str = "restart-strategy.fixed-delay.attempts";
    /// Fixed delay: wait (1 s).
    pub const FIXED_DELAY: &str = "restart-strategy.fixed-delay.delay";
    /// Failure rate: failures per interval (1).
    pub const RATE_MAX: &str = "restart-strategy.failure-rate.max-failures-per-interval";
    /// Failure rate: interval (1 min).
    pub const RATE_INTERVAL: &str = "restart-strategy.failure-rate.failure-rate-interval";
    /// Failure rate: wait (1 s).
    pub const RATE_DELAY: &str = "restart-strategy.failure-rate.delay";
    /// Exponential delay: first wait (1 s).
    pub const EXP_INITIAL: &str = "restart-strategy.exponential-delay.initial-backoff";
    /// Exponential delay: longest wait (1 min).
    pub const EXP_MAX: &str = "restart-strategy.exponential-delay.max-backoff";
    /// Exponential delay: growth (1.5).
    pub const EXP_MULTIPLIER: &str = "restart-strategy.exponential-delay.backoff-multiplier";
    /// Exponential delay: quiet time that resets the wait (1 h).
    pub const EXP_RESET: &str = "restart-strategy.exponential-delay.reset-backoff-threshold";
    /// Exponential delay: jitter (0.1).
    pub const EXP_JITTER: &str = "restart-strategy.exponential-delay.jitter-factor";
}

/// The shortest checkpoint interval (Flink's `MINIMAL_CHECKPOINT_TIME`).
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

fn enum_value(config: &Configuration, key: &str) -> Option<String> {
    config
        .get(key)
        .map(|v| v.trim().to_ascii_uppercase().replace('-', "_"))
}

fn float(config: &Configuration, key: &str) -> Result<Option<f64>> {
    config
        .get(key)
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| Error::Config(format!("{key}: '{v}' is not a number")))
        })
        .transpose()
}

/// Applies the checkpointing keys of `config` to `c`.
pub(crate) fn apply_checkpoint_keys(
    config: &Configuration,
    c: &mut CheckpointConfig,
) -> Result<()> {
    if let Some(interval) = config.get_duration(keys::INTERVAL)? {
        // Flink's minimum; an interval of 0 does not mean "off" there
        // either: leaving the key unset does.
        if interval < MIN_INTERVAL {
            return Err(Error::Config(format!(
                "{}: {} ms is below the minimum of {} ms (leave the key unset to \
                 disable checkpointing)",
                keys::INTERVAL,
                interval.as_millis(),
                MIN_INTERVAL.as_millis()
            )));
        }
        c.interval = Some(interval);
    }
    if let Some(mode) = enum_value(config, keys::MODE) {
        c.mode = match mode.as_str() {
            "EXACTLY_ONCE" => CheckpointingMode::ExactlyOnce,
            "AT_LEAST_ONCE" => CheckpointingMode::AtLeastOnce,
            _ => {
                return Err(Error::Config(format!(
                    "{}: must be EXACTLY_ONCE or AT_LEAST_ONCE, is '{mode}'",
                    keys::MODE
                )))
            }
        };
    }
    if let Some(t) = config.get_duration(keys::TIMEOUT)? {
        c.timeout = t;
    }
    if let Some(p) = config.get_duration(keys::MIN_PAUSE)? {
        c.min_pause = p;
    }
    if let Some(n) = config.get_u32(keys::MAX_CONCURRENT)? {
        if n != 1 {
            return Err(Error::Config(format!(
                "{}: only 1 concurrent checkpoint is supported, is {n}",
                keys::MAX_CONCURRENT
            )));
        }
        c.max_concurrent = n;
    }
    if let Some(n) = config.get_u32(keys::TOLERABLE_FAILURES)? {
        c.tolerable_failures = n;
    }
    if let Some(n) = config.get_u32(keys::NUM_RETAINED)? {
        c.num_retained = n.max(1) as usize;
    }
    if let Some(r) = enum_value(config, keys::RETENTION) {
        c.retention = match r.as_str() {
            "NO_EXTERNALIZED_CHECKPOINTS" => CheckpointRetention::NoExternalizedCheckpoints,
            "RETAIN_ON_CANCELLATION" => CheckpointRetention::RetainOnCancellation,
            "DELETE_ON_CANCELLATION" => CheckpointRetention::DeleteOnCancellation,
            _ => {
                return Err(Error::Config(format!(
                    "{}: must be NO_EXTERNALIZED_CHECKPOINTS, RETAIN_ON_CANCELLATION or \
                     DELETE_ON_CANCELLATION, is '{r}'",
                    keys::RETENTION
                )))
            }
        };
    }
    if let Some(dir) = config.get(keys::SAVEPOINT_DIR) {
        c.savepoint_dir = Some(PathBuf::from(dir.trim()));
    }
    let dir = config
        .get(keys::DIR)
        .or_else(|| config.get(keys::DIR_LEGACY));
    match (
        config
            .get(keys::STORAGE)
            .map(|s| s.trim().to_ascii_lowercase()),
        dir,
    ) {
        (Some(s), _) if s == "jobmanager" => c.storage = CheckpointStorageConfig::Memory,
        (Some(s), None) if s == "filesystem" => {
            return Err(Error::Config(format!(
                "{}: filesystem storage needs {}",
                keys::STORAGE,
                keys::DIR
            )))
        }
        (Some(s), _) if s != "filesystem" => {
            return Err(Error::Config(format!(
                "{}: must be jobmanager or filesystem, is '{s}'",
                keys::STORAGE
            )))
        }
        (_, Some(dir)) => c.storage = CheckpointStorageConfig::Directory(PathBuf::from(dir.trim())),
        _ => {}
    }
    Ok(())
}

/// The restart strategy `config` names, if it names one.
pub(crate) fn restart_strategy(config: &Configuration) -> Result<Option<RestartStrategy>> {
    let Some(kind) = config.get(keys::RESTART) else {
        return Ok(None);
    };
    let duration = |key: &str, default: Duration| -> Result<Duration> {
        Ok(config.get_duration(key)?.unwrap_or(default))
    };
    let second = Duration::from_secs(1);
    let strategy = match kind.trim().to_ascii_lowercase().as_str() {
        "none" | "off" | "disable" => RestartStrategy::None,
        "fixed-delay" | "fixeddelay" => RestartStrategy::FixedDelay {
            attempts: config.get_u32(keys::FIXED_ATTEMPTS)?.unwrap_or(1),
            delay: duration(keys::FIXED_DELAY, second)?,
        },
        "failure-rate" | "failurerate" => RestartStrategy::FailureRate {
            max_failures: config.get_u32(keys::RATE_MAX)?.unwrap_or(1),
            interval: duration(keys::RATE_INTERVAL, Duration::from_secs(60))?,
            delay: duration(keys::RATE_DELAY, second)?,
        },
        "exponential-delay" | "exponentialdelay" => {
            let RestartStrategy::ExponentialDelay {
                initial,
                max,
                multiplier,
                reset_threshold,
                jitter,
            } = RestartStrategy::exponential_delay()
            else {
                return Err(Error::Config("exponential-delay defaults".into()));
            };
            RestartStrategy::ExponentialDelay {
                initial: duration(keys::EXP_INITIAL, initial)?,
                max: duration(keys::EXP_MAX, max)?,
                multiplier: float(config, keys::EXP_MULTIPLIER)?.unwrap_or(multiplier),
                reset_threshold: duration(keys::EXP_RESET, reset_threshold)?,
                jitter: float(config, keys::EXP_JITTER)?.unwrap_or(jitter),
            }
        }
        other => {
            return Err(Error::Config(format!(
                "{}: must be none, fixed-delay, failure-rate or exponential-delay, is '{other}'",
                keys::RESTART
            )))
        }
    };
    Ok(Some(strategy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_checkpoint_keys_are_read() -> Result<()> {
        let mut config = Configuration::new();
        config
            .set(keys::INTERVAL, "500 ms")
            .set(keys::MODE, "at_least_once")
            .set(keys::TIMEOUT, "1 min")
            .set(keys::TOLERABLE_FAILURES, "3")
            .set(keys::RETENTION, "RETAIN_ON_CANCELLATION")
            .set(keys::NUM_RETAINED, "2")
            .set(keys::DIR_LEGACY, "file:///tmp/chk");
        let mut c = CheckpointConfig::default();
        apply_checkpoint_keys(&config, &mut c)?;
        assert_eq!(c.interval, Some(Duration::from_millis(500)));
        assert_eq!(c.mode, CheckpointingMode::AtLeastOnce);
        assert_eq!(c.timeout, Duration::from_secs(60));
        assert_eq!(c.tolerable_failures, 3);
        assert_eq!(c.retention, CheckpointRetention::RetainOnCancellation);
        assert_eq!(c.num_retained, 2);
        assert!(
            matches!(&c.storage, CheckpointStorageConfig::Directory(d) if d.to_str() == Some("file:///tmp/chk"))
        );
        Ok(())
    }

    #[test]
    fn defaults_are_flinks() {
        let c = CheckpointConfig::default();
        assert!(!c.is_enabled());
        assert_eq!(c.mode, CheckpointingMode::ExactlyOnce);
        assert_eq!(c.timeout, Duration::from_secs(600));
        assert_eq!(c.max_concurrent, 1);
        assert_eq!(c.tolerable_failures, 0);
        assert_eq!(c.num_retained, 1);
    }

    #[test]
    fn restart_strategies_parse_with_defaults() -> Result<()> {
        let mut config = Configuration::new();
        config
            .set(keys::RESTART, "fixed-delay")
            .set(keys::FIXED_ATTEMPTS, "3");
        assert_eq!(
            restart_strategy(&config)?,
            Some(RestartStrategy::fixed_delay(3, Duration::from_secs(1)))
        );
        config.set(keys::RESTART, "exponential-delay");
        assert_eq!(
            restart_strategy(&config)?,
            Some(RestartStrategy::exponential_delay())
        );
        config.set(keys::RESTART, "sometimes");
        assert!(restart_strategy(&config).is_err());
        let mut bad = Configuration::new();
        bad.set(keys::MODE, "twice");
        assert!(apply_checkpoint_keys(&bad, &mut CheckpointConfig::default()).is_err());
        Ok(())
    }
}
