//! The keyed-state conformance suite, and background TTL cleanup and the
//! freeing of large state on the heap backend.

mod heap_free;
mod ttl_cleanup;

weir_state::keyed_state_conformance!(heap, KeyedStateStore::heap_with_clock);
