//! Every golden in `testdata/golden/`, compiled under edition 2021 (the main `golden-tests` crate is 2024).
#![deny(warnings)]
// The wrapper modules are ours, named after the CRD file, which often equals the API group module inside.
#![allow(clippy::module_inception)]

include!(concat!(env!("OUT_DIR"), "/goldens.rs"));
