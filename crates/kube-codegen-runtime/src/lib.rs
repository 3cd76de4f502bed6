//! kube-codegen runtime: the pieces generated controllers run on.

pub mod cache;
pub mod factory;
pub mod workqueue;

pub use factory::{SharedInformerFactory, SharedInformerFactoryBuilder};
