//! Pins the public shape of the generated API: every generated method of a namespaced kind with
//! status and scale subresources (`subresources.yaml`) and of a cluster-scoped kind without
//! them (`cluster-scoped.yaml`) is called here with its full signature. Compile-only: the
//! functions are type-checked, never run (the end-to-end behaviour is tested against
//! kube-fake-apiserver in `crates/buildrs-example/tests`). A generator change that renames a
//! method, changes a parameter or drops a verb fails this build.
//!
//! The other half, that verbs a CRD lacks do not exist, is the `compile_fail` doctests in
//! `src/lib.rs`.

#![deny(warnings)]
#![allow(dead_code)]

use std::sync::Arc;

use futures::StreamExt;
use golden_tests::cluster_scoped::cluster::v1::{
    ClusterV1Client, ClusterV1Informers, Tenant, TenantApply, TenantInformer, TenantLister,
    TenantSpecApply,
};
use golden_tests::subresources::scaling::v1::{
    ScalingV1Client, ScalingV1Informers, WorkerPool, WorkerPoolApply, WorkerPoolInformer,
    WorkerPoolLister, WorkerPoolNamespaceLister, WorkerPoolSpecApply, WorkerPoolStatusApply,
};
use golden_tests::subresources::{Clientset, InformerFactoryExt};
use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{DeleteParams, ListParams, PatchParams, PostParams, WatchParams};
use kube::core::{ObjectList, Selector, Status};
use kube_codegen_runtime::cache::{NotSynced, SharedIndexInformer};
use kube_codegen_runtime::validation::ValidationErrors;
use kube_codegen_runtime::{
    AllNamespacesClient, ApplyConfiguration, Patch, ResourceClient, SharedInformerFactory,
};

type Either<L, R> = either::Either<L, R>;

async fn namespaced_clientset(client: kube::Client) -> Result<(), kube::Error> {
    let cs = Clientset::new(client.clone());
    let _: &kube::Client = cs.client();
    let gv: ScalingV1Client = cs.scaling_v1();
    let _ = ScalingV1Client::new(client);
    let pools: ResourceClient<WorkerPool> = gv.workerpools("default");
    let (lp, wp, pp, dp) = (
        ListParams::default(),
        WatchParams::default(),
        PostParams::default(),
        DeleteParams::default(),
    );
    let got: WorkerPool = pools.get("a").await?;
    let _: Option<WorkerPool> = pools.get_opt("a").await?;
    let _: ObjectList<WorkerPool> = pools.list(&lp).await?;
    let mut events = pools.watch(&wp, "0").await?.boxed();
    let _ = events.next().await;
    let _: WorkerPool = pools.create(&pp, &got).await?;
    let _: WorkerPool = pools.update(&pp, &got).await?;
    let _: Either<WorkerPool, Status> = pools.delete("a", &dp).await?;
    let _: Either<ObjectList<WorkerPool>, Status> = pools.delete_collection(&dp, &lp).await?;
    let merge = Patch::Merge(serde_json::json!({"spec": {"replicas": 2}}));
    let json = Patch::<()>::Json(json_patch::Patch(Vec::new()));
    let _: WorkerPool = pools.patch("a", &PatchParams::default(), &merge).await?;
    let _: WorkerPool = pools.patch("a", &PatchParams::default(), &json).await?;
    let apply = WorkerPoolApply::new("a", "default")
        .spec(WorkerPoolSpecApply::new().replicas(3))
        .status(WorkerPoolStatusApply::new());
    let _: Option<&str> = apply.name();
    let ssa = PatchParams::apply("manager").force();
    let _: WorkerPool = pools.apply(&apply, &ssa).await?;
    // Status subresource.
    let _: WorkerPool = pools.update_status(&pp, &got).await?;
    let _: WorkerPool = pools
        .patch_status("a", &PatchParams::default(), &merge)
        .await?;
    let _: WorkerPool = pools.apply_status(&apply, &ssa).await?;
    // Scale subresource (autoscaling/v1 Scale).
    let scale: Scale = pools.get_scale("a").await?;
    let _: Scale = pools.update_scale("a", &pp, &scale).await?;
    let _: &kube::Api<WorkerPool> = pools.api();
    // Across namespaces: list and watch only.
    let all: AllNamespacesClient<WorkerPool> = gv.workerpools_all();
    let _: ObjectList<WorkerPool> = all.list(&lp).await?;
    let _ = all.watch(&wp, "0").await?.boxed();
    let _: kube::Client = cs.into();
    Ok(())
}

async fn cluster_clientset(client: kube::Client) -> Result<(), kube::Error> {
    let cs = golden_tests::cluster_scoped::Clientset::new(client);
    let gv: ClusterV1Client = cs.cluster_v1();
    let tenants: ResourceClient<Tenant> = gv.tenants();
    let pp = PostParams::default();
    let t: Tenant = tenants.get("t").await?;
    let _: Tenant = tenants.create(&pp, &t).await?;
    let _: Tenant = tenants.update(&pp, &t).await?;
    let apply = TenantApply::new("t").spec(
        TenantSpecApply::new()
            .display_name("Team")
            .namespaces(vec!["a".to_string()])
            .quota_bytes(10)
            .suspended(false),
    );
    let _: Tenant = tenants.apply(&apply, &PatchParams::apply("m")).await?;
    Ok(())
}

fn listers_and_informers(factory: &SharedInformerFactory) -> Result<(), NotSynced> {
    // Namespaced: list everywhere, or one namespace with list and get.
    let pools: WorkerPoolInformer = factory.scaling().v1().workerpools();
    let _: ScalingV1Informers = factory.scaling().v1();
    let _: &SharedIndexInformer<WorkerPool> = pools.informer();
    let lister: WorkerPoolLister = pools.lister();
    let _: bool = lister.has_synced();
    let _: Vec<Arc<WorkerPool>> = lister.list(&Selector::default())?;
    let in_ns: WorkerPoolNamespaceLister = lister.workerpools("default");
    let _: Vec<Arc<WorkerPool>> = in_ns.list(&Selector::default())?;
    let _: Option<Arc<WorkerPool>> = in_ns.get("a")?;
    let _ = WorkerPoolLister::new(pools.informer().lister());
    let _ = WorkerPoolInformer::new(factory.informer_for::<WorkerPool>());
    // Cluster-scoped: get directly.
    let tenants: TenantInformer =
        golden_tests::cluster_scoped::InformerFactoryExt::cluster(factory)
            .v1()
            .tenants();
    let _: ClusterV1Informers = ClusterV1Informers::new(factory);
    let lister: TenantLister = tenants.lister();
    let _: Vec<Arc<Tenant>> = lister.list(&Selector::default())?;
    let _: Option<Arc<Tenant>> = lister.get("t")?;
    Ok(())
}

/// Client-side validation (`--emit validation`) on both kinds; a refusal converts into the
/// `kube::Error` a write would have failed with.
fn validation(pool: &WorkerPool, old: &WorkerPool, tenant: &mut Tenant) -> Result<(), kube::Error> {
    let r: Result<(), ValidationErrors> = pool.validate();
    r?;
    let r: Result<(), ValidationErrors> = pool.validate_update(old);
    if let Err(e) = &r {
        let _: &[kube_codegen_runtime::validation::Cause] = e.causes();
        let _: Status = e.status();
    }
    r?;
    let () = tenant.apply_defaults();
    tenant.validate()?;
    Ok(())
}

#[test]
fn the_generated_api_type_checks() {
    // The functions above are the test; referencing them keeps them type-checked under
    // `deny(warnings)` without running them (they would need a server).
    let _ = namespaced_clientset;
    let _ = cluster_clientset;
    let _ = listers_and_informers;
    let _ = validation;
}
