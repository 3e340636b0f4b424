//! The stream graph: what the user's program builds, before it runs.
//!
//! Nodes are operators (as factories: one operator instance per subtask);
//! edges say how records move between them. The API crate builds the graph;
//! [`crate::cluster::execute`] chains it into tasks and runs it.

mod factory;
mod stream_type;

pub use factory::{
    Erased, NodeFactory, OneInputFactory, OutputParts, SourceFactory, TwoInputFactory,
    WriterContext, WriterFactory,
};
pub use stream_type::{StreamType, TypeOf};

use std::fmt;
use std::sync::Arc;

/// Identifies a node of a [`StreamGraph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// Whether a node may share a task with its neighbours (Flink's
/// `ChainingStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChainingStrategy {
    /// Chain with predecessor and successors where the edges allow.
    #[default]
    Always,
    /// Start a new chain here (`start_new_chain`); successors may chain on.
    Head,
    /// Never chain (`disable_chaining`).
    Never,
}

/// How records move along an edge.
#[derive(Clone)]
pub enum Partitioning {
    /// Not chosen by the user: forward if both ends have the same
    /// parallelism, else rebalance (as Flink).
    Default,
    /// Subtask `i` to subtask `i`; needs equal parallelism.
    Forward,
    /// Round robin to all downstream subtasks.
    Rebalance,
    /// Round robin to a local group of downstream subtasks.
    Rescale,
    /// Uniformly random.
    Shuffle,
    /// Every record to every downstream subtask.
    Broadcast,
    /// By a typed partitioner built by the API: key groups (`key_by`) or a
    /// user's partitioner (`partition_custom`).
    Custom(Arc<dyn WriterFactory>),
}

impl fmt::Debug for Partitioning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Partitioning::Default => "DEFAULT",
            Partitioning::Forward => "FORWARD",
            Partitioning::Rebalance => "REBALANCE",
            Partitioning::Rescale => "RESCALE",
            Partitioning::Shuffle => "SHUFFLE",
            Partitioning::Broadcast => "BROADCAST",
            Partitioning::Custom(w) => w.name(),
        })
    }
}

/// An operator in the graph.
pub struct StreamNode {
    /// The node's id (its index).
    pub id: NodeId,
    /// Display name (`Map`, `Source: Collection Source`, …).
    pub name: String,
    /// Stable user id, for matching state on restore.
    pub uid: Option<String>,
    /// Parallelism; `None` takes the job default.
    pub parallelism: Option<u32>,
    /// Whether the parallelism may differ from 1 (sources like
    /// `from_elements` may not).
    pub max_one: bool,
    /// Chaining strategy.
    pub chaining: ChainingStrategy,
    /// Builds the operator for each subtask.
    pub factory: NodeFactory,
    /// The node's main output type.
    pub out_type: Arc<dyn StreamType>,
    /// Side outputs the node can emit: tag id and type.
    pub side_outputs: Vec<(String, Arc<dyn StreamType>)>,
}

/// A connection from a node's output (main or side) to an input of another.
#[derive(Debug, Clone)]
pub struct StreamEdge {
    /// Producer.
    pub from: NodeId,
    /// Consumer.
    pub to: NodeId,
    /// `Some(tag)` when this edge carries a side output.
    pub side_output: Option<String>,
    /// Which input of the consumer: 1, or 2 for the second input of a
    /// two-input operator.
    pub input: u8,
    /// How records are partitioned.
    pub partitioning: Partitioning,
}

/// A dataflow program: nodes and edges.
#[derive(Default)]
pub struct StreamGraph {
    /// The nodes, indexed by [`NodeId`].
    pub nodes: Vec<StreamNode>,
    /// The edges, in the order they were added.
    pub edges: Vec<StreamEdge>,
}

impl StreamGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node, returning its id.
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        factory: NodeFactory,
        out_type: Arc<dyn StreamType>,
    ) -> NodeId {
        let id = NodeId(self.nodes.len());
        self.nodes.push(StreamNode {
            id,
            name: name.into(),
            uid: None,
            parallelism: None,
            max_one: false,
            chaining: ChainingStrategy::Always,
            factory,
            out_type,
            side_outputs: Vec::new(),
        });
        id
    }

    /// Adds an edge.
    pub fn add_edge(&mut self, edge: StreamEdge) {
        self.edges.push(edge);
    }

    /// The node with id `id`.
    pub fn node(&self, id: NodeId) -> &StreamNode {
        &self.nodes[id.0]
    }

    /// The node with id `id`, mutably.
    pub fn node_mut(&mut self, id: NodeId) -> &mut StreamNode {
        &mut self.nodes[id.0]
    }
}
