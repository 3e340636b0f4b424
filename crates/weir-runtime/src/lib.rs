//! The Weir dataflow runtime.
//!
//! The principal type is the [`graph::StreamGraph`]: operators (as factories
//! that instantiate one operator per parallel subtask) connected by edges that
//! say how records are partitioned. [`cluster::execute`] turns it into
//! running tasks: operators joined by forward edges of equal parallelism are
//! chained into one task, each parallel instance of a task runs on its own
//! thread, and tasks exchange batches of records over bounded channels.
//!
//! ```text
//!  source ─▶ map ─▶ filter ══hash══▶ reduce ─▶ sink
//!  └────── task 1 (chained) ──────┘  └─── task 2 ───┘
//!                 one thread per subtask; ══ is a bounded channel per
//!                 (upstream, downstream) subtask pair carrying batches
//! ```
//!
//! Control elements — watermarks, idleness, checkpoint barriers, end of
//! input — travel in-band between record batches ([`element`]). The runtime
//! knows operators, watermarks and (later) timers, state and checkpoints; it
//! does not know windows, which the API crate builds from operators.

pub mod cancel;
pub mod checkpoint;
pub mod cluster;
pub mod element;
pub mod error;
pub mod exchange;
pub mod graph;
pub mod metrics;
pub mod operator;
pub mod provenance;
pub mod recovery;
pub mod task;
pub mod testing;
pub mod time;

pub use error::{FunctionError, FunctionResult, JobError, TaskError};
