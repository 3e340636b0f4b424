//! Command-line arguments: the engine's flags and the job's own.
//!
//! `StreamExecutionEnvironment::from_args` takes the engine's flags — `-p N`,
//! `-D key=value`, `--config FILE`, `--from-savepoint PATH` — and leaves the
//! rest to the job as a [`ParameterTool`] (Flink's class of that name):
//! `--input words.txt --port 9999 --verbose`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::config::Configuration;
use crate::error::{Error, Result};

/// The job's own arguments, as `--key value` pairs and flags.
///
/// Clones share the record of which keys the job asked for, so that the
/// environment can report arguments no one read
/// ([`unrequested`](Self::unrequested), Flink's
/// `getUnrequestedParameters`): a misspelt `--parallelism` would otherwise
/// be ignored without a word.
#[derive(Debug, Clone, Default)]
pub struct ParameterTool {
    values: BTreeMap<String, Option<String>>,
    positional: Vec<String>,
    requested: Arc<Mutex<BTreeSet<String>>>,
    /// Whether the job asked for its positional arguments.
    positional_requested: Arc<std::sync::atomic::AtomicBool>,
}

impl PartialEq for ParameterTool {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values && self.positional == other.positional
    }
}

impl Eq for ParameterTool {}

/// The engine's own long flags, for suggestions.
const ENGINE_FLAGS: [&str; 4] = [
    "parallelism",
    "config",
    "from-savepoint",
    "allow-non-restored-state",
];

impl ParameterTool {
    /// Parses `--key value`, `-key value`, `--key=value` and bare `--flag`s.
    /// A value may be a negative number (`--offset -5`); anything else that
    /// starts with `-` begins the next key.
    pub fn from_args<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        let mut tool = ParameterTool::default();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            let Some(key) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                tool.positional.push(arg.clone());
                i += 1;
                continue;
            };
            if let Some((k, v)) = key.split_once('=') {
                tool.values.insert(k.to_string(), Some(v.to_string()));
                i += 1;
                continue;
            }
            match args.get(i + 1) {
                Some(next) if !next.starts_with('-') || next.parse::<f64>().is_ok() => {
                    tool.values.insert(key.to_string(), Some(next.clone()));
                    i += 2;
                }
                _ => {
                    tool.values.insert(key.to_string(), None);
                    i += 1;
                }
            }
        }
        tool
    }

    fn request(&self, key: &str) {
        if let Ok(mut requested) = self.requested.lock() {
            requested.insert(key.to_string());
        }
    }

    /// The value of `--key`, if given with a value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.request(key);
        self.values.get(key).and_then(|v| v.as_deref())
    }

    /// The value of `--key`, or `default`.
    pub fn get_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get(key).unwrap_or(default)
    }

    /// The value of `--key`, which must be given.
    pub fn required(&self, key: &str) -> Result<&str> {
        self.get(key)
            .ok_or_else(|| Error::Config(format!("missing required argument --{key}")))
    }

    /// The value of `--key` parsed as `T`, if given.
    pub fn get_parsed<T: FromStr>(&self, key: &str) -> Result<Option<T>> {
        self.get(key)
            .map(|v| {
                v.parse::<T>()
                    .map_err(|_| Error::Config(format!("--{key}: cannot parse '{v}'")))
            })
            .transpose()
    }

    /// Whether `--key` was given, with or without a value.
    pub fn has(&self, key: &str) -> bool {
        self.request(key);
        self.values.contains_key(key)
    }

    /// The keys given that the job has not asked for (by `get`, `has` and
    /// the rest) so far, sorted.
    pub fn unrequested(&self) -> Vec<String> {
        let requested = self.requested.lock().map(|r| r.clone()).unwrap_or_default();
        self.values
            .keys()
            .filter(|k| !requested.contains(*k))
            .cloned()
            .collect()
    }

    /// One warning per argument the job did not read, naming the engine
    /// flag it resembles when there is one.
    pub(crate) fn unrequested_warnings(&self) -> Vec<String> {
        let positional_read = self
            .positional_requested
            .load(std::sync::atomic::Ordering::Relaxed);
        let unread_positional = self
            .positional
            .iter()
            .filter(|_| !positional_read)
            .map(|arg| format!("argument '{arg}' was not used by the job"));
        self.unrequested()
            .into_iter()
            .map(|key| {
                let close = ENGINE_FLAGS
                    .iter()
                    .find(|flag| crate::config::edit_distance(&key, flag) <= 2);
                match close {
                    Some(flag) => {
                        format!("argument --{key} was not used by the job (did you mean --{flag}?)")
                    }
                    None => format!("argument --{key} was not used by the job"),
                }
            })
            .chain(unread_positional)
            .collect()
    }

    /// Arguments that were neither keys nor values.
    pub fn positional(&self) -> &[String] {
        self.positional_requested
            .store(true, std::sync::atomic::Ordering::Relaxed);
        &self.positional
    }
}

/// The engine's flags, separated from the job's arguments.
#[derive(Debug, Clone, Default)]
pub(crate) struct EngineArgs {
    pub parallelism: Option<u32>,
    pub config_file: Option<PathBuf>,
    pub dynamic: Configuration,
    pub from_savepoint: Option<PathBuf>,
    pub allow_non_restored_state: bool,
    pub job: ParameterTool,
}

impl EngineArgs {
    pub fn parse<I, S>(args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut parsed = EngineArgs::default();
        let mut rest = Vec::new();
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| Error::Config(format!("{name} needs a value")))
            };
            match flag.as_str() {
                "-p" | "--parallelism" => {
                    let v = value(&flag)?;
                    let p = v.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        Error::Config(format!("{flag}: '{v}' is not a positive whole number"))
                    })?;
                    parsed.parallelism = Some(p);
                }
                "--config" => parsed.config_file = Some(PathBuf::from(value(&flag)?)),
                "-s" | "--from-savepoint" => {
                    parsed.from_savepoint = Some(PathBuf::from(value(&flag)?))
                }
                "-n" | "--allow-non-restored-state" | "--allowNonRestoredState" => {
                    parsed.allow_non_restored_state = true
                }
                "-D" => {
                    let kv = value("-D")?;
                    parsed.set_dynamic(&kv)?;
                }
                _ if flag.starts_with("-D") && flag.len() > 2 => parsed.set_dynamic(&arg[2..])?,
                _ => rest.push(arg),
            }
        }
        parsed.job = ParameterTool::from_args(rest);
        Ok(parsed)
    }

    fn set_dynamic(&mut self, kv: &str) -> Result<()> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::Config(format!("-D expects key=value, got '{kv}'")))?;
        if k.trim().is_empty() {
            return Err(Error::Config(format!("-D {kv}: the key is empty")));
        }
        self.dynamic.set(k.trim(), v.trim());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_the_job_never_read_are_reported() {
        let a = EngineArgs::parse([
            "--from-savepoint",
            "/chk/job-a/",
            "/chk/job-b/",
            "--input",
            "x",
            "--paralelism",
            "2",
            "--verbose",
        ])
        .unwrap();
        let job = a.job.clone();
        assert_eq!(job.get("input"), Some("x"));
        // Clones share what was asked for.
        assert!(a.job.has("verbose"));
        assert_eq!(a.job.unrequested(), vec!["paralelism".to_string()]);
        let warnings = a.job.unrequested_warnings();
        assert_eq!(
            warnings,
            vec![
                "argument --paralelism was not used by the job (did you mean --parallelism?)",
                "argument '/chk/job-b/' was not used by the job"
            ]
        );
        assert_eq!(a.job.positional(), ["/chk/job-b/"]);
        assert!(a.job.unrequested_warnings().len() == 1);
    }

    #[test]
    fn engine_flags_are_taken_and_the_rest_left_to_the_job() {
        let a = EngineArgs::parse([
            "-p",
            "4",
            "-D",
            "state.backend.type=rocksdb",
            "-Dpipeline.max-parallelism=256",
            "--config",
            "conf.yaml",
            "--from-savepoint",
            "/tmp/sp",
            "--input",
            "words.txt",
            "--verbose",
            "--offset",
            "-5",
        ])
        .unwrap();
        assert_eq!(a.parallelism, Some(4));
        assert_eq!(a.dynamic.get("state.backend.type"), Some("rocksdb"));
        assert_eq!(a.dynamic.get("pipeline.max-parallelism"), Some("256"));
        assert_eq!(a.config_file, Some(PathBuf::from("conf.yaml")));
        assert_eq!(a.from_savepoint, Some(PathBuf::from("/tmp/sp")));
        assert_eq!(a.job.get("input"), Some("words.txt"));
        assert!(a.job.has("verbose"));
        assert_eq!(a.job.get("verbose"), None);
        assert_eq!(a.job.get_parsed::<i64>("offset").unwrap(), Some(-5));
    }

    #[test]
    fn long_flags_accept_equals() {
        let a = EngineArgs::parse(["--parallelism=2", "--port=9999"]).unwrap();
        assert_eq!(a.parallelism, Some(2));
        assert_eq!(a.job.get("port"), Some("9999"));
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(EngineArgs::parse(["-p", "zero"]).is_err());
        assert!(EngineArgs::parse(["-p", "0"]).is_err());
        assert!(EngineArgs::parse(["-D", "novalue"]).is_err());
        let empty = EngineArgs::parse(["-D", "=1"]).unwrap_err().to_string();
        assert!(empty.contains("key is empty"), "{empty}");
        assert!(EngineArgs::parse(["-p"]).is_err());
        let job = ParameterTool::from_args(["--port", "x"]);
        assert!(job.get_parsed::<u16>("port").is_err());
        assert!(job.required("host").is_err());
    }
}
