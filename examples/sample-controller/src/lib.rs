//! `sample-controller`: Kubernetes' sample-controller on code kube-codegen generates from
//! `artifacts/crd.yaml` in `build.rs`.
//!
//! The crate root is the generated API (`samplecontroller::v1beta1::Foo`, `Clientset`,
//! `InformerFactoryExt`, `FooLister`, ..., and the conversions between `v1alpha1` and the
//! storage version `v1beta1` in `samplecontroller::conversion`). [`conversion`] maps the one
//! renamed field between the two versions. [`controller`] is the controller itself: the sync
//! logic over listers and a [`controller::ServerWrites`] (so it is unit-tested without a
//! server), the event handlers that feed its workqueue, and the real writes. `src/main.rs` is
//! the program: flags, leader election, startup and shutdown.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));

pub mod controller;
pub mod conversion;
