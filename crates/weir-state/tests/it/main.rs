//! The keyed-state conformance suite on the heap backend.

weir_state::keyed_state_conformance!(heap, KeyedStateStore::heap_with_clock);
