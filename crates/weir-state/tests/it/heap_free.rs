//! Where a heap backend's values are freed: a large state on a thread of
//! its own, so that its operator ends without waiting; a small one where
//! the store is dropped.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use weir_state::{KeyGroupRange, KeyedStateStore, StateError, ValueStateDescriptor};

/// The thread each marked value was freed on: `(mark, thread name)`.
static FREED_ON: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());

/// A value that records the thread that frees it when it is marked
/// (non-zero).
#[derive(Clone, Serialize, Deserialize)]
struct Recorded(u64);

impl Drop for Recorded {
    fn drop(&mut self) {
        if self.0 != 0 {
            let name = std::thread::current().name().unwrap_or("").to_string();
            if let Ok(mut freed) = FREED_ON.lock() {
                freed.push((self.0, name));
            }
        }
    }
}

/// Fills a store with `keys` values, one of them marked `mark`, drops
/// the store, and returns the name of the thread the marked value was
/// freed on (waiting up to a minute for it).
fn freed_on(keys: u64, mark: u64) -> Result<String, StateError> {
    let store = KeyedStateStore::heap(128, KeyGroupRange { start: 0, end: 127 });
    let state = store.value_state(&ValueStateDescriptor::<Recorded>::new("v"))?;
    for k in 0..keys {
        store.set_current_key(&k)?;
        state.update(Recorded(if k == keys / 2 { mark } else { 0 }))?;
    }
    drop(state);
    drop(store);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((_, name)) = FREED_ON
            .lock()
            .ok()
            .and_then(|f| f.iter().find(|(m, _)| *m == mark).cloned())
        {
            return Ok(name);
        }
        assert!(Instant::now() < deadline, "value {mark} was never freed");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_large_state_is_freed_on_a_thread_of_its_own() -> Result<(), StateError> {
    assert_eq!(freed_on(150_000, 1)?, "weir-state-free");
    Ok(())
}

#[test]
fn a_small_state_is_freed_where_its_store_is_dropped() -> Result<(), StateError> {
    let here = std::thread::current().name().unwrap_or("").to_string();
    assert_eq!(freed_on(1_000, 2)?, here);
    Ok(())
}
