//! The runtime's integration tests, one module per concern, in one binary: one link and one
//! instantiation of kube, hyper and the in-memory server for all of them instead of one per file
//! (most of the workspace test build's time went to those).

mod support;

mod admission_webhook;
mod cache_faults;
mod cache_informer;
mod cache_list_expired;
mod cache_metrics;
mod cache_recovery;
mod cache_reflector;
mod cache_store;
mod cache_watch_list;
mod controller;
mod controller_e2e;
mod controller_endpoints;
mod controller_lifecycle;
mod controller_readme;
mod conversion;
mod conversion_webhook;
mod events;
mod factory;
mod leader_election;
mod shard_balance;
mod shard_failover;
mod shard_handoff_delete;
mod shard_informer;
mod shard_membership;
mod shard_owner;
mod shard_ring;
mod website_rbac;
mod workqueue_metrics;
mod workqueue_queue;
mod workqueue_rate_limiters;
mod workqueue_stress;
mod workqueue_workers;
