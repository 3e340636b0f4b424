//! Background TTL cleanup of the heap backend (Flink's `cleanupIncrementally`).

use std::sync::Arc;
use std::time::Duration;

use weir_state::{
    KeyGroupRange, KeyedStateStore, ManualClock, StateError, StateTtlConfig, ValueStateDescriptor,
};

/// Writes 1,000 keys, lets them expire, then touches one fresh key
/// `accesses` times; returns how many entries the state still holds.
fn entries_left(ttl: StateTtlConfig, accesses: usize) -> Result<usize, StateError> {
    let clock = ManualClock::new(0);
    let store = KeyedStateStore::heap_with_clock(
        128,
        KeyGroupRange { start: 0, end: 127 },
        Arc::new(clock.clone()),
    );
    let state =
        store.value_state(&ValueStateDescriptor::<u64>::new("v").enable_time_to_live(ttl))?;
    for k in 0..1_000u64 {
        store.set_current_key(&k)?;
        state.update(k)?;
    }
    clock.advance(2_000);
    store.set_current_key(&u64::MAX)?;
    state.update(1)?;
    for _ in 0..accesses {
        assert_eq!(state.value()?, Some(1));
    }
    store.len("v")
}

#[test]
fn accesses_sweep_expired_entries_a_few_at_a_time() -> Result<(), StateError> {
    let ttl = StateTtlConfig::new_builder(Duration::from_secs(1)).build();
    // Five entries per access by default: 1,000 expired entries need about
    // 200 accesses plus one per key group.
    let after_few = entries_left(ttl, 10)?;
    assert!(after_few > 900, "{after_few} left after 10 accesses");
    assert_eq!(entries_left(ttl, 400)?, 1, "only the fresh key is left");
    Ok(())
}

#[test]
fn a_larger_cleanup_size_sweeps_sooner() -> Result<(), StateError> {
    let ttl = StateTtlConfig::new_builder(Duration::from_secs(1))
        .cleanup_incrementally(100, false)
        .build();
    assert_eq!(entries_left(ttl, 140)?, 1);
    Ok(())
}

#[test]
fn without_background_cleanup_expired_entries_stay_until_read() -> Result<(), StateError> {
    let ttl = StateTtlConfig::new_builder(Duration::from_secs(1))
        .disable_cleanup_in_background()
        .build();
    assert_eq!(entries_left(ttl, 1_000)?, 1_001);
    Ok(())
}
