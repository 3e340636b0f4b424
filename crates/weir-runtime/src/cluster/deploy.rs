//! From stream graph to running threads.
//!
//! Chaining follows Flink's rules: an operator joins its predecessor's task
//! when it has exactly that one input, the edge is forward, both have the
//! same parallelism, and neither end disabled chaining.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::sync::Mutex;

use crossbeam_channel::{Receiver, Sender};
use weir_state::{
    CheckpointStorage, LoadedCheckpoint, MemoryCheckpointStorage, NativeRestore,
    OperatorStateSnapshot, SubtaskSnapshot,
};

use super::job::{Attempt, JobClient, JobId, OperatorEntry, SavepointHandle};
use super::view::JobView;
use crate::cancel::CancelSource;
use crate::checkpoint::{
    CheckpointConfig, CheckpointPort, CheckpointStats, CheckpointingMode, Coordinator,
    CoordinatorMessage, OperatorInfo, SubtaskState, TaskMessage,
};
use crate::error::{JobError, TaskError};
use crate::exchange::ConnectionPattern;
use crate::graph::{
    ChainingStrategy, Erased, NodeFactory, NodeId, OutputParts, Partitioning, StreamGraph,
    StreamType, WriterContext,
};
use crate::metrics::OperatorMetrics;
use crate::operator::{RuntimeContext, SideOutputs};
use crate::provenance::{ChannelProbe, SubtaskProbe};
use crate::recovery::RestartStrategy;
use crate::task::TaskSettings;
use crate::time::{system_clock, SharedClock};

/// How a job runs (the runtime's share of the configuration).
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// Parallelism of operators that set none.
    pub parallelism: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// Records per batch on a channel.
    pub batch_size: usize,
    /// Batches a channel holds before its producer blocks.
    pub channel_capacity: usize,
    /// See [`TaskSettings::buffer_timeout`].
    pub buffer_timeout: Option<Duration>,
    /// Whether operators may be chained at all.
    pub chaining: bool,
    /// Whether a keyed exchange between two operators of parallelism 1 is
    /// chained (one thread) or runs as Flink runs it, a task on each side
    /// (two threads: more throughput where a core is free, more CPU per
    /// record for the crossing). `None` (the default): chained, except
    /// where the job's tasks behind its sources are fewer than
    /// [`JobConfig::cores`] (two or more); then such exchanges are split,
    /// the first from the sources first, until it has a task per core
    /// besides its sources'.
    pub chain_keyed_exchanges: Option<bool>,
    /// The cores the job may use (the process's available parallelism),
    /// for [`JobConfig::chain_keyed_exchanges`].
    pub cores: usize,
    /// The processing-time clock (the system clock unless a test sets one).
    pub clock: SharedClock,
    /// Interval of periodic watermarks (Flink's default 200 ms); zero disables.
    pub auto_watermark_interval: Duration,
    /// Where keyed state lives.
    pub state_backend: weir_state::StateBackend,
    /// Checkpointing (off unless an interval is set).
    pub checkpoint: CheckpointConfig,
    /// What happens when a task fails; `None`: Flink's default, which is
    /// exponential delay with checkpointing on and no restart without.
    pub restart_strategy: Option<RestartStrategy>,
    /// A checkpoint or savepoint to start from (Flink's `-s`).
    pub restore: Option<Arc<LoadedCheckpoint>>,
    /// The job's id when fixed (Flink's `$internal.pipeline.job-id`): its
    /// checkpoints then stay in one directory across runs. `None`: a new
    /// random id per run.
    pub job_id: Option<JobId>,
    /// Whether state of operators the job no longer has may be dropped
    /// on restore (Flink's `--allowNonRestoredState`).
    pub allow_non_restored_state: bool,
    /// Whether a job without periodic checkpoints still runs a checkpoint
    /// coordinator, so that savepoints can be taken (jobs serving a REST
    /// API do, as Flink takes savepoints of any job). Operators then see
    /// barriers and a final checkpoint when their input ends, as with
    /// checkpointing.
    pub savepoints_without_checkpointing: bool,
}

impl JobConfig {
    /// The restart strategy in effect.
    pub fn effective_restart_strategy(&self) -> RestartStrategy {
        match &self.restart_strategy {
            Some(s) => s.clone(),
            None if self.checkpoint.is_enabled() => RestartStrategy::exponential_delay(),
            None => RestartStrategy::None,
        }
    }
}

impl Default for JobConfig {
    fn default() -> Self {
        JobConfig {
            parallelism: 1,
            max_parallelism: weir_state::DEFAULT_MAX_PARALLELISM,
            batch_size: 1024,
            channel_capacity: 8,
            buffer_timeout: Some(Duration::from_millis(100)),
            chaining: true,
            chain_keyed_exchanges: None,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            clock: system_clock(),
            auto_watermark_interval: Duration::from_millis(200),
            state_backend: weir_state::StateBackend::heap(),
            checkpoint: CheckpointConfig::default(),
            restart_strategy: None,
            restore: None,
            job_id: None,
            allow_non_restored_state: false,
            savepoints_without_checkpointing: false,
        }
    }
}

struct Plan<'g> {
    graph: &'g StreamGraph,
    config: &'g JobConfig,
    parallelism: Vec<u32>,
    partitioning: Vec<Partitioning>,
    /// For each node, the edge it is chained behind.
    chained_behind: Vec<Option<usize>>,
    task_names: Vec<String>,
    metrics: Vec<Arc<OperatorMetrics>>,
    senders: HashMap<(usize, u32), Vec<Erased>>,
    /// Channel ends by edge and receiving subtask, with the sending subtask.
    receivers: HashMap<(usize, u32), Vec<(Erased, u32)>>,
    cancel: CancelSource,
    attempt_number: u32,
    job_id: String,
    /// The checkpoint restored, if any.
    restored_checkpoint: Option<u64>,
    /// Per node, what a restore brings.
    restored: Vec<Option<RestoredOperator>>,
    to_coordinator: Option<Sender<CoordinatorMessage>>,
    /// Whether keyed stores checkpoint their own files.
    native_snapshots: bool,
    mailboxes: HashMap<(usize, u32), Receiver<TaskMessage>>,
}

/// A node's state in the checkpoint being restored.
struct RestoredOperator {
    /// Snapshots by old subtask.
    subtasks: Vec<(u32, SubtaskSnapshot)>,
    /// Operator state, redistributed to the new parallelism.
    operator_state: Vec<OperatorStateSnapshot>,
    /// Whether the parallelism is unchanged (sources resume by subtask).
    same_parallelism: bool,
    /// Per new subtask, a keyed store's own files to open it from.
    native: Vec<Option<NativeRestore>>,
}

/// Validates `graph`, chains it, and starts its tasks. With checkpointing
/// on, a failed task restarts the job from its latest checkpoint as the
/// restart strategy allows ([`JobClient::wait`]).
pub fn execute(
    graph: StreamGraph,
    config: &JobConfig,
    job_name: &str,
) -> Result<JobClient, JobError> {
    if graph.nodes.is_empty() {
        return Err(JobError::InvalidJob(
            "no operators defined in streaming topology; cannot execute".into(),
        ));
    }
    let job_id = config.job_id.unwrap_or_else(JobId::random);
    let storage = config
        .checkpoint
        .is_enabled()
        .then(|| config.checkpoint.storage.open(&job_id.to_string()))
        .transpose()
        .map_err(|e| JobError::Storage(e.to_string()))?;
    if let Some(storage) = &storage {
        storage
            .prepare()
            .map_err(|e| JobError::Storage(e.to_string()))?;
    }
    let metrics: Vec<Arc<OperatorMetrics>> = graph.nodes.iter().map(|_| Arc::default()).collect();
    let coordinator: Arc<Mutex<Option<Sender<CoordinatorMessage>>>> = Arc::default();
    let cancel = CancelSource::new();
    let coordinated = storage.is_some() || config.savepoints_without_checkpointing;
    let savepoints = coordinated.then(|| {
        SavepointHandle::new(
            Arc::clone(&coordinator),
            // Generous: a savepoint waits for a checkpoint in flight first.
            config.checkpoint.timeout * 2,
            config.checkpoint.savepoint_dir.clone(),
        )
    });
    let view = JobView::new(
        job_id,
        job_name,
        cancel.clone(),
        savepoints,
        graph
            .nodes
            .iter()
            .zip(&metrics)
            .map(|(n, m)| (n.name.clone(), n.uid.clone(), Arc::clone(m)))
            .collect(),
        graph
            .edges
            .iter()
            .map(|e| super::view::EdgeView {
                from: e.from.0,
                to: e.to.0,
                ship_strategy: format!("{:?}", e.partitioning),
                side_output: e.side_output.clone(),
            })
            .collect(),
    );
    let job = JobShared {
        job_id,
        metrics,
        graph: Arc::new(graph),
        config: config.clone(),
        storage,
        coordinator,
        view,
    };
    let first_checkpoint = config
        .restore
        .as_ref()
        .map_or(1, |c| c.metadata.checkpoint_id + 1);
    let attempt = deploy(&job, config.restore.as_deref(), 0, first_checkpoint)?;
    let operators = job
        .graph
        .nodes
        .iter()
        .zip(&attempt.parallelism)
        .map(|(n, p)| OperatorEntry {
            name: n.name.clone(),
            uid: n.uid.clone(),
            parallelism: *p,
            metrics: Arc::clone(&job.metrics[n.id.0]),
        })
        .collect();
    Ok(JobClient {
        job_id,
        job_name: job_name.to_string(),
        started: Instant::now(),
        cancel,
        attempt: Some(attempt),
        operators,
        job,
        attachments: Vec::new(),
        rest_address: None,
    })
}

/// What every attempt of a job shares.
pub(crate) struct JobShared {
    pub job_id: JobId,
    pub graph: Arc<StreamGraph>,
    pub config: JobConfig,
    /// Per node; counters continue across restarts.
    pub metrics: Vec<Arc<OperatorMetrics>>,
    /// The job's checkpoints, with checkpointing on.
    pub storage: Option<Arc<dyn CheckpointStorage>>,
    /// The current attempt's coordinator, for savepoints.
    pub coordinator: Arc<Mutex<Option<Sender<CoordinatorMessage>>>>,
    /// What the job shows outside.
    pub view: JobView,
}

/// The id a node's state is stored under: its uid, or a hash of its
/// position and name in the graph (stable while the program's shape is).
pub fn operator_state_id(index: usize, name: &str, uid: Option<&str>) -> String {
    match uid {
        Some(uid) => uid.to_string(),
        None => {
            let mut bytes = (index as u64).to_le_bytes().to_vec();
            bytes.extend_from_slice(name.as_bytes());
            format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
        }
    }
}

/// Where a checkpoint's copy of a store's own files is.
fn native_restore(
    state: &weir_state::NativeState,
    checkpoint: &LoadedCheckpoint,
) -> Result<NativeRestore, JobError> {
    let dir = checkpoint.dir.as_ref().ok_or_else(|| {
        JobError::Internal(format!(
            "{} refers to files but is not on disk",
            checkpoint.location
        ))
    })?;
    Ok(NativeRestore {
        files: state
            .files
            .iter()
            .map(|f| (f.name.clone(), dir.join(&f.path)))
            .collect(),
        states: state.states.clone(),
    })
}

/// Starts the tasks (and, with checkpointing on, the coordinator) of one
/// attempt, restoring `restore` if given.
pub(crate) fn deploy(
    job: &JobShared,
    restore: Option<&LoadedCheckpoint>,
    attempt_number: u32,
    next_checkpoint_id: u64,
) -> Result<Attempt, JobError> {
    let graph = &*job.graph;
    let config = &job.config;
    let mut plan = Plan::new(graph, config, &job.metrics, restore)?;
    plan.attempt_number = attempt_number;
    plan.job_id = job.job_id.to_string();
    plan.create_channels();
    let stats = Arc::new(Mutex::new(CheckpointStats {
        restored: restore.map(|c| c.metadata.checkpoint_id),
        ..Default::default()
    }));
    // Without periodic checkpoints, a coordinator for savepoints keeps its
    // (final) checkpoints in memory.
    let coordinator_storage = job.storage.clone().or_else(|| {
        config
            .savepoints_without_checkpointing
            .then(|| Arc::new(MemoryCheckpointStorage::new()) as Arc<dyn CheckpointStorage>)
    });
    let coordinator_channel = coordinator_storage
        .as_ref()
        .map(|_| crossbeam_channel::unbounded());
    plan.to_coordinator = coordinator_channel.as_ref().map(|(tx, _)| tx.clone());
    plan.native_snapshots = job.storage.as_ref().is_some_and(|s| s.shares_files());
    let (result_tx, results) = crossbeam_channel::unbounded();
    let mut threads = Vec::new();
    let mut sources = Vec::new();
    let mut tasks = Vec::new();
    for metrics in &job.metrics {
        metrics.reset_running();
    }
    for node in &graph.nodes {
        if plan.chained_behind[node.id.0].is_some() {
            continue;
        }
        for subtask in 0..plan.parallelism[node.id.0] {
            if plan.to_coordinator.is_some() {
                let (tx, rx) = crossbeam_channel::unbounded();
                if matches!(node.factory, NodeFactory::Source(_)) {
                    sources.push(tx.clone());
                }
                tasks.push(tx);
                plan.mailboxes.insert((node.id.0, subtask), rx);
            }
            let head = match plan.build_head(node.id, subtask) {
                Ok(head) => head,
                Err(e) => {
                    plan.cancel.cancel();
                    return Err(e);
                }
            };
            let result_tx = result_tx.clone();
            // Every operator of the chain runs once the task opened.
            let chain: Vec<Arc<OperatorMetrics>> = graph
                .nodes
                .iter()
                .filter(|n| plan.task_head(n.id) == node.id)
                .map(|n| Arc::clone(&job.metrics[n.id.0]))
                .collect();
            let name = format!(
                "{} ({}/{})",
                plan.task_names[node.id.0],
                subtask + 1,
                plan.parallelism[node.id.0]
            );
            // Events inside the task name its job, task and subtask.
            let span = tracing::info_span!(
                "task",
                job_id = %plan.job_id,
                task = %plan.task_names[node.id.0],
                subtask = subtask,
            );
            let spawned = std::thread::Builder::new().name(name).spawn(move || {
                let _entered = span.enter();
                let result = catch_unwind(AssertUnwindSafe(|| {
                    head.run(&|| chain.iter().for_each(|m| m.subtask_running()))
                }))
                .unwrap_or_else(|_| {
                    Err(TaskError::Internal(
                        "task loop panicked outside an operator".into(),
                    ))
                });
                let _ = result_tx.send(result);
            });
            match spawned {
                Ok(handle) => threads.push(handle),
                Err(e) => {
                    plan.cancel.cancel();
                    return Err(JobError::Spawn(e));
                }
            }
        }
    }
    let coordinator = match (coordinator_channel, &coordinator_storage) {
        (Some((tx, rx)), Some(storage)) => {
            plan.to_coordinator = None;
            let coordinator = Coordinator {
                config: config.checkpoint.clone(),
                storage: Arc::clone(storage),
                job_id: job.job_id.to_string(),
                max_parallelism: config.max_parallelism,
                operators: graph
                    .nodes
                    .iter()
                    .map(|n| OperatorInfo {
                        id: operator_state_id(n.id.0, &n.name, n.uid.as_deref()),
                        name: n.name.clone(),
                        parallelism: plan.parallelism[n.id.0],
                    })
                    .collect(),
                sources,
                tasks,
                next_id: next_checkpoint_id,
                cancel: plan.cancel.clone(),
                stats: Arc::clone(&stats),
            };
            if let Ok(mut current) = job.coordinator.lock() {
                *current = Some(tx.clone());
            }
            match coordinator.start(tx, rx) {
                Ok(handle) => Some(handle),
                Err(e) => {
                    plan.cancel.cancel();
                    return Err(JobError::Spawn(e));
                }
            }
        }
        _ => None,
    };
    job.view
        .attempt_started(&plan.parallelism, Arc::clone(&stats));
    Ok(Attempt {
        cancel: plan.cancel.clone(),
        results,
        threads,
        coordinator,
        stats,
        parallelism: plan.parallelism.clone(),
    })
}

/// Splits the chains of `chained_behind` at keyed exchanges of parallelism
/// 1 (`keyed_at_one`), the first from the sources first, while fewer tasks
/// than `cores` run operators other than sources (`sources`, by node): a
/// job that is one chain on one thread then runs as a pipeline over the
/// cores it would leave idle, as Flink runs it. Sources' own tasks are not
/// counted: they read and hand records on, while the work the cores are
/// for is behind them (Nexmark q4's two sources left its join and both
/// aggregations on one thread, the job's bottleneck, and split after the
/// join it ran a tenth faster). A job with a task per core behind its
/// sources keeps its chains, which spend the least CPU per record.
fn split_for_cores(
    chained_behind: &mut [Option<usize>],
    parallelism: &[u32],
    sources: &[bool],
    cores: usize,
    keyed_at_one: impl Fn(usize) -> bool,
) {
    // One core has nothing to run a pipeline over.
    if cores < 2 {
        return;
    }
    let mut tasks: usize = chained_behind
        .iter()
        .zip(parallelism)
        .zip(sources)
        .filter(|((behind, _), &source)| behind.is_none() && !source)
        .map(|((_, &p), _)| p as usize)
        .sum();
    // Nodes are numbered as the program made them, each after its inputs.
    for behind in chained_behind.iter_mut() {
        if tasks >= cores {
            break;
        }
        if behind.is_some_and(&keyed_at_one) {
            *behind = None;
            tasks += 1;
        }
    }
}

impl<'g> Plan<'g> {
    fn new(
        graph: &'g StreamGraph,
        config: &'g JobConfig,
        metrics: &[Arc<OperatorMetrics>],
        restore: Option<&LoadedCheckpoint>,
    ) -> Result<Self, JobError> {
        // Operator state is matched by uid: two operators with one uid
        // would share (and overwrite) each other's state.
        let mut uids = std::collections::HashSet::new();
        for node in &graph.nodes {
            if let Some(uid) = &node.uid {
                if !uids.insert(uid.as_str()) {
                    return Err(JobError::InvalidJob(format!(
                        "the uid '{uid}' is set on more than one operator ('{}' and an \
                         earlier one); uids must be unique",
                        node.name
                    )));
                }
            }
        }
        let mut parallelism = Vec::with_capacity(graph.nodes.len());
        for node in &graph.nodes {
            let p = node
                .parallelism
                .unwrap_or(if node.max_one { 1 } else { config.parallelism });
            if p == 0 || p > config.max_parallelism {
                return Err(JobError::InvalidJob(format!(
                    "parallelism of '{}' must be between 1 and the max parallelism {}, is {p}",
                    node.name, config.max_parallelism
                )));
            }
            if node.max_one && p != 1 {
                return Err(JobError::InvalidJob(format!(
                    "'{}' is not a parallel operator; its parallelism must be 1, is {p}",
                    node.name
                )));
            }
            parallelism.push(p);
        }
        let mut partitioning = Vec::with_capacity(graph.edges.len());
        let mut in_edges = vec![Vec::new(); graph.nodes.len()];
        for (e, edge) in graph.edges.iter().enumerate() {
            let (from, to) = (graph.node(edge.from), graph.node(edge.to));
            let (p_from, p_to) = (parallelism[edge.from.0], parallelism[edge.to.0]);
            let resolved = match &edge.partitioning {
                Partitioning::Default if p_from == p_to => Partitioning::Forward,
                Partitioning::Default => Partitioning::Rebalance,
                Partitioning::Forward if p_from != p_to => {
                    return Err(JobError::InvalidJob(format!(
                        "forward partitioning does not allow change of parallelism: \
                         '{}' has parallelism {p_from}, '{}' has {p_to}; use rebalance, \
                         rescale, shuffle or broadcast",
                        from.name, to.name
                    )))
                }
                other => other.clone(),
            };
            if matches!(to.factory, NodeFactory::Source(_)) {
                return Err(JobError::Internal(format!(
                    "edge into source '{}'",
                    to.name
                )));
            }
            if let Some(tag) = &edge.side_output {
                if !from.side_outputs.iter().any(|(t, _)| t == tag) {
                    return Err(JobError::InvalidJob(format!(
                        "'{}' emits no side output '{tag}'",
                        from.name
                    )));
                }
            }
            partitioning.push(resolved);
            in_edges[edge.to.0].push(e);
        }
        // A keyed exchange whose sides both have parallelism 1.
        let keyed_at_one = |e: usize| {
            let edge = &graph.edges[e];
            matches!(&partitioning[e], Partitioning::Custom(w) if w.chains_at_parallelism_one())
                && parallelism[edge.from.0] == 1
                && parallelism[edge.to.0] == 1
        };
        let mut chained_behind: Vec<Option<usize>> = graph
            .nodes
            .iter()
            .map(|node| {
                let [e] = in_edges[node.id.0][..] else {
                    return None;
                };
                let edge = &graph.edges[e];
                let from = graph.node(edge.from);
                let forward = match &partitioning[e] {
                    Partitioning::Forward => true,
                    Partitioning::Custom(_) => {
                        config.chain_keyed_exchanges != Some(false) && keyed_at_one(e)
                    }
                    _ => false,
                };
                let chainable = config.chaining
                    && forward
                    && parallelism[edge.from.0] == parallelism[node.id.0]
                    && matches!(node.factory, NodeFactory::OneInput(_))
                    && node.chaining == ChainingStrategy::Always
                    && from.chaining != ChainingStrategy::Never;
                chainable.then_some(e)
            })
            .collect();
        if config.chain_keyed_exchanges.is_none() {
            let sources: Vec<bool> = graph
                .nodes
                .iter()
                .map(|n| matches!(n.factory, NodeFactory::Source(_)))
                .collect();
            split_for_cores(
                &mut chained_behind,
                &parallelism,
                &sources,
                config.cores,
                keyed_at_one,
            );
        }
        let mut plan = Plan {
            graph,
            config,
            parallelism,
            partitioning,
            chained_behind,
            task_names: Vec::new(),
            metrics: metrics.to_vec(),
            senders: HashMap::new(),
            receivers: HashMap::new(),
            cancel: CancelSource::new(),
            attempt_number: 0,
            job_id: String::new(),
            restored_checkpoint: restore.map(|c| c.metadata.checkpoint_id),
            restored: Vec::new(),
            to_coordinator: None,
            native_snapshots: false,
            mailboxes: HashMap::new(),
        };
        if let Some(checkpoint) = restore {
            plan.restored = plan.match_restored(checkpoint)?;
        }
        plan.task_names = graph.nodes.iter().map(|n| plan.chain_name(n.id)).collect();
        Ok(plan)
    }

    /// Assigns the operators of `checkpoint` to nodes by id, refusing state
    /// that fits no node (unless allowed) and a changed max parallelism.
    fn match_restored(
        &self,
        checkpoint: &LoadedCheckpoint,
    ) -> Result<Vec<Option<RestoredOperator>>, JobError> {
        let meta = &checkpoint.metadata;
        if meta.max_parallelism != self.config.max_parallelism {
            return Err(JobError::InvalidJob(format!(
                "{} was taken with max parallelism {}, the job has {}; the max parallelism \
                 cannot change across a restore",
                checkpoint.location, meta.max_parallelism, self.config.max_parallelism
            )));
        }
        let ids: Vec<String> = self
            .graph
            .nodes
            .iter()
            .map(|n| operator_state_id(n.id.0, &n.name, n.uid.as_deref()))
            .collect();
        if !self.config.allow_non_restored_state {
            if let Some(op) = meta.operators.iter().find(|o| !ids.contains(&o.id)) {
                return Err(JobError::InvalidJob(format!(
                    "{} holds state of operator '{}' (id {}) that the job does not have; \
                     set uids that match, or drop that state with -n / \
                     --allow-non-restored-state",
                    checkpoint.location, op.name, op.id
                )));
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        for (node, id) in self.graph.nodes.iter().zip(&ids) {
            let (Some(subtasks), Some(op)) = (
                checkpoint.operators.get(id),
                meta.operators.iter().find(|o| &o.id == id),
            ) else {
                out.push(None);
                continue;
            };
            let p = self.parallelism[node.id.0];
            let same_parallelism = op.parallelism == p;
            if !same_parallelism && subtasks.iter().any(|(_, s)| s.source_position.is_some()) {
                return Err(JobError::InvalidJob(format!(
                    "source '{}' ran with parallelism {} in {} and cannot resume its \
                     positions at parallelism {p}",
                    node.name, op.parallelism, checkpoint.location
                )));
            }
            let mut by_subtask: Vec<OperatorStateSnapshot> = (0..op.parallelism)
                .map(|i| {
                    subtasks
                        .iter()
                        .find(|(s, _)| *s == i)
                        .map(|(_, snap)| snap.operator.clone())
                        .unwrap_or_default()
                })
                .collect();
            if by_subtask.is_empty() {
                by_subtask.push(OperatorStateSnapshot::default());
            }
            let mut subtasks = subtasks.clone();
            let mut native = vec![None; p as usize];
            for (s, snapshot) in &mut subtasks {
                let Some(state) = snapshot.native.take() else {
                    continue;
                };
                let restore = native_restore(&state, checkpoint)?;
                if same_parallelism {
                    native[*s as usize] = Some(restore);
                } else {
                    // Another key-group layout: read the files' entries and
                    // restore them like any other snapshot.
                    let format = self.config.state_backend.native_format().ok_or_else(|| {
                        JobError::InvalidJob(format!(
                            "{} holds key-value store files for '{}'; restore it with the \
                             backend that wrote them",
                            checkpoint.location, node.name
                        ))
                    })?;
                    let states = format.read(&restore).map_err(|e| {
                        JobError::InvalidJob(format!("reading {}: {e}", checkpoint.location))
                    })?;
                    for state in states {
                        snapshot.add_state(state);
                    }
                }
            }
            out.push(Some(RestoredOperator {
                subtasks,
                operator_state: OperatorStateSnapshot::redistribute(&by_subtask, p as usize),
                same_parallelism,
                native,
            }));
        }
        Ok(out)
    }

    /// `Source: X -> Map -> Filter`, as Flink names a chain.
    fn chain_name(&self, id: NodeId) -> String {
        let mut name = self.graph.node(id).name.clone();
        for (e, edge) in self.graph.edges.iter().enumerate() {
            if edge.from == id && self.chained_behind[edge.to.0] == Some(e) {
                name.push_str(" -> ");
                name.push_str(&self.chain_name(edge.to));
            }
        }
        name
    }

    fn edge_type(&self, e: usize) -> &Arc<dyn StreamType> {
        let edge = &self.graph.edges[e];
        let from = self.graph.node(edge.from);
        match &edge.side_output {
            None => &from.out_type,
            Some(tag) => from
                .side_outputs
                .iter()
                .find(|(t, _)| t == tag)
                .map(|(_, ty)| ty)
                .unwrap_or(&from.out_type),
        }
    }

    fn create_channels(&mut self) {
        for (e, edge) in self.graph.edges.iter().enumerate() {
            if self.chained_behind[edge.to.0] == Some(e) {
                continue;
            }
            let pattern = match self.partitioning[e] {
                Partitioning::Forward | Partitioning::Rescale => ConnectionPattern::Pointwise,
                _ => ConnectionPattern::AllToAll,
            };
            let (p_from, p_to) = (self.parallelism[edge.from.0], self.parallelism[edge.to.0]);
            let ty = Arc::clone(self.edge_type(e));
            for up in 0..p_from {
                for down in pattern.targets(up, p_from, p_to) {
                    let (tx, rx) = ty.channel(self.config.channel_capacity);
                    self.senders.entry((e, up)).or_default().push(tx);
                    self.receivers.entry((e, down)).or_default().push((rx, up));
                }
            }
        }
    }

    fn context(&self, id: NodeId, subtask: u32) -> RuntimeContext {
        let (operator_state, subtask_state) = match self.restored.get(id.0) {
            Some(Some(r)) => {
                let range = weir_state::key_group_range_for_operator(
                    self.config.max_parallelism,
                    self.parallelism[id.0],
                    subtask,
                );
                let keyed = SubtaskSnapshot::keyed_in(r.subtasks.iter().map(|(_, s)| s), range);
                let position = r
                    .same_parallelism
                    .then(|| {
                        r.subtasks
                            .iter()
                            .find(|(s, _)| *s == subtask)
                            .and_then(|(_, snap)| snap.source_position.clone())
                    })
                    .flatten();
                let operator = r
                    .operator_state
                    .get(subtask as usize)
                    .cloned()
                    .unwrap_or_default();
                let state = SubtaskState::restored(keyed, position);
                if let Some(Some(native)) = r.native.get(subtask as usize) {
                    // A fresh handle: the lock cannot fail here.
                    let _ = state.restore_native(native.clone());
                }
                (weir_state::OperatorStateStore::restored(operator), state)
            }
            _ => (
                weir_state::OperatorStateStore::new(),
                SubtaskState::default(),
            ),
        };
        RuntimeContext {
            job_id: self.job_id.clone(),
            restored_checkpoint: self.restored_checkpoint,
            operator_name: self.graph.node(id).name.clone(),
            task_name: self.task_names[self.task_head(id).0].clone(),
            heads_task: self.task_head(id) == id,
            subtask_index: subtask,
            parallelism: self.parallelism[id.0],
            max_parallelism: self.config.max_parallelism,
            attempt_number: self.attempt_number,
            clock: self.config.clock.clone(),
            auto_watermark_interval: self.config.auto_watermark_interval,
            metrics: Arc::clone(&self.metrics[id.0]),
            keyed_state: None,
            state_backend: self.config.state_backend.clone(),
            operator_state,
            subtask_state,
            checkpoint: self.to_coordinator.as_ref().map(|tx| CheckpointPort {
                to_coordinator: tx.clone(),
                native: self.native_snapshots,
                operator: id.0,
                subtask,
            }),
            probe: Arc::default(),
        }
    }

    fn task_head(&self, mut id: NodeId) -> NodeId {
        while let Some(e) = self.chained_behind[id.0] {
            id = self.graph.edges[e].from;
        }
        id
    }

    fn settings(&mut self, id: NodeId, subtask: u32) -> TaskSettings {
        TaskSettings {
            batch_size: self.config.batch_size,
            buffer_timeout: self.config.buffer_timeout,
            cancel: self.cancel.token(),
            clock: self.config.clock.clone(),
            mailbox: self.mailboxes.remove(&(id.0, subtask)),
            aligned: self.config.checkpoint.mode == CheckpointingMode::ExactlyOnce,
            times: self.metrics[id.0].task_times(subtask),
            probe: Arc::default(),
        }
    }

    fn build_head(
        &mut self,
        id: NodeId,
        subtask: u32,
    ) -> Result<Box<dyn crate::task::TaskHead>, JobError> {
        let mut ctx = self.context(id, subtask);
        let out = self.build_output(id, subtask)?;
        let mut settings = self.settings(id, subtask);
        let graph = self.graph;
        let inputs = match &graph.node(id).factory {
            NodeFactory::Source(_) => 0,
            NodeFactory::OneInput(_) => 1,
            NodeFactory::TwoInput(_) => 2,
        };
        let (receivers, channels): (Vec<_>, Vec<_>) = (1..=inputs)
            .map(|i| self.take_inputs(id, subtask, i))
            .unzip();
        let probe = Arc::new(SubtaskProbe::new(channels));
        self.metrics[id.0].set_probe(subtask, Arc::clone(&probe));
        ctx.probe = Arc::clone(&probe);
        settings.probe = probe;
        let mut receivers = receivers.into_iter();
        let mut next = || receivers.next().unwrap_or_default();
        match &graph.node(id).factory {
            NodeFactory::Source(f) => f.head(ctx, out, settings),
            NodeFactory::OneInput(f) => f.head(ctx, out, next(), settings),
            NodeFactory::TwoInput(f) => {
                let inputs = (next(), next());
                f.head(ctx, out, inputs, settings)
            }
        }
    }

    /// The channels into input `input` of `id`'s subtask, with a probe of
    /// each naming the upstream vertex and subtask it comes from.
    fn take_inputs(
        &mut self,
        id: NodeId,
        subtask: u32,
        input: u8,
    ) -> (Vec<Erased>, Vec<ChannelProbe>) {
        let (mut receivers, mut probes) = (Vec::new(), Vec::new());
        for (e, edge) in self.graph.edges.iter().enumerate() {
            if edge.to == id && edge.input == input {
                for (rx, up) in self.receivers.remove(&(e, subtask)).unwrap_or_default() {
                    receivers.push(rx);
                    probes.push(ChannelProbe::new(edge.from.0, up));
                }
            }
        }
        (receivers, probes)
    }

    fn build_output(&mut self, id: NodeId, subtask: u32) -> Result<OutputParts, JobError> {
        let graph = self.graph;
        let node = graph.node(id);
        let next = self.build_targets(id, None, &node.out_type, subtask)?;
        let mut slots = Vec::new();
        for (tag, ty) in &node.side_outputs {
            let consumed = graph
                .edges
                .iter()
                .any(|e| e.from == id && e.side_output.as_deref() == Some(tag.as_str()));
            if consumed {
                let target = self.build_targets(id, Some(tag), ty, subtask)?;
                slots.push(ty.side_slot(tag, target)?);
            }
        }
        Ok(OutputParts {
            next,
            sides: SideOutputs::new(slots),
            metrics: Arc::clone(&self.metrics[id.0]),
            subtask,
        })
    }

    fn build_targets(
        &mut self,
        id: NodeId,
        tag: Option<&str>,
        ty: &Arc<dyn StreamType>,
        subtask: u32,
    ) -> Result<Erased, JobError> {
        let graph = self.graph;
        let mut targets = Vec::new();
        for (e, edge) in graph.edges.iter().enumerate() {
            if edge.from != id || edge.side_output.as_deref() != tag {
                continue;
            }
            if self.chained_behind[edge.to.0] == Some(e) {
                let NodeFactory::OneInput(factory) = &graph.node(edge.to).factory else {
                    return Err(JobError::Internal("chained a non-one-input node".into()));
                };
                let ctx = self.context(edge.to, subtask);
                let out = self.build_output(edge.to, subtask)?;
                targets.push(factory.chained(ctx, out)?);
            } else {
                let senders = self.senders.remove(&(e, subtask)).unwrap_or_default();
                let ctx = WriterContext {
                    subtask,
                    batch_size: self.config.batch_size,
                    max_parallelism: self.config.max_parallelism,
                    cancel: self.cancel.token(),
                    metrics: Arc::clone(&self.metrics[id.0]),
                    times: self.metrics[self.task_head(id).0].task_times(subtask),
                };
                targets.push(ty.writer(&self.partitioning[e], senders, &ctx)?);
            }
        }
        match targets.len() {
            0 => Ok(ty.discard()),
            1 => Ok(targets.pop().unwrap_or_else(|| ty.discard())),
            _ => ty.fan_out(targets),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_for_cores;

    /// `chained_behind` after splitting for `cores`, where edges 1 and 2
    /// are keyed exchanges (edge `e` leads into node `e + 1`) and the
    /// nodes with no edge in (`None` here) up to `sources` are sources.
    fn split(chained_behind: &[Option<usize>], sources: usize, cores: usize) -> Vec<Option<usize>> {
        let mut behind = chained_behind.to_vec();
        let parallelism = vec![1; behind.len()];
        let is_source: Vec<bool> = (0..behind.len()).map(|i| i < sources).collect();
        split_for_cores(&mut behind, &parallelism, &is_source, cores, |e| {
            e == 1 || e == 2
        });
        behind
    }

    #[test]
    fn a_job_of_one_chain_is_split_at_its_first_keyed_exchanges_until_each_core_has_a_task() {
        // Source -(forward 0)-> calc -(keyed 1)-> aggregate -(keyed 2)-> join.
        let one_chain = [None, Some(0), Some(1), Some(2)];
        assert_eq!(split(&one_chain, 1, 1), one_chain);
        // The forward edge is never split.
        assert_eq!(split(&one_chain, 1, 2), [None, Some(0), None, None]);
        assert_eq!(split(&one_chain, 1, 8), [None, Some(0), None, None]);
    }

    #[test]
    fn a_job_with_a_task_per_core_behind_its_sources_keeps_its_chains() {
        // Two sources (nodes 0 and 1) and a join (2, of two inputs)
        // chained with its keyed aggregation (3): one task behind the
        // sources.
        let join = [None, None, None, Some(2)];
        assert_eq!(split(&join, 2, 1), join);
        assert_eq!(split(&join, 2, 2), [None; 4]);
        let one_behind = [None, None, None];
        assert_eq!(split(&one_behind, 2, 1), one_behind);
        assert_eq!(split(&join, 2, 4), [None; 4]);
        // An operator of parallelism 2 is two tasks.
        let mut behind = [None, None, Some(2)];
        split_for_cores(&mut behind, &[1, 2, 2], &[true, false, false], 2, |_| true);
        assert_eq!(behind, [None, None, Some(2)]);
    }
}
