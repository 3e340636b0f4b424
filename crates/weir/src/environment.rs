//! The entry point of every job (Flink's `StreamExecutionEnvironment`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use weir_runtime::checkpoint::{CheckpointConfig, CheckpointingMode};
use weir_runtime::cluster::{self, JobClient, JobConfig, JobExecutionResult};
use weir_runtime::graph::{NodeFactory, StreamGraph, TypeOf};
use weir_runtime::recovery::RestartStrategy;
use weir_runtime::time::SharedClock;
use weir_state::checkpoint_storage::load_path;
use weir_state::StateBackend;

use crate::args::{EngineArgs, ParameterTool};
use crate::checkpointing;
use crate::config::{keys, Configuration};
use crate::datastream::DataStream;
use crate::error::{Error, Result};
use crate::functions::SourceFunction;
use crate::source::{
    CollectionSource, GeneratorSource, SequenceSource, SocketTextSource, SplitSourceFunction,
    SplitWatermarkSource, TextFileSource,
};
use crate::watermark::WatermarkStrategy;

/// Job name used when none is given (Flink's).
pub const DEFAULT_JOB_NAME: &str = "Weir Streaming Job";

/// Builds a dataflow program and runs it.
///
/// Cloning gives another handle to the same environment; every
/// [`DataStream`] holds one, so streams can add operators to the program.
#[derive(Clone)]
pub struct StreamExecutionEnvironment {
    inner: Arc<Mutex<EnvState>>,
}

pub(crate) struct EnvState {
    pub graph: StreamGraph,
    pub job: JobConfig,
    pub config: Configuration,
    pub args: ParameterTool,
    pub from_savepoint: Option<PathBuf>,
    /// Mistakes found while building (reported by `execute`).
    pub build_errors: Vec<String>,
}

impl Default for StreamExecutionEnvironment {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamExecutionEnvironment {
    /// An environment with the default configuration: parallelism 1, 128 key
    /// groups, 100 ms buffer timeout, chaining on.
    pub fn new() -> Self {
        StreamExecutionEnvironment {
            inner: Arc::new(Mutex::new(EnvState {
                graph: StreamGraph::new(),
                job: JobConfig::default(),
                config: Configuration::new(),
                args: ParameterTool::default(),
                from_savepoint: None,
                build_errors: Vec::new(),
            })),
        }
    }

    /// An environment configured from the process's command line: `-p N`,
    /// `-D key=value`, `--config FILE`, `--from-savepoint PATH`; the rest are
    /// the job's own arguments, in [`args`](Self::args).
    pub fn from_args() -> Result<Self> {
        Self::from_args_iter(std::env::args().skip(1))
    }

    /// As [`from_args`](Self::from_args), from the given arguments (without
    /// the program name).
    pub fn from_args_iter<I, S>(args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let parsed = EngineArgs::parse(args)?;
        let mut config = match &parsed.config_file {
            Some(path) => Configuration::from_yaml_file(path)?,
            None => Configuration::new(),
        };
        config.merge(&parsed.dynamic);
        if let Some(p) = parsed.parallelism {
            config.set(keys::PARALLELISM, p.to_string());
        }
        let env = Self::new();
        env.configure(&config)?;
        {
            let mut state = env.state();
            state.args = parsed.job;
            if parsed.from_savepoint.is_some() {
                state.from_savepoint = parsed.from_savepoint;
            }
            if parsed.allow_non_restored_state {
                state.job.allow_non_restored_state = true;
            }
        }
        Ok(env)
    }

    /// Applies the keys of `config` (later calls in code still override).
    pub fn configure(&self, config: &Configuration) -> Result<()> {
        crate::logging::init(config)?;
        for warning in config.unknown_key_warnings() {
            tracing::warn!("{warning}");
        }
        let mut state = self.state();
        let mut job = state.job.clone();
        if let Some(p) = config.get_u32(keys::PARALLELISM)? {
            job.parallelism = positive(keys::PARALLELISM, p)?;
        }
        if let Some(mp) = config.get_u32(keys::MAX_PARALLELISM)? {
            job.max_parallelism = max_parallelism(mp)?;
        }
        if let Some(timeout) = config.buffer_timeout()? {
            job.buffer_timeout = timeout;
        }
        // The backend is built from every key set so far, so that its
        // options may come in a later call than the backend type.
        let mut merged = state.config.clone();
        merged.merge(config);
        let touches_backend = config.get(keys::STATE_BACKEND).is_some()
            || keys::ROCKSDB_OPTIONS
                .iter()
                .any(|k| config.get(k).is_some());
        if let (true, Some(backend)) = (touches_backend, merged.get(keys::STATE_BACKEND)) {
            job.state_backend = match backend.trim().to_ascii_lowercase().as_str() {
                "hashmap" | "heap" => StateBackend::heap(),
                "rocksdb" => rocksdb_backend(&merged)?,
                other => {
                    return Err(Error::Config(format!(
                        "state.backend.type must be 'hashmap' or 'rocksdb', is '{other}'"
                    )))
                }
            };
        }
        if let Some(interval) = config.get_duration(keys::AUTO_WATERMARK_INTERVAL)? {
            job.auto_watermark_interval = interval;
        }
        if let Some(chaining) = config.chaining()? {
            job.chaining = chaining;
        }
        if let Some(chain) = config.chain_keyed_exchanges()? {
            job.chain_keyed_exchanges = chain;
        }
        if let Some(size) = config.get_u32(keys::BATCH_SIZE)? {
            job.batch_size = positive(keys::BATCH_SIZE, size)? as usize;
        }
        if let Some(id) = config.get(keys::JOB_ID) {
            job.job_id = Some(
                id.parse()
                    .map_err(|e| Error::Config(format!("{}: {e}", keys::JOB_ID)))?,
            );
        }
        if let Some(cap) = config.get_u32(keys::CHANNEL_CAPACITY)? {
            job.channel_capacity = positive(keys::CHANNEL_CAPACITY, cap)? as usize;
        }
        crate::object_storage::apply(&merged)?;
        checkpointing::apply_checkpoint_keys(config, &mut job.checkpoint)?;
        if let Some(strategy) = checkpointing::restart_strategy(&merged)? {
            job.restart_strategy = Some(strategy);
        }
        if let Some(path) = config
            .get(checkpointing::keys::RECOVERY_PATH)
            .or_else(|| config.get(checkpointing::keys::RECOVERY_PATH_LEGACY))
        {
            state.from_savepoint = Some(PathBuf::from(path.trim()));
        }
        if let Some(allow) = config
            .get_bool(checkpointing::keys::IGNORE_UNCLAIMED)?
            .or(config.get_bool(checkpointing::keys::IGNORE_UNCLAIMED_LEGACY)?)
        {
            job.allow_non_restored_state = allow;
        }
        state.job = job;
        state.config = merged;
        Ok(())
    }

    /// The configuration given by file, `-D` and [`configure`](Self::configure).
    pub fn config(&self) -> Configuration {
        self.state().config.clone()
    }

    /// The job's own command-line arguments.
    pub fn args(&self) -> ParameterTool {
        self.state().args.clone()
    }

    /// The savepoint given with `--from-savepoint`, if any.
    pub fn from_savepoint(&self) -> Option<PathBuf> {
        self.state().from_savepoint.clone()
    }

    /// Takes a checkpoint every `interval` (Flink's `enableCheckpointing`),
    /// exactly-once unless the mode is changed.
    pub fn enable_checkpointing(&self, interval: Duration) -> &Self {
        if interval < checkpointing::MIN_INTERVAL {
            // As Flink, which throws here: the job fails at `execute`.
            self.record_error(format!(
                "enable_checkpointing: the interval must be at least {} ms, is {} ms",
                checkpointing::MIN_INTERVAL.as_millis(),
                interval.as_millis()
            ));
            return self;
        }
        self.state().job.checkpoint.interval = Some(interval);
        self
    }

    /// Takes a checkpoint every `interval` with `mode`.
    pub fn enable_checkpointing_with_mode(
        &self,
        interval: Duration,
        mode: CheckpointingMode,
    ) -> &Self {
        self.enable_checkpointing(interval);
        self.state().job.checkpoint.mode = mode;
        self
    }

    /// The checkpoint settings.
    pub fn get_checkpoint_config(&self) -> CheckpointConfig {
        self.state().job.checkpoint.clone()
    }

    /// Replaces the checkpoint settings.
    pub fn set_checkpoint_config(&self, config: CheckpointConfig) -> &Self {
        self.state().job.checkpoint = config;
        self
    }

    /// Sets what happens when a task fails.
    pub fn set_restart_strategy(&self, strategy: RestartStrategy) -> &Self {
        self.state().job.restart_strategy = Some(strategy);
        self
    }

    /// Starts the job from a checkpoint or savepoint: its directory or its
    /// `_metadata` file (as `--from-savepoint`).
    pub fn set_from_savepoint(&self, path: impl Into<PathBuf>) -> &Self {
        self.state().from_savepoint = Some(path.into());
        self
    }

    /// Lets a restore drop state of operators the job no longer has.
    pub fn set_allow_non_restored_state(&self, allow: bool) -> &Self {
        self.state().job.allow_non_restored_state = allow;
        self
    }

    /// Sets the default parallelism of operators.
    pub fn set_parallelism(&self, parallelism: u32) -> &Self {
        match positive("parallelism", parallelism) {
            Ok(p) => self.state().job.parallelism = p,
            Err(e) => self.record_error(e.to_string()),
        }
        self
    }

    /// The default parallelism of operators.
    pub fn get_parallelism(&self) -> u32 {
        self.state().job.parallelism
    }

    /// Sets the number of key groups (default 128), the upper bound of any
    /// operator's parallelism and the granularity of rescaling.
    pub fn set_max_parallelism(&self, max_parallelism_value: u32) -> &Self {
        match max_parallelism(max_parallelism_value) {
            Ok(mp) => self.state().job.max_parallelism = mp,
            Err(e) => self.record_error(e.to_string()),
        }
        self
    }

    /// The number of key groups.
    pub fn get_max_parallelism(&self) -> u32 {
        self.state().job.max_parallelism
    }

    /// How long a partially filled output batch may wait before it is sent
    /// (default 100 ms). Zero sends after every input batch: lowest latency.
    pub fn set_buffer_timeout(&self, timeout: Duration) -> &Self {
        self.state().job.buffer_timeout = Some(timeout);
        self
    }

    /// Sends output batches only when full: highest throughput (Flink's
    /// `setBufferTimeout(-1)`).
    pub fn disable_buffer_timeout(&self) -> &Self {
        self.state().job.buffer_timeout = None;
        self
    }

    /// Sets how often periodic watermark generators emit (default 200 ms);
    /// zero disables periodic emission, leaving only punctuated watermarks.
    pub fn set_auto_watermark_interval(&self, interval: Duration) -> &Self {
        self.state().job.auto_watermark_interval = interval;
        self
    }

    /// The interval of periodic watermark emission.
    pub fn get_auto_watermark_interval(&self) -> Duration {
        self.state().job.auto_watermark_interval
    }

    /// Where keyed state lives.
    pub fn get_state_backend(&self) -> StateBackend {
        self.state().job.state_backend.clone()
    }

    /// Sets where keyed state lives (Flink's `state.backend.type`).
    pub fn set_state_backend(&self, backend: StateBackend) -> &Self {
        self.state().job.state_backend = backend;
        self
    }

    /// Replaces the processing-time clock, e.g. with a
    /// [`ManualClock`](weir_runtime::time::ManualClock) so that a test
    /// controls processing-time windows, timers, periodic watermarks and
    /// idleness.
    pub fn set_clock(&self, clock: SharedClock) -> &Self {
        self.state().job.clock = clock;
        self
    }

    /// Runs every operator in its own task (for debugging; slower).
    pub fn disable_operator_chaining(&self) -> &Self {
        self.state().job.chaining = false;
        self
    }

    /// A stream of the given elements, in order (not parallel).
    pub fn from_elements<T, I>(&self, elements: I) -> DataStream<T>
    where
        T: Clone + Send + Sync + 'static,
        I: IntoIterator<Item = T>,
    {
        self.from_collection(elements)
    }

    /// A stream of a collection's elements, in order (not parallel).
    pub fn from_collection<T, I>(&self, elements: I) -> DataStream<T>
    where
        T: Clone + Send + Sync + 'static,
        I: IntoIterator<Item = T>,
    {
        let elements: Arc<[T]> = elements.into_iter().collect();
        let source = CollectionSource::new(elements);
        self.add_source_node("Source: Collection Source", source, true)
    }

    /// A stream of an iterator's items (collected when the job is built).
    pub fn from_iter<T, I>(&self, items: I) -> DataStream<T>
    where
        T: Clone + Send + Sync + 'static,
        I: IntoIterator<Item = T>,
    {
        self.from_collection(items)
    }

    /// The numbers `from..=to`, split over parallel subtasks.
    pub fn from_sequence(&self, from: i64, to: i64) -> DataStream<i64> {
        self.add_source_node(
            "Source: Sequence Source",
            SequenceSource::new(from, to),
            false,
        )
    }

    /// `f(0), …, f(count - 1)`, split over parallel subtasks; for a rate
    /// limit or an endless generator, pass a [`GeneratorSource`] to
    /// [`add_parallel_source`](Self::add_parallel_source).
    pub fn from_generator<T, F>(&self, count: u64, f: F) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        F: Fn(u64) -> T + Send + Sync + 'static,
    {
        self.add_parallel_source(GeneratorSource::new(count, f), "Data Generator")
    }

    /// The lines of a text file (bounded). A missing file fails the job with
    /// an error naming the path.
    pub fn read_text_file(&self, path: impl AsRef<Path>) -> DataStream<String> {
        self.read_text_file_with(TextFileSource::new(path.as_ref()))
    }

    /// Lines of a file from a configured [`TextFileSource`] (e.g. with a
    /// rate limit).
    pub fn read_text_file_with(&self, source: TextFileSource) -> DataStream<String> {
        let name = format!("Source: {}", source.path().display());
        self.add_source_node(&name, source, true)
    }

    /// Lines from a TCP socket (unbounded; ends when the server closes, as
    /// Flink's default of no reconnects). `nc -lk 9999` is such a server.
    pub fn socket_text_stream(&self, host: &str, port: u16) -> DataStream<String> {
        self.socket_text_stream_with(SocketTextSource::new(host, port))
    }

    /// Lines from a socket configured with delimiter and reconnect attempts.
    pub fn socket_text_stream_with(&self, source: SocketTextSource) -> DataStream<String> {
        self.add_source_node("Source: Socket Stream", source, true)
    }

    /// A stream from a user's parallel source with event time: every source
    /// subtask assigns timestamps and generates watermarks with its own
    /// copy of `strategy`, so a slow subtask holds the watermark back and an
    /// idle one (with `with_idleness`) does not.
    pub fn from_source<T, S>(
        &self,
        source: S,
        strategy: WatermarkStrategy<T>,
        name: &str,
    ) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        S: SourceFunction<T> + Clone + Sync,
    {
        self.add_parallel_source(source, name)
            .assign_timestamps_and_watermarks(strategy)
    }

    /// A stream from a parallel source of several splits each, with a
    /// watermark generator per split: a lagging split holds the watermark
    /// back, an idle or finished one does not (Flink's per-split
    /// watermarks).
    pub fn from_split_source<T, S>(
        &self,
        source: S,
        strategy: WatermarkStrategy<T>,
        name: &str,
    ) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        S: SplitSourceFunction<T> + Clone + Sync,
    {
        let factory = NodeFactory::source(move |_| {
            Box::new(SplitWatermarkSource::new(source.clone(), strategy.clone()))
        });
        let id = self
            .with_graph(|g| g.add_node(format!("Source: {name}"), factory, TypeOf::<T>::shared()));
        DataStream::from_node(self.clone(), id)
    }

    /// A stream from a user's source function, run with parallelism 1.
    pub fn add_source<T, S>(&self, source: S, name: &str) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        S: SourceFunction<T> + Clone + Sync,
    {
        self.add_source_node(&format!("Source: {name}"), source, true)
    }

    /// A stream from a user's parallel source function: each subtask runs a
    /// clone and picks its share in `open`.
    pub fn add_parallel_source<T, S>(&self, source: S, name: &str) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        S: SourceFunction<T> + Clone + Sync,
    {
        self.add_source_node(&format!("Source: {name}"), source, false)
    }

    fn add_source_node<T, S>(&self, name: &str, source: S, max_one: bool) -> DataStream<T>
    where
        T: Clone + Send + 'static,
        S: SourceFunction<T> + Clone + Sync,
    {
        let factory = NodeFactory::source(move |_| Box::new(source.clone()));
        let id = {
            let mut state = self.state();
            let id = state.graph.add_node(name, factory, TypeOf::<T>::shared());
            state.graph.node_mut(id).max_one = max_one;
            id
        };
        DataStream::from_node(self.clone(), id)
    }

    /// Runs the program built so far and waits for it to finish (bounded
    /// sources), fail or be cancelled. The environment is then empty and can
    /// build another program.
    pub fn execute(&self, job_name: &str) -> Result<JobExecutionResult> {
        Ok(self.execute_async(job_name)?.wait()?)
    }

    /// Starts the program built so far and returns a client to wait for or
    /// cancel it.
    pub fn execute_async(&self, job_name: &str) -> Result<JobClient> {
        let (graph, job, config) = {
            let mut state = self.state();
            if !state.build_errors.is_empty() {
                let errors = std::mem::take(&mut state.build_errors);
                state.graph = StreamGraph::new();
                return Err(Error::InvalidJob(errors.join("; ")));
            }
            crate::logging::init(&state.config)?;
            for warning in state.args.unrequested_warnings() {
                tracing::warn!("{warning}");
            }
            let mut job = state.job.clone();
            // A job operated through its REST API can be savepointed even
            // without periodic checkpoints, as in Flink.
            job.savepoints_without_checkpointing = crate::rest::configured(&state.config);
            if let Some(path) = &state.from_savepoint {
                let (loaded, skipped) = load_path(path).map_err(|e| match e {
                    weir_state::StateError::NotACheckpoint(_) => {
                        Error::Config(format!("--from-savepoint: {e}"))
                    }
                    other => Error::Restore {
                        path: path.clone(),
                        reason: other.to_string(),
                    },
                })?;
                for (id, why) in skipped {
                    tracing::warn!(checkpoint = id, reason = %why, "skipping checkpoint {id}: {why}");
                }
                tracing::info!(location = %loaded.location, "restoring from {}", loaded.location);
                job.restore = Some(Arc::new(loaded));
            } else if let Some(loaded) = resume_point(&job)? {
                job.restore = Some(Arc::new(loaded));
            }
            (std::mem::take(&mut state.graph), job, state.config.clone())
        };
        // Bound before any task starts: a port in use fails the job before
        // a single record flows.
        let rest = crate::rest::bind(&config)?;
        let mut client = cluster::execute(graph, &job, job_name)?;
        if let Some(bound) = rest {
            if let Err(e) = crate::rest::serve(&mut client, bound, &config) {
                client.cancel();
                let _ = client.wait();
                return Err(e);
            }
        }
        Ok(client)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, EnvState> {
        // Building a program never panics while holding the lock in a way
        // that leaves the graph inconsistent, so a poisoned lock is usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn record_error(&self, error: String) {
        self.state().build_errors.push(error);
    }

    pub(crate) fn with_graph<R>(&self, f: impl FnOnce(&mut StreamGraph) -> R) -> R {
        f(&mut self.state().graph)
    }
}

/// The RocksDB backend with the `state.backend.rocksdb.*` options.
#[cfg(feature = "rocksdb")]
fn rocksdb_backend(config: &Configuration) -> Result<StateBackend> {
    use crate::config::parse_memory_size;
    let mut options = weir_state_rocksdb::RocksDbStateBackend::new(
        config
            .get(keys::ROCKSDB_LOCAL_DIR)
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir),
    );
    let size = |key: &str| -> Result<Option<usize>> {
        config
            .get(key)
            .map(|v| parse_memory_size(v).map_err(|e| Error::Config(format!("{key}: {e}"))))
            .transpose()
    };
    if let Some(bytes) = size(keys::ROCKSDB_BLOCK_CACHE)? {
        options.block_cache_bytes = bytes;
    }
    if let Some(bytes) = size(keys::ROCKSDB_WRITE_BUFFER)? {
        options.write_buffer_bytes = bytes;
    }
    if let Some(bytes) = size(keys::ROCKSDB_WRITE_BACK_CACHE)? {
        options.cache_bytes = bytes;
    }
    for key in [
        keys::ROCKSDB_METRICS_CACHE_HIT,
        keys::ROCKSDB_METRICS_CACHE_MISS,
    ] {
        options.statistics |= config.get_bool(key)?.unwrap_or(false);
    }
    Ok(options.into_state_backend())
}

#[cfg(not(feature = "rocksdb"))]
fn rocksdb_backend(_config: &Configuration) -> Result<StateBackend> {
    Err(Error::Config(
        "state.backend.type 'rocksdb': this build has no RocksDB backend; build with the \
         'rocksdb' feature (e.g. cargo run --features rocksdb ...)"
            .into(),
    ))
}

fn positive(what: &str, n: u32) -> Result<u32> {
    if n == 0 {
        Err(Error::Config(format!("{what} must be at least 1")))
    } else {
        Ok(n)
    }
}

fn max_parallelism(mp: u32) -> Result<u32> {
    if mp == 0 || mp > weir_state::MAX_MAX_PARALLELISM {
        Err(Error::Config(format!(
            "max parallelism must be between 1 and {}, is {mp}",
            weir_state::MAX_MAX_PARALLELISM
        )))
    } else {
        Ok(mp)
    }
}

/// A job with a fixed id resumes by itself: the newest checkpoint of that
/// id in its checkpoint directory that verifies (newer ones that do not
/// are reported and skipped), if there is one.
fn resume_point(job: &JobConfig) -> Result<Option<weir_state::LoadedCheckpoint>> {
    let (Some(id), true) = (job.job_id, job.checkpoint.is_enabled()) else {
        return Ok(None);
    };
    // The storage the job itself will write to (a new, empty one in memory).
    let storage = job
        .checkpoint
        .storage
        .open(&id.to_string())
        .map_err(|e| Error::Config(format!("{}: {e}", checkpointing::keys::DIR)))?;
    let (latest, skipped) =
        weir_state::checkpoint_storage::load_latest(&*storage).map_err(|e| Error::Restore {
            path: PathBuf::from(storage.location(0)),
            reason: e.to_string(),
        })?;
    for (chk, why) in skipped {
        tracing::warn!(
            job_id = %id,
            checkpoint = chk,
            reason = %why,
            "skipping checkpoint {chk} of job {id}: {why}"
        );
    }
    if let Some(loaded) = &latest {
        tracing::info!(
            job_id = %id,
            checkpoint = loaded.metadata.checkpoint_id,
            location = %loaded.location,
            "resuming job {id} from {} (its newest completed checkpoint)",
            loaded.location
        );
    }
    Ok(latest)
}
