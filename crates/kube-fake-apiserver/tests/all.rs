//! The package's integration tests, one module per file, in one binary: one link and one
//! build of the dependencies' generic code for all of them, instead of one per file (most of
//! the workspace's test build went there).

mod common;

mod admission;
mod api;
mod audit;
mod behaviour;
mod builtin_rules;
mod conversion;
mod invalid_crds;
mod kube_client;
mod kubectl;
mod kubectl_builtins;
mod layering;
mod managed_fields;
mod mutating_admission_policy;
mod protobuf;
mod python_client;
mod rbac;
mod real_server_answers;
mod request_cost;
mod scale_and_namespace_ownership;
mod server_side_apply;
mod shard_selector;
mod ssa_unknown_fields;
mod watch;
mod workload_status;
