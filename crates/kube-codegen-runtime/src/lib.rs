//! kube-codegen runtime: the pieces generated controllers run on.

pub mod cache;
pub mod client;
pub mod factory;
pub mod workqueue;

pub use client::{
    AllNamespacesClient, ApplyConfiguration, HasScale, HasStatus, Patch, ResourceClient,
};
pub use factory::{SharedInformerFactory, SharedInformerFactoryBuilder};
