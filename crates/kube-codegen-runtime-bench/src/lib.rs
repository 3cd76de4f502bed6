//! Benchmarks only: see `benches/workqueue.rs` (run with `cargo xtask bench workqueue`).
