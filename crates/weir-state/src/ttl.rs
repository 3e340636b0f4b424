//! State time-to-live (Flink's `StateTtlConfig`): values expire a fixed
//! time of processing time after they were last written (or read).

use std::time::Duration;

/// When the time-to-live of a value restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateType {
    /// When the value is created or written (Flink's default).
    OnCreateAndWrite,
    /// Also when it is read.
    OnReadAndWrite,
}

/// Whether an expired value that is still stored may be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateVisibility {
    /// Expired values read as absent (Flink's default).
    NeverReturnExpired,
    /// Expired values are returned until cleaned up.
    ReturnExpiredIfNotCleanedUp,
}

/// Time-to-live of a state (Flink's `StateTtlConfig`).
///
/// TTL runs on processing time from the job's clock, so tests control it
/// with a manual clock. Expired values are removed when accessed (with
/// [`StateVisibility::NeverReturnExpired`]) and, with
/// [`cleanup_full_snapshot`](StateTtlConfigBuilder::cleanup_full_snapshot),
/// left out of snapshots. Backends may also drop expired values in the
/// background, as Flink does by default: RocksDB drops them when it compacts
/// its files, the heap backend checks a few entries on each access, unless [`disable_cleanup_in_background`](StateTtlConfigBuilder::disable_cleanup_in_background)
/// is set. For list and map state the time-to-live covers the key's whole
/// list or map (Flink tracks it per element and per entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateTtlConfig {
    /// How long a value lives.
    pub ttl: Duration,
    /// When its life restarts.
    pub update_type: UpdateType,
    /// Whether expired values can be read.
    pub visibility: StateVisibility,
    /// Whether snapshots leave expired values out.
    pub cleanup_full_snapshot: bool,
    /// Whether the backend may drop expired values on its own (RocksDB:
    /// during compaction; heap: incrementally, on access).
    pub cleanup_in_background: bool,
    /// Entries the heap backend checks for expiry per state access, when
    /// cleaning up in the background.
    pub incremental_cleanup_size: usize,
}

impl StateTtlConfig {
    /// A builder for values living `ttl` (Flink's `newBuilder`).
    pub fn new_builder(ttl: Duration) -> StateTtlConfigBuilder {
        StateTtlConfigBuilder {
            config: StateTtlConfig {
                ttl,
                update_type: UpdateType::OnCreateAndWrite,
                visibility: StateVisibility::NeverReturnExpired,
                cleanup_full_snapshot: false,
                cleanup_in_background: true,
                incremental_cleanup_size: 5,
            },
        }
    }

    /// Whether a value last touched at `stamp` has expired at `now`.
    #[inline]
    pub fn is_expired(&self, stamp: i64, now: i64) -> bool {
        stamp.saturating_add(self.ttl.as_millis() as i64) <= now
    }
}

/// Builds a [`StateTtlConfig`].
#[derive(Debug, Clone, Copy)]
pub struct StateTtlConfigBuilder {
    config: StateTtlConfig,
}

impl StateTtlConfigBuilder {
    /// When the time-to-live restarts.
    pub fn set_update_type(mut self, update_type: UpdateType) -> Self {
        self.config.update_type = update_type;
        self
    }

    /// Whether expired values can be read.
    pub fn set_state_visibility(mut self, visibility: StateVisibility) -> Self {
        self.config.visibility = visibility;
        self
    }

    /// Leaves expired values out of snapshots.
    pub fn cleanup_full_snapshot(mut self) -> Self {
        self.config.cleanup_full_snapshot = true;
        self
    }

    /// Keeps expired values until they are read or left out of a snapshot
    /// (Flink's `disableCleanupInBackground`).
    pub fn disable_cleanup_in_background(mut self) -> Self {
        self.config.cleanup_in_background = false;
        self
    }

    /// Checks `cleanup_size` entries for expiry on every access of the
    /// state in the heap backend (Flink's `cleanupIncrementally`; on by
    /// default with 5). The work is amortized: each access adds to a budget
    /// and a whole key group is swept once the budget covers it. Flink's
    /// `runCleanupForEveryRecord` (also on records that do not touch the
    /// state) is not supported: the flag is accepted and has no effect.
    pub fn cleanup_incrementally(
        mut self,
        cleanup_size: usize,
        run_cleanup_for_every_record: bool,
    ) -> Self {
        let _ = run_cleanup_for_every_record;
        self.config.cleanup_in_background = true;
        self.config.incremental_cleanup_size = cleanup_size;
        self
    }

    /// Drops expired values when RocksDB compacts its files (Flink's
    /// `cleanupInRocksdbCompactFilter`; on by default). Flink reads the
    /// clock every `query_time_after_num_entries` entries; Weir reads it
    /// for every entry, so the count is accepted and not needed.
    pub fn cleanup_in_rocksdb_compact_filter(mut self, query_time_after_num_entries: u64) -> Self {
        let _ = query_time_after_num_entries;
        self.config.cleanup_in_background = true;
        self
    }

    /// The configuration.
    pub fn build(self) -> StateTtlConfig {
        self.config
    }
}
