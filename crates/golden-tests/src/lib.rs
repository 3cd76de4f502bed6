//! Every golden in `testdata/golden/` as a module, so the goldens compile with warnings denied, pass clippy and
//! `cargo test --doc`. The module list is written by the build script from `testdata/crds/`, so adding a CRD
//! (and blessing it) needs no edit here. The tests compare goldens with the generator (`tests/golden.rs`) and
//! round-trip `testdata/samples/` through the generated types (`tests/roundtrip.rs`).
#![deny(warnings)]
// The wrapper modules are ours, named after the CRD file, which often equals the API group module inside.
#![allow(clippy::module_inception)]
#![deny(rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/goldens.rs"));

/// Verbs a CRD version does not support do not exist on its typed client. `Tenant`
/// (`cluster-scoped.yaml`) has neither the status nor the scale subresource:
///
/// ```compile_fail,E0599
/// # async fn f(client: kube::Client, t: golden_tests::cluster_scoped::cluster::v1::Tenant) {
/// let cs = golden_tests::cluster_scoped::Clientset::new(client);
/// let _ = cs.cluster_v1().tenants().update_status(&Default::default(), &t).await;
/// # }
/// ```
///
/// ```compile_fail,E0599
/// # async fn f(client: kube::Client) {
/// let cs = golden_tests::cluster_scoped::Clientset::new(client);
/// let _ = cs.cluster_v1().tenants().get_scale("t").await;
/// # }
/// ```
///
/// A cluster-scoped kind's accessor takes no namespace:
///
/// ```compile_fail,E0061
/// # fn f(client: kube::Client) {
/// let cs = golden_tests::cluster_scoped::Clientset::new(client);
/// let _ = cs.cluster_v1().tenants("default");
/// # }
/// ```
///
/// and across namespaces only list and watch exist:
///
/// ```compile_fail,E0599
/// # async fn f(client: kube::Client) {
/// let cs = golden_tests::subresources::Clientset::new(client);
/// let _ = cs.scaling_v1().workerpools_all().get("a").await;
/// # }
/// ```
///
/// The same calls on a kind that has the subresources compile:
///
/// ```
/// # async fn f(client: kube::Client, p: golden_tests::subresources::scaling::v1::WorkerPool) {
/// let cs = golden_tests::subresources::Clientset::new(client);
/// let _ = cs.scaling_v1().workerpools("default").update_status(&Default::default(), &p).await;
/// let _ = cs.scaling_v1().workerpools("default").get_scale("a").await;
/// let _ = cs.scaling_v1().workerpools_all().list(&Default::default()).await;
/// # }
/// ```
pub mod missing_verbs {}

#[doc(hidden)]
pub mod header;
