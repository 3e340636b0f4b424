//! RocksDB holding more state than its memory limits.

use std::sync::Arc;

use weir_state::{KeyGroupRange, ManualClock, StateError, ValueStateDescriptor};
use weir_state_rocksdb::RocksDbStateBackend;

#[test]
fn state_far_larger_than_the_memory_limits_reads_back() -> Result<(), StateError> {
    const KEYS: u64 = 40_000;
    const VALUE_BYTES: usize = 2_000;
    let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
    backend.block_cache_bytes = 1 << 20;
    backend.write_buffer_bytes = 1 << 20;
    backend.cache_bytes = 1 << 20;
    let store = backend.open(
        128,
        KeyGroupRange { start: 0, end: 127 },
        Arc::new(ManualClock::new(0)),
    )?;
    let blob = store.value_state(&ValueStateDescriptor::<String>::new("blob"))?;
    let value = |k: u64| format!("{k:08}{}", "x".repeat(VALUE_BYTES - 8));
    // 40,000 × 2 KB = 80 MB of state against 1 MiB of block cache, two
    // 1 MiB write buffers and a 1 MiB write-back cache: most of it lives
    // only on disk.
    for k in 0..KEYS {
        store.set_current_key(&k)?;
        blob.update(value(k))?;
    }
    for k in (0..KEYS).rev() {
        store.set_current_key(&k)?;
        let v = blob.value()?;
        assert_eq!(
            v.as_deref().map(|s| &s[..8]),
            Some(format!("{k:08}").as_str()),
            "key {k}"
        );
        assert_eq!(v.map(|s| s.len()), Some(VALUE_BYTES));
    }
    assert_eq!(store.len("blob")?, KEYS as usize);
    Ok(())
}
