//! Types generated at build time from `crds/` by kube-codegen's `Builder`.

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));
