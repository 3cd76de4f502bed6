//! Every golden in `testdata/golden/` as a module, so the goldens compile with warnings denied, pass clippy and
//! `cargo test --doc`. The module list is written by the build script from `testdata/crds/`, so adding a CRD
//! (and blessing it) needs no edit here. The tests compare goldens with the generator (`tests/golden.rs`) and
//! round-trip `testdata/samples/` through the generated types (`tests/roundtrip.rs`).
#![deny(warnings)]
// The wrapper modules are ours, named after the CRD file, which often equals the API group module inside.
#![allow(clippy::module_inception)]
#![deny(rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/goldens.rs"));

#[doc(hidden)]
pub mod header;
