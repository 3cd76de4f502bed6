//! kube-codegen runtime.
