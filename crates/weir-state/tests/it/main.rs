//! The keyed-state conformance suite and background TTL cleanup on the heap
//! backend.

mod ttl_cleanup;

weir_state::keyed_state_conformance!(heap, KeyedStateStore::heap_with_clock);
