//! kube-codegen runtime: the pieces generated controllers run on.

pub mod cache;
pub mod workqueue;
