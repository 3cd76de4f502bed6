//! Benchmarks only: see `benches/` (run with `cargo xtask bench workqueue|cache|informer`) and
//! the package README for figures and what they show. The library holds the Widget type that
//! kube-codegen generates from `crds/widget.yaml` (BENCHMARKS.md's W3/W4 object).

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));
