//! kube-codegen runtime: the pieces generated controllers run on.
#![deny(missing_docs)]

pub mod cache;
pub mod client;
pub mod controller;
pub mod conversion;
pub mod events;
pub mod factory;
pub mod leaderelection;
#[cfg(feature = "sharding")]
pub mod shard;
pub mod typed_patch;
#[cfg(feature = "validation")]
pub mod validation;
#[cfg(feature = "webhook")]
pub mod webhook;
pub mod workqueue;

pub use client::{
    AllNamespacesClient, ApplyConfiguration, HasScale, HasStatus, Patch, ResourceClient,
};
pub use controller::{Controller, Manager, Reconciler};
pub use factory::{SharedInformerFactory, SharedInformerFactoryBuilder};
pub use leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionError, LeaderElector, Leadership,
    LeaseLock, RunOutcome,
};
#[cfg(feature = "validation")]
pub use validation::{LazySchema, SchemaChecks, ValidationErrors};
