//! Configuration: Flink's key names, from a YAML file, `-D` flags or code.
//!
//! Keys are flat strings (`parallelism.default`); a YAML file may nest them
//! (`parallelism: { default: 4 }`) or write them flat, as Flink's
//! `config.yaml` allows. Later sources override earlier ones: file, then
//! `-D key=value`, then calls in code.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use yaml_rust2::{Yaml, YamlLoader};

use crate::error::{Error, Result};

/// Well-known keys (Flink's names where Flink has one).
pub mod keys {
    /// Default parallelism of operators.
    pub const PARALLELISM: &str = "parallelism.default";
    /// Number of key groups.
    pub const MAX_PARALLELISM: &str = "pipeline.max-parallelism";
    /// How long a partial output batch may wait (`100 ms`; `-1` waits until full).
    pub const BUFFER_TIMEOUT: &str = "execution.buffer-timeout.interval";
    /// Flink 1.x name of [`BUFFER_TIMEOUT`], still accepted.
    pub const BUFFER_TIMEOUT_LEGACY: &str = "execution.buffer-timeout";
    /// Whether operators are chained.
    pub const OPERATOR_CHAINING: &str = "pipeline.operator-chaining.enabled";
    /// Flink 1.x name of [`OPERATOR_CHAINING`], still accepted.
    pub const OPERATOR_CHAINING_LEGACY: &str = "pipeline.operator-chaining";
    /// Whether a keyed exchange between two operators of parallelism 1 is
    /// chained (`true`: one thread, no record crosses threads) or, as
    /// Flink always does, splits the job into a task on each side of it
    /// (`false`: two threads, a pipeline over two cores). `auto` (the
    /// default): chained, except in a job with fewer tasks behind its
    /// sources than the process has cores (two or more), where exchanges
    /// are split (the first from the sources first) until it has a task
    /// per core besides its sources'.
    pub const CHAIN_KEYED_EXCHANGES: &str = "pipeline.operator-chaining.chain-keyed-exchanges";
    /// Interval of periodic watermarks.
    pub const AUTO_WATERMARK_INTERVAL: &str = "pipeline.auto-watermark-interval";
    /// Port of the REST API (`0`: any free port). A job serves its REST API
    /// when this (or [`REST_BIND_PORT`]) is set, as `weir run` does.
    pub const REST_PORT: &str = "rest.port";
    /// Flink's name for the port the server binds, preferred over
    /// [`REST_PORT`] when both are set.
    pub const REST_BIND_PORT: &str = "rest.bind-port";
    /// Address the REST API binds (default `127.0.0.1`).
    pub const REST_BIND_ADDRESS: &str = "rest.bind-address";
    /// Flink's client-side address, used to bind when
    /// [`REST_BIND_ADDRESS`] is not set.
    pub const REST_ADDRESS: &str = "rest.address";
    /// Weir's own: the bearer token calls that change the job must carry;
    /// required to bind beyond loopback.
    pub const REST_TOKEN: &str = "weir.rest.token";
    /// Where a job serving the REST API archives its answers when it ends
    /// (Flink's key; default `~/.local/share/weir/completed-jobs`, or
    /// under `$XDG_DATA_HOME`); `weir list -a` and `weir history-server`
    /// read it.
    pub const ARCHIVE_DIR: &str = "jobmanager.archive.fs.dir";
    /// State backend: `hashmap` or `rocksdb`.
    pub const STATE_BACKEND: &str = "state.backend.type";
    /// A fixed job id, 32 hexadecimal digits (Flink's key): the job's
    /// checkpoints stay in one directory across runs, and a run resumes
    /// from the newest of them by itself.
    pub const JOB_ID: &str = "$internal.pipeline.job-id";
    /// Working directory of RocksDB instances.
    pub const ROCKSDB_LOCAL_DIR: &str = "state.backend.rocksdb.localdir";
    /// Block cache size per RocksDB instance (default `8 mb`).
    pub const ROCKSDB_BLOCK_CACHE: &str = "state.backend.rocksdb.block.cache-size";
    /// Write buffer size per RocksDB instance (default `4 mb`; two are kept).
    pub const ROCKSDB_WRITE_BUFFER: &str = "state.backend.rocksdb.writebuffer.size";
    /// Weir's own: size of the write-back cache in front of each RocksDB
    /// instance (default `64 mb`; `0` disables it).
    pub const ROCKSDB_WRITE_BACK_CACHE: &str = "weir.state.rocksdb.write-back-cache.size";
    /// Flink's: RocksDB's block cache hits in the metrics (turns on
    /// RocksDB's statistics, which cost a little on every read).
    pub const ROCKSDB_METRICS_CACHE_HIT: &str = "state.backend.rocksdb.metrics.block-cache-hit";
    /// Flink's: RocksDB's block cache misses in the metrics (as above).
    pub const ROCKSDB_METRICS_CACHE_MISS: &str = "state.backend.rocksdb.metrics.block-cache-miss";
    /// The options the RocksDB backend reads.
    pub const ROCKSDB_OPTIONS: [&str; 6] = [
        ROCKSDB_LOCAL_DIR,
        ROCKSDB_BLOCK_CACHE,
        ROCKSDB_WRITE_BUFFER,
        ROCKSDB_WRITE_BACK_CACHE,
        ROCKSDB_METRICS_CACHE_HIT,
        ROCKSDB_METRICS_CACHE_MISS,
    ];
    /// Weir's own: records per batch on a channel between tasks.
    pub const BATCH_SIZE: &str = "weir.exchange.batch-size";
    /// Weir's own: batches a channel holds before its producer blocks.
    pub const CHANNEL_CAPACITY: &str = "weir.exchange.channel-capacity";
}

/// Every key Weir reads. A key outside this list is reported (with the
/// closest known key) instead of being silently ignored: a misspelt
/// `execution.checkpointing.interval` would otherwise run a job without
/// checkpoints.
pub fn known_keys() -> impl Iterator<Item = &'static str> {
    use crate::checkpointing::keys as chk;
    [
        keys::PARALLELISM,
        keys::MAX_PARALLELISM,
        keys::BUFFER_TIMEOUT,
        keys::BUFFER_TIMEOUT_LEGACY,
        keys::OPERATOR_CHAINING,
        keys::OPERATOR_CHAINING_LEGACY,
        keys::CHAIN_KEYED_EXCHANGES,
        keys::AUTO_WATERMARK_INTERVAL,
        keys::REST_PORT,
        keys::REST_BIND_PORT,
        keys::REST_BIND_ADDRESS,
        keys::REST_ADDRESS,
        keys::REST_TOKEN,
        keys::ARCHIVE_DIR,
        keys::STATE_BACKEND,
        keys::JOB_ID,
        keys::BATCH_SIZE,
        keys::CHANNEL_CAPACITY,
        chk::INTERVAL,
        chk::MODE,
        chk::TIMEOUT,
        chk::MIN_PAUSE,
        chk::MAX_CONCURRENT,
        chk::TOLERABLE_FAILURES,
        chk::RETENTION,
        chk::NUM_RETAINED,
        chk::DIR,
        chk::DIR_LEGACY,
        chk::STORAGE,
        chk::SAVEPOINT_DIR,
        chk::RECOVERY_PATH,
        chk::RECOVERY_PATH_LEGACY,
        chk::IGNORE_UNCLAIMED,
        chk::IGNORE_UNCLAIMED_LEGACY,
        chk::RESTART,
        chk::FIXED_ATTEMPTS,
        chk::FIXED_DELAY,
        chk::RATE_MAX,
        chk::RATE_INTERVAL,
        chk::RATE_DELAY,
        chk::EXP_INITIAL,
        chk::EXP_MAX,
        chk::EXP_MULTIPLIER,
        chk::EXP_RESET,
        chk::EXP_JITTER,
    ]
    .into_iter()
    .chain(keys::ROCKSDB_OPTIONS)
    .chain(crate::object_storage::keys::ALL)
    .chain([crate::logging::keys::LEVEL, crate::logging::keys::FORMAT])
}

/// The known key closest to `key`, if one is close enough to be a likely
/// misspelling.
pub fn closest_known_key(key: &str) -> Option<&'static str> {
    let (best, distance) = known_keys()
        .map(|k| (k, edit_distance(key, k)))
        .min_by_key(|(_, d)| *d)?;
    (distance <= (key.len() / 4).max(2)).then_some(best)
}

/// Levenshtein distance over bytes (keys are ASCII).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// A set of configuration keys and values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configuration {
    values: BTreeMap<String, String>,
}

impl Configuration {
    /// An empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a YAML file; nested maps become dotted keys.
    pub fn from_yaml_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|cause| Error::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Self::from_yaml_str(&text).map_err(|e| match e {
            Error::Config(why) => Error::Config(format!("in '{}': {why}", path.display())),
            other => other,
        })
    }

    /// Parses YAML text; nested maps become dotted keys.
    pub fn from_yaml_str(text: &str) -> Result<Self> {
        let docs = YamlLoader::load_from_str(text)
            .map_err(|e| Error::Config(format!("invalid YAML: {e}")))?;
        let mut config = Configuration::new();
        for doc in &docs {
            match doc {
                Yaml::Hash(_) => flatten("", doc, &mut config.values)?,
                Yaml::Null => {}
                _ => return Err(Error::Config("the YAML document must be a map".into())),
            }
        }
        Ok(config)
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.values.insert(key.into(), value.into());
        self
    }

    /// Copies every key of `other` over this one.
    pub fn merge(&mut self, other: &Configuration) {
        for (k, v) in &other.values {
            self.values.insert(k.clone(), v.clone());
        }
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of the first of `keys` that is set.
    fn get_any<'a>(&'a self, keys: &[&'a str]) -> Option<(&'a str, &'a str)> {
        keys.iter().find_map(|k| self.get(k).map(|v| (*k, v)))
    }

    /// `key` parsed as an integer.
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>> {
        self.get(key)
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| Error::Config(format!("{key}: '{v}' is not a whole number")))
            })
            .transpose()
    }

    /// `key` parsed as a boolean (`true`/`false`).
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        self.get_bool_any(&[key])
    }

    fn get_bool_any(&self, keys: &[&str]) -> Result<Option<bool>> {
        self.get_any(keys)
            .map(|(key, v)| match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(Error::Config(format!("{key}: '{v}' is not true or false"))),
            })
            .transpose()
    }

    /// `key` parsed as a duration (`100 ms`, `10s`, `1 min`; a bare number is ms).
    pub fn get_duration(&self, key: &str) -> Result<Option<Duration>> {
        self.get(key)
            .map(|v| parse_duration(v).map_err(|e| Error::Config(format!("{key}: {e}"))))
            .transpose()
    }

    /// The buffer timeout: `Some(None)` for `-1` (wait until full).
    pub(crate) fn buffer_timeout(&self) -> Result<Option<Option<Duration>>> {
        let Some((key, v)) = self.get_any(&[keys::BUFFER_TIMEOUT, keys::BUFFER_TIMEOUT_LEGACY])
        else {
            return Ok(None);
        };
        if v.trim() == "-1" {
            return Ok(Some(None));
        }
        parse_duration(v)
            .map(|d| Some(Some(d)))
            .map_err(|e| Error::Config(format!("{key}: {e}")))
    }

    /// Whether operator chaining is enabled, if set.
    pub(crate) fn chaining(&self) -> Result<Option<bool>> {
        self.get_bool_any(&[keys::OPERATOR_CHAINING, keys::OPERATOR_CHAINING_LEGACY])
    }

    /// Whether keyed exchanges at parallelism 1 are chained, if set:
    /// `Some(None)` for `auto`, chained unless cores would be left idle.
    pub(crate) fn chain_keyed_exchanges(&self) -> Result<Option<Option<bool>>> {
        let key = keys::CHAIN_KEYED_EXCHANGES;
        self.get(key)
            .map(|v| match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                "auto" => Ok(None),
                _ => Err(Error::Config(format!(
                    "{key}: '{v}' is not true, false or auto"
                ))),
            })
            .transpose()
    }

    /// One warning per key Weir does not read, naming the closest known
    /// key when there is one.
    pub fn unknown_key_warnings(&self) -> Vec<String> {
        self.values
            .keys()
            .filter(|k| !known_keys().any(|known| known == k.as_str()))
            .map(|k| match closest_known_key(k) {
                Some(close) => {
                    format!("unknown configuration key '{k}' is ignored (did you mean {close}?)")
                }
                None => format!("unknown configuration key '{k}' is ignored"),
            })
            .collect()
    }

    /// All keys and values, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

fn flatten(prefix: &str, yaml: &Yaml, out: &mut BTreeMap<String, String>) -> Result<()> {
    match yaml {
        Yaml::Hash(map) => {
            for (k, v) in map {
                let key = scalar(k)
                    .ok_or_else(|| Error::Config(format!("non-scalar key under '{prefix}'")))?;
                let full = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&full, v, out)?;
            }
        }
        Yaml::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(scalar).collect();
            out.insert(prefix.to_string(), parts.join(";"));
        }
        Yaml::Null => {}
        other => {
            if let Some(v) = scalar(other) {
                out.insert(prefix.to_string(), v);
            }
        }
    }
    Ok(())
}

fn scalar(yaml: &Yaml) -> Option<String> {
    match yaml {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses a memory size as Flink writes them: `64 mb`, `1gb`, `512 kb`; a
/// bare number is bytes.
pub fn parse_memory_size(text: &str) -> std::result::Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: usize = number
        .parse()
        .map_err(|_| format!("'{text}' is not a memory size (e.g. '64 mb')"))?;
    let factor: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        other => return Err(format!("unknown memory unit '{other}' in '{text}'")),
    };
    Ok(n.saturating_mul(factor))
}

/// Parses a duration as Flink writes them: `100 ms`, `10s`, `1 min`, `2 h`,
/// `1 d`; a bare number is milliseconds.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. '100 ms', '10 s')"))?;
    let ms_per_unit: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        other => return Err(format!("unknown time unit '{other}' in '{text}'")),
    };
    Ok(Duration::from_millis(n.saturating_mul(ms_per_unit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_flat_yaml_give_the_same_keys() {
        let nested = Configuration::from_yaml_str(
            "parallelism:\n  default: 4\npipeline:\n  max-parallelism: 256\n",
        )
        .unwrap();
        let flat =
            Configuration::from_yaml_str("parallelism.default: 4\npipeline.max-parallelism: 256\n")
                .unwrap();
        assert_eq!(nested, flat);
        assert_eq!(nested.get_u32(keys::PARALLELISM).unwrap(), Some(4));
    }

    #[test]
    fn durations_parse_like_flink() {
        assert_eq!(parse_duration("100 ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2 min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("ten seconds").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn buffer_timeout_minus_one_waits_until_full() {
        let mut c = Configuration::new();
        c.set(keys::BUFFER_TIMEOUT_LEGACY, "-1");
        assert_eq!(c.buffer_timeout().unwrap(), Some(None));
        c.set(keys::BUFFER_TIMEOUT, "5 ms");
        assert_eq!(
            c.buffer_timeout().unwrap(),
            Some(Some(Duration::from_millis(5)))
        );
    }

    #[test]
    fn misspelt_keys_are_reported_with_the_closest_known_key() {
        let mut c = Configuration::new();
        c.set("execution.checkpointng.interval", "1s");
        c.set("state.backend.type", "rocksdb");
        c.set("my.own.setting", "x");
        let warnings = c.unknown_key_warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("'execution.checkpointng.interval'")
                && warnings[0].contains("did you mean execution.checkpointing.interval?"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("'my.own.setting'") && !warnings[1].contains("did you mean"),
            "{warnings:?}"
        );
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(
            closest_known_key("paralelism.default"),
            Some(keys::PARALLELISM)
        );
        assert_eq!(closest_known_key("rest.prot"), Some(keys::REST_PORT));
    }

    #[test]
    fn a_bad_file_is_named_once() {
        let path = std::env::temp_dir().join(format!("weir-bad-{}.yaml", std::process::id()));
        std::fs::write(&path, "- a list\n").unwrap();
        let err = Configuration::from_yaml_file(&path)
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            err,
            format!(
                "configuration error: in '{}': the YAML document must be a map",
                path.display()
            )
        );
    }

    #[test]
    fn bad_values_are_named() {
        let mut c = Configuration::new();
        c.set(keys::PARALLELISM, "four");
        let err = c.get_u32(keys::PARALLELISM).unwrap_err().to_string();
        assert!(err.contains("parallelism.default"), "{err}");
    }
}
