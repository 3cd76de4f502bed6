//! `crontab-events`: `kubectl get -w` through an informer cache, on code kube-codegen generates
//! from `crd/crontab.yaml` in `build.rs`.
//!
//! The crate root is the generated API (`stable::v1::CronTab`, `Clientset`,
//! `InformerFactoryExt`, `CronTabLister`, ...); [`output`] is what the program prints, kept here
//! so it is unit-tested without a server. `src/main.rs` is the program.

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));

pub mod output;
