//! An in-memory Kubernetes API server for tests.

pub mod openapi;
pub mod schema;
pub mod selector;
pub mod table;
