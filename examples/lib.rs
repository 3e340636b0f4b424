//! Weir's examples live beside this file; each is a `[[example]]` target.
//! Run one with `cargo run --release --example NAME -- ARGS`.
