//! Code shared by the `xtask` binary and the `golden-tests` crate: reading sample documents and deciding
//! whether a typed round trip reproduced what a real API server would have stored.

pub mod documents;
pub mod roundtrip;
