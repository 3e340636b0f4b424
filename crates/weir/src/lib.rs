//! Weir: a stream processor with Flink's windows, time, state and
//! checkpoints, as a native Rust library.
//!
//! The principal type is the [`StreamExecutionEnvironment`]: a program
//! creates one, builds a dataflow from sources through transformations to
//! sinks — each call returning a [`DataStream`] — and runs it with
//! [`execute`](StreamExecutionEnvironment::execute).
//!
//! ```
//! use weir::prelude::*;
//!
//! # fn main() -> weir::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! let counts = env
//!     .from_elements(["to be or not to be", "that is the question"])
//!     .flat_map(|line: &str, out: &mut Collector<(String, i64)>| {
//!         for word in line.split_whitespace() {
//!             out.collect((word.to_string(), 1));
//!         }
//!     })
//!     .key_by(|(word, _)| word.clone())
//!     .sum(|(_, n)| n)
//!     .execute_and_collect()?;
//! assert!(counts.contains(&("be".to_string(), 2)));
//! # Ok(())
//! # }
//! ```
//!
//! # Architecture
//!
//! ```text
//!   user program ──builds──▶ StreamGraph ──chains──▶ tasks ──▶ one thread per subtask
//!
//!   Source ─▶ Flat Map ─▶ (hash by key group) ═══▶ Keyed Aggregation ─▶ Sink
//!   └──── task 1: chained, direct calls ─────┘     └────── task 2 ──────────┘
//!                                          bounded channels of record batches,
//!                                          watermarks and barriers in-band
//! ```
//!
//! This crate is the API: the environment, [`datastream`] (streams and their
//! transformations), [`functions`] (the traits user code implements),
//! [`source`] and [`sink`] (built-in connectors) and the operators that run
//! user functions. Execution — tasks, chaining, channels, watermarks — is
//! `weir-runtime`; key groups and state are `weir-state`.

pub mod args;
pub mod checkpointing;
pub mod config;
pub mod datastream;
mod environment;
pub mod error;
pub mod functions;
pub mod logging;
pub mod object_storage;
mod operators;
mod rest;
pub mod sink;
pub mod source;
mod state_slot;
pub mod watermark;
pub mod window;

pub use datastream::{ConnectedStreams, DataStream, DataStreamSink, KeyedStream};
pub use environment::{StreamExecutionEnvironment, DEFAULT_JOB_NAME};
pub use error::{Error, Result};
pub use weir_runtime::checkpoint::{
    CheckpointConfig, CheckpointRetention, CheckpointStats, CheckpointStorageConfig,
    CheckpointingMode,
};
pub use weir_runtime::cluster::{
    JobCancelHandle, JobClient, JobException, JobExecutionResult, JobId, JobStatus, JobView,
    OperatorResult, SavepointHandle, VertexView,
};
pub use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
pub use weir_runtime::recovery::RestartStrategy;
/// A clock tests set by hand (`env.set_clock(Arc::new(clock.clone()))`).
pub use weir_runtime::time::ManualClock;
pub use weir_state::{CheckpointStorage, FsCheckpointStorage, MemoryCheckpointStorage};

/// Everything a job needs: `use weir::prelude::*;`.
pub mod prelude {
    pub use crate::args::ParameterTool;
    pub use crate::config::Configuration;
    pub use crate::datastream::{BroadcastConnectedStream, BroadcastStream};
    pub use crate::datastream::{
        ConnectedStreams, DataStream, DataStreamSink, Key, KeyedStream, ProcessJoinContext,
        TaggedUnion,
    };
    pub use crate::environment::StreamExecutionEnvironment;
    pub use crate::error::{Error, Result};
    pub use crate::functions::{
        BroadcastContext, BroadcastProcessFunction, CoProcessFunction, Collector, FilterFunction,
        FlatMapFunction, FunctionError, FunctionResult, KeyedBroadcastProcessFunction,
        KeyedBundleFunction, KeyedProcessFunction, MapFunction, OutputTag, ProcessContext,
        ProcessFunction, ReadOnlyContext, ReduceFunction, RuntimeContext, SinkContext,
        SinkFunction, SourceContext, SourceFunction, SourceStatus, TimeDomain, TimerService,
        Upcoming,
    };
    pub use crate::print_with_display;
    pub use crate::sink::{DiscardingSink, PrintFormat};
    pub use crate::source::{GeneratorSource, SocketTextSource, SplitContext, SplitSourceFunction};
    pub use crate::watermark::{
        BoundedOutOfOrderness, ScanContext, WatermarkGenerator, WatermarkOutput, WatermarkStrategy,
    };
    pub use crate::window::{
        AggregateFunction, AllWindowedStream, AssignerContext, ContinuousEventTimeTrigger,
        ContinuousProcessingTimeTrigger, CountEvictor, CountTrigger, CumulativeEventTimeWindows,
        CumulativeProcessingTimeWindows, DeltaEvictor, Elements, EventTimeSessionWindows,
        EventTimeTrigger, GlobalWindow, GlobalWindows, ProcessWindowContext, ProcessWindowFunction,
        ProcessingTimeSessionWindows, ProcessingTimeTrigger, PurgingTrigger,
        SlidingEventTimeWindows, SlidingProcessingTimeWindows, TimeEvictor, TimeWindow, Trigger,
        TriggerContext, TriggerResult, TumblingEventTimeWindows, TumblingProcessingTimeWindows,
        Window, WindowAssigner, WindowFunction, WindowedStream,
    };
    pub use crate::{
        CheckpointConfig, CheckpointRetention, CheckpointStorageConfig, CheckpointingMode,
        JobClient, JobExecutionResult, RestartStrategy,
    };
    pub use std::time::Duration;
    pub use weir_state::{
        AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapState,
        MapStateDescriptor, OperatorListState, OperatorStateStore, ReducingState,
        ReducingStateDescriptor, StableHash, StateError, StateTtlConfig, StateValue,
        StateVisibility, UpdateType, ValueChange, ValueState, ValueStateDescriptor,
    };
}
