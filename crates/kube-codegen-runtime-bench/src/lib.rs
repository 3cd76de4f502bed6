//! Benchmarks only: see `benches/workqueue.rs` (run with `cargo xtask bench workqueue`) and
//! the package README for figures and what they show.
