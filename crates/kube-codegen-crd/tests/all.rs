//! The package's integration tests, one module per file, in one binary: one link and one
//! build of the dependencies' generic code for all of them, instead of one per file (most of
//! the workspace's test build went there).

mod cel_keywords;
mod read;
mod validate;
