//! `sample-controller`: Kubernetes' sample-controller on code kube-codegen generates from
//! `artifacts/crd.yaml` in `build.rs`.
//!
//! The crate root is the generated API of `artifacts/crd-conversion.yaml`
//! (`samplecontroller::v1alpha1::Foo`, `Clientset`, `InformerFactoryExt`, `FooLister`, ...,
//! and the conversions between `v1alpha1` and `v1beta1` in `samplecontroller::conversion`).
//! [`conversion`] maps the one renamed field between the two versions. [`controller`] is the
//! controller itself: the reconcile over listers and the runtime's `Writes` (so it is
//! unit-tested without a server). `src/main.rs` is the program on the runtime's flags.
//! [`admission`] holds Foo's defaulting and validating webhooks (served with the conversion
//! webhook by `sample-conversion-webhook`).

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));

pub mod admission;
pub mod controller;
pub mod conversion;
