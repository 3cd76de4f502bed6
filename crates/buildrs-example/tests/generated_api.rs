//! The GENERATED clientset, apply configurations, informers and listers driven end to end
//! against the in-memory API server (kube-fake-apiserver).
//!
//! Everything is done through what `build.rs` generated from `crds/` (`Clientset`,
//! `ExampleV1Client`, `PoolApply`, `InformerFactoryExt`, `PoolLister`, ...); `kube::Api` is not
//! used. Errors are compared with the whole `Status` body a real kube-apiserver 1.35 sends for
//! the same request, so a client that drops or rewrites any of it fails here. Every wait has a
//! deadline and names what it waited for.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use buildrs_example::example::v1::{
    Pool, PoolApply, PoolInformer, PoolLister, PoolSpec, PoolSpecApply, PoolStatus,
    PoolStatusApply, Region, RegionApply, RegionLister, RegionSpec, RegionSpecApply,
};
use buildrs_example::{Clientset, InformerFactoryExt};
use either::Either;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{Resource, Selector, Status};
use kube_codegen_runtime::cache::{Deleted, EventHandlerFns, NotSynced};
use kube_codegen_runtime::{Patch, ResourceClient, SharedInformerFactory};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// `fut`, or a panic naming `what` once [`DEADLINE`] has passed.
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {DEADLINE:?} waiting for {what}"))
}

/// A server serving the example CRDs, and a generated clientset over it.
async fn start() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::start().await.expect("server starts");
    for crd in [
        include_str!("../crds/widget.yaml"),
        include_str!("../crds/pool.yaml"),
        include_str!("../crds/region.yaml"),
    ] {
        let crd: Value = serde_saphyr::from_str(crd).expect("CRD parses");
        server.register_crd(crd).expect("CRD registers");
    }
    let clientset = Clientset::new(server.client());
    (server, clientset)
}

fn pool(name: &str, image: &str, replicas: i32, labels: &[(&str, &str)]) -> Pool {
    let mut p = Pool {
        spec: Some(PoolSpec {
            image: image.to_owned(),
            replicas: Some(replicas),
            ..PoolSpec::default()
        }),
        ..Pool::default()
    };
    p.metadata.name = Some(name.to_owned());
    if !labels.is_empty() {
        p.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    p
}

fn region(name: &str, capacity: i64) -> Region {
    let mut r = Region {
        spec: Some(RegionSpec {
            capacity: Some(capacity),
            display_name: Some(name.to_uppercase()),
        }),
        ..Region::default()
    };
    r.metadata.name = Some(name.to_owned());
    r
}

fn replicas(p: &Pool) -> Option<i32> {
    p.spec.as_ref().and_then(|s| s.replicas)
}

fn name<K: Resource>(k: &K) -> String {
    k.meta().name.clone().unwrap_or_default()
}

fn rv<K: Resource>(k: &K) -> String {
    k.meta().resource_version.clone().unwrap_or_default()
}

/// `namespace/name`, or `name` for cluster-scoped objects.
fn key<K: Resource>(k: &K) -> String {
    match &k.meta().namespace {
        Some(ns) => format!("{ns}/{}", name(k)),
        None => name(k),
    }
}

fn names<K: Resource>(items: &[K]) -> Vec<String> {
    items.iter().map(name).collect()
}

/// The `Status` of a `kube::Error::Api`; anything else fails the test.
fn api_status<T: Debug>(what: &str, result: Result<T, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

/// A `Status` as the server's JSON body spells it.
fn status(body: Value) -> Status {
    serde_json::from_value(body).expect("a Status body")
}

/// The next non-bookmark watch event, within the deadline.
async fn next_event<K, S>(stream: &mut S, what: &str) -> WatchEvent<K>
where
    K: Debug,
    S: Stream<Item = Result<WatchEvent<K>, kube::Error>> + Unpin,
{
    loop {
        let event = within(what, stream.next())
            .await
            .unwrap_or_else(|| panic!("the watch ended while waiting for {what}"))
            .unwrap_or_else(|e| panic!("watch error while waiting for {what}: {e}"));
        if !matches!(event, WatchEvent::Bookmark(_)) {
            return event;
        }
    }
}

/// An event as `("ADDED" | "MODIFIED" | "DELETED", namespace/name)`.
fn describe<K: Resource + Debug>(event: &WatchEvent<K>) -> (&'static str, String) {
    match event {
        WatchEvent::Added(k) => ("ADDED", key(k)),
        WatchEvent::Modified(k) => ("MODIFIED", key(k)),
        WatchEvent::Deleted(k) => ("DELETED", key(k)),
        other => panic!("unexpected watch event {other:?}"),
    }
}

fn object<K: Debug>(event: WatchEvent<K>) -> K {
    match event {
        WatchEvent::Added(k) | WatchEvent::Modified(k) | WatchEvent::Deleted(k) => k,
        other => panic!("an event without an object: {other:?}"),
    }
}

#[tokio::test]
async fn every_verb_of_the_generated_client() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let pp = PostParams::default();

    // create / get / get_opt
    let a = pools
        .create(&pp, &pool("a", "nginx:1", 1, &[("app", "web")]))
        .await
        .unwrap();
    assert!(a.metadata.uid.is_some(), "the server filled in the uid");
    assert_eq!(a.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(a.metadata.generation, Some(1));
    assert_eq!(a.spec.as_ref().unwrap().image, "nginx:1");
    pools
        .create(&pp, &pool("b", "nginx:1", 1, &[("app", "web")]))
        .await
        .unwrap();
    pools
        .create(&pp, &pool("c", "postgres", 1, &[("app", "db")]))
        .await
        .unwrap();
    assert_eq!(pools.get("a").await.unwrap(), a);
    assert_eq!(pools.get_opt("a").await.unwrap(), Some(a.clone()));
    assert_eq!(pools.get_opt("missing").await.unwrap(), None);
    // The namespace is part of the client: another namespace does not see team-a's objects.
    assert_eq!(
        cs.example_v1().pools("team-b").get_opt("a").await.unwrap(),
        None
    );

    // list, with and without a label selector
    let web = pools
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(names(&web.items), ["a", "b"]);
    let all = pools.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&all.items), ["a", "b", "c"]);
    assert!(all.metadata.resource_version.is_some());

    // update (PUT); a stale resourceVersion is a 409 Conflict carried intact
    let mut changed = a.clone();
    changed.spec.as_mut().unwrap().replicas = Some(4);
    let updated = pools.update(&pp, &changed).await.unwrap();
    assert_eq!(replicas(&updated), Some(4));
    assert_eq!(updated.metadata.generation, Some(2));
    assert_ne!(rv(&updated), rv(&a));
    let mut stale = a.clone();
    stale.spec.as_mut().unwrap().replicas = Some(9);
    let conflict = api_status(
        "PUT with a stale resourceVersion",
        pools.update(&pp, &stale).await,
    );
    assert_eq!(
        conflict,
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Operation cannot be fulfilled on pools.example.com \"a\": the object has \
                        been modified; please apply your changes to the latest version and try again",
            "details": {"name": "a", "group": "example.com", "kind": "pools"},
        }))
    );
    assert_eq!(
        replicas(&pools.get("a").await.unwrap()),
        Some(4),
        "the stale write was refused"
    );
    // An object without a name cannot be PUT: refused before any request is sent.
    let requests = server.requests().len();
    assert!(requests > 0, "the server records requests");
    let nameless = Pool::default();
    assert!(matches!(
        pools.update(&pp, &nameless).await,
        Err(kube::Error::BuildRequest(_))
    ));
    assert_eq!(server.requests().len(), requests, "no request was sent");

    // patch: merge patch and JSON patch
    let merged = pools
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"tier": "gold"}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.spec.as_ref().unwrap().tier.as_deref(), Some("gold"));
    assert_eq!(
        replicas(&merged),
        Some(4),
        "a merge patch keeps other fields"
    );
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/replicas", "value": 4},
        {"op": "replace", "path": "/spec/replicas", "value": 7},
        {"op": "remove", "path": "/spec/tier"},
    ]))
    .unwrap();
    let json_patched = pools
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(replicas(&json_patched), Some(7));
    assert_eq!(json_patched.spec.as_ref().unwrap().tier, None);
    assert_eq!(pools.get("a").await.unwrap(), json_patched);

    // delete: custom resources come back as the deleted object
    match pools.delete("b", &DeleteParams::default()).await.unwrap() {
        Either::Left(deleted) => assert_eq!(name(&deleted), "b"),
        Either::Right(s) => panic!("a custom resource's DELETE returns the object, got {s:?}"),
    }
    assert_eq!(pools.get_opt("b").await.unwrap(), None);

    // delete with a finalizer: the object stays, marked for deletion, until it is removed
    let mut held = pool("held", "nginx:1", 1, &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    pools.create(&pp, &held).await.unwrap();
    match pools
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
    {
        Either::Left(p) => assert!(p.metadata.deletion_timestamp.is_some(), "{p:?}"),
        Either::Right(s) => panic!("a finalizer keeps the object, got {s:?}"),
    }
    assert!(
        pools
            .get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    pools
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert_eq!(
        pools.get_opt("held").await.unwrap(),
        None,
        "gone once the finalizer is removed"
    );

    // delete_collection with a label selector: the unselected object survives
    pools
        .create(&pp, &pool("d", "nginx:1", 1, &[("app", "web")]))
        .await
        .unwrap();
    match pools
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=web"),
        )
        .await
        .unwrap()
    {
        Either::Left(list) => assert_eq!(names(&list.items), ["a", "d"]),
        Either::Right(s) => {
            panic!("deletecollection of custom resources returns a list, got {s:?}")
        }
    }
    let left = pools.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&left.items), ["c"]);

    server.shutdown().await;
}

#[tokio::test]
async fn watch_sees_added_modified_and_deleted() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let pp = PostParams::default();
    // An object that exists before the watch starts is not replayed from the list's version.
    pools
        .create(&pp, &pool("old", "nginx:1", 1, &[]))
        .await
        .unwrap();
    let from = pools.list(&ListParams::default()).await.unwrap();
    let from = from.metadata.resource_version.unwrap();
    let mut events = pools
        .watch(&WatchParams::default().timeout(30), &from)
        .await
        .unwrap()
        .boxed();

    let created = pools
        .create(&pp, &pool("w", "nginx:1", 1, &[]))
        .await
        .unwrap();
    pools
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    // Another namespace: a namespaced watch does not see it.
    cs.example_v1()
        .pools("team-b")
        .create(&pp, &pool("elsewhere", "nginx:1", 1, &[]))
        .await
        .unwrap();
    pools.delete("w", &DeleteParams::default()).await.unwrap();

    let added = next_event(&mut events, "ADDED of team-a/w").await;
    assert_eq!(describe(&added), ("ADDED", "team-a/w".into()));
    assert_eq!(object(added), created);
    let modified = next_event(&mut events, "MODIFIED of team-a/w").await;
    assert_eq!(describe(&modified), ("MODIFIED", "team-a/w".into()));
    assert_eq!(replicas(&object(modified)), Some(3));
    let deleted = next_event(&mut events, "DELETED of team-a/w").await;
    assert_eq!(describe(&deleted), ("DELETED", "team-a/w".into()));
    assert_eq!(replicas(&object(deleted)), Some(3));
    server.shutdown().await;
}

#[tokio::test]
async fn all_namespaces_client_lists_and_watches_across_namespaces() {
    let (server, cs) = start().await;
    let v1 = cs.example_v1();
    let pp = PostParams::default();
    let sel = [("suite", "all")];
    v1.pools("team-a")
        .create(&pp, &pool("x", "i", 1, &sel))
        .await
        .unwrap();
    v1.pools("team-b")
        .create(&pp, &pool("y", "i", 1, &sel))
        .await
        .unwrap();
    v1.pools("team-b")
        .create(&pp, &pool("z", "i", 1, &[]))
        .await
        .unwrap();

    let all = v1.pools_all();
    let listed = all
        .list(&ListParams::default().labels("suite=all"))
        .await
        .unwrap();
    let keys: Vec<String> = listed.items.iter().map(key).collect();
    assert_eq!(keys, ["team-a/x", "team-b/y"]);
    let everything = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(everything.items.len(), 3);

    let from = everything.metadata.resource_version.unwrap();
    let mut events = all
        .watch(&WatchParams::default().timeout(30), &from)
        .await
        .unwrap()
        .boxed();
    v1.pools("team-c")
        .create(&pp, &pool("p", "i", 1, &[]))
        .await
        .unwrap();
    v1.pools("team-a")
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    v1.pools("team-b")
        .delete("y", &DeleteParams::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    for what in ["ADDED team-c/p", "MODIFIED team-a/x", "DELETED team-b/y"] {
        seen.push(describe(&next_event(&mut events, what).await));
    }
    assert_eq!(
        seen,
        [
            ("ADDED", "team-c/p".to_string()),
            ("MODIFIED", "team-a/x".to_string()),
            ("DELETED", "team-b/y".to_string()),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn errors_carry_the_servers_status_intact() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let pp = PostParams::default();

    let not_found = status(json!({
        "metadata": {}, "status": "Failure", "reason": "NotFound", "code": 404,
        "message": "pools.example.com \"missing\" not found",
        "details": {"name": "missing", "group": "example.com", "kind": "pools"},
    }));
    assert_eq!(
        api_status("GET of a missing object", pools.get("missing").await),
        not_found
    );
    assert_eq!(
        api_status(
            "DELETE of a missing object",
            pools.delete("missing", &DeleteParams::default()).await
        ),
        not_found
    );
    assert_eq!(
        api_status(
            "merge patch of a missing object",
            pools
                .patch("missing", &PatchParams::default(), &Patch::Merge(json!({})))
                .await
        ),
        not_found
    );
    assert_eq!(
        api_status(
            "GET scale of a missing object",
            pools.get_scale("missing").await
        ),
        not_found
    );

    pools
        .create(&pp, &pool("a", "nginx:1", 1, &[]))
        .await
        .unwrap();
    assert_eq!(
        api_status(
            "a second create",
            pools.create(&pp, &pool("a", "x", 1, &[])).await
        ),
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "AlreadyExists", "code": 409,
            "message": "pools.example.com \"a\" already exists",
            "details": {"name": "a", "group": "example.com", "kind": "pools"},
        }))
    );

    // An apply configuration for another namespace than the client's: 400 from the server.
    // Forced: the create's manager owns spec.image, and kube-apiserver's patcher answers an
    // apply conflict (409) before it compares the namespaces (patch.go: applyPatch, checkName).
    assert_eq!(
        api_status(
            "applying a team-b configuration through the team-a client",
            pools
                .apply(
                    &PoolApply::new("a", "team-b").spec(PoolSpecApply::new().image("x")),
                    &PatchParams::apply("mgr").force(),
                )
                .await
        ),
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "BadRequest", "code": 400,
            "message": "the namespace of the provided object does not match the namespace sent on the request",
        }))
    );

    // A required field removed: 422 Invalid with the field's cause.
    let remove_image: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/spec/image"}])).unwrap();
    let invalid = api_status(
        "removing the required spec.image",
        pools
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::<()>::Json(remove_image),
            )
            .await,
    );
    assert_eq!(
        invalid,
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "Invalid", "code": 422,
            "message": "Pool.example.com \"a\" is invalid: spec.image: Required value",
            "details": {
                "name": "a", "group": "example.com", "kind": "Pool",
                "causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.image"}],
            },
        }))
    );
    // The same through a merge patch that nulls the field.
    let nulled = api_status(
        "nulling the required spec.image",
        pools
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"image": null}})),
            )
            .await,
    );
    assert_eq!(nulled, invalid);
    assert_eq!(pools.get("a").await.unwrap().spec.unwrap().image, "nginx:1");

    // A value below the schema's minimum, at the scale subresource's specReplicasPath: the
    // server's scale check adds its own cause, at the path as written in the CRD.
    assert_eq!(
        api_status(
            "creating with spec.replicas below its minimum",
            pools.create(&pp, &pool("neg", "nginx:1", -1, &[])).await
        ),
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "Invalid", "code": 422,
            "message": "Pool.example.com \"neg\" is invalid: [spec.replicas: Invalid value: -1: \
                        spec.replicas in body should be greater than or equal to 0, \
                        .spec.replicas: Invalid value: -1: should be a non-negative integer]",
            "details": {
                "name": "neg", "group": "example.com", "kind": "Pool",
                "causes": [{
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                    "field": "spec.replicas",
                }, {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: should be a non-negative integer",
                    "field": ".spec.replicas",
                }],
            },
        }))
    );
    assert_eq!(pools.get_opt("neg").await.unwrap(), None);
    server.shutdown().await;
}

/// The managers listed in `managedFields` with the `spec` fields each owns.
fn spec_owners(p: &Pool) -> BTreeMap<String, Vec<String>> {
    let mut owners = BTreeMap::new();
    for entry in p.metadata.managed_fields.iter().flatten() {
        let fields = entry
            .fields_v1
            .as_ref()
            .and_then(|f| f.0.pointer("/f:spec"))
            .and_then(Value::as_object)
            .map(|spec| spec.keys().cloned().collect())
            .unwrap_or_default();
        owners.insert(entry.manager.clone().unwrap_or_default(), fields);
    }
    owners
}

#[tokio::test]
async fn server_side_apply_owns_fields_and_conflicts() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let config = |replicas: i32| {
        PoolApply::new("ssa", "team-a")
            .spec(PoolSpecApply::new().image("nginx:1").replicas(replicas))
    };

    // The first apply creates the object.
    let created = pools
        .apply(&config(3), &PatchParams::apply("mgr-a"))
        .await
        .unwrap();
    assert_eq!(replicas(&created), Some(3));
    assert_eq!(created.spec.as_ref().unwrap().image, "nginx:1");
    assert_eq!(
        spec_owners(&created),
        BTreeMap::from([("mgr-a".into(), vec!["f:image".into(), "f:replicas".into()])])
    );
    // Only the fields set are sent: applying `replicas` alone claims nothing else.
    let only_replicas = PoolApply::new("ssa", "team-a").spec(PoolSpecApply::new().replicas(3));
    assert_eq!(
        serde_json::to_value(&only_replicas).unwrap(),
        json!({"apiVersion": "example.com/v1", "kind": "Pool",
               "metadata": {"name": "ssa", "namespace": "team-a"}, "spec": {"replicas": 3}})
    );

    // Another manager applying a different value to an owned field: 409 naming the owner.
    let mgr_b = PoolApply::new("ssa", "team-a").spec(PoolSpecApply::new().replicas(5));
    let conflict = api_status(
        "mgr-b applying spec.replicas owned by mgr-a",
        pools.apply(&mgr_b, &PatchParams::apply("mgr-b")).await,
    );
    assert_eq!(conflict.code, 409, "{conflict:?}");
    assert_eq!(conflict.reason, "Conflict", "{conflict:?}");
    assert!(
        conflict
            .message
            .starts_with("Apply failed with 1 conflict: conflict with \"mgr-a\"")
            && conflict.message.ends_with(": .spec.replicas"),
        "{conflict:?}"
    );
    let causes = conflict
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert_eq!(causes.len(), 1, "{conflict:?}");
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".spec.replicas");
    assert!(
        causes[0].message.starts_with("conflict with \"mgr-a\""),
        "{causes:?}"
    );
    assert_eq!(
        replicas(&pools.get("ssa").await.unwrap()),
        Some(3),
        "the conflict changed nothing"
    );

    // Forced, mgr-b wins and takes the field over.
    let forced = pools
        .apply(&mgr_b, &PatchParams::apply("mgr-b").force())
        .await
        .unwrap();
    assert_eq!(replicas(&forced), Some(5));
    assert_eq!(replicas(&pools.get("ssa").await.unwrap()), Some(5));
    assert_eq!(
        spec_owners(&forced),
        BTreeMap::from([
            ("mgr-a".into(), vec!["f:image".into()]),
            ("mgr-b".into(), vec!["f:replicas".into()]),
        ])
    );
    // Now mgr-a is the one in conflict.
    let back = api_status(
        "mgr-a applying spec.replicas now owned by mgr-b",
        pools.apply(&config(3), &PatchParams::apply("mgr-a")).await,
    );
    assert_eq!((back.code, back.reason.as_str()), (409, "Conflict"));
    assert!(back.message.contains("conflict with \"mgr-b\""), "{back:?}");

    // Without a field manager the apply is refused before any request is sent.
    let requests = server.requests().len();
    assert!(requests > 0, "the server records requests");
    assert!(matches!(
        pools.apply(&config(1), &PatchParams::default()).await,
        Err(kube::Error::BuildRequest(_))
    ));
    assert_eq!(server.requests().len(), requests, "no request was sent");

    // Cluster-scoped kinds apply without a namespace.
    let regions = cs.example_v1().regions();
    let applied = regions
        .apply(
            &RegionApply::new("eu").spec(RegionSpecApply::new().display_name("Europe").capacity(9)),
            &PatchParams::apply("mgr-a"),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.namespace, None);
    assert_eq!(applied.spec.as_ref().unwrap().capacity, Some(9));
    assert_eq!(regions.get("eu").await.unwrap(), applied);
    server.shutdown().await;
}

/// The exact conflict text of a real kube-apiserver: for a manager whose entry is an `Apply`,
/// `printManager` prints only the quoted name (`using <apiVersion>` is for `Update` entries).
#[tokio::test]
async fn server_side_apply_conflict_message_matches_a_real_server() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let mine = PoolApply::new("ssa", "team-a").spec(PoolSpecApply::new().image("i").replicas(3));
    pools
        .apply(&mine, &PatchParams::apply("mgr-a"))
        .await
        .unwrap();
    let theirs = PoolApply::new("ssa", "team-a").spec(PoolSpecApply::new().replicas(5));
    let conflict = api_status(
        "mgr-b applying spec.replicas owned by mgr-a",
        pools.apply(&theirs, &PatchParams::apply("mgr-b")).await,
    );
    assert_eq!(
        conflict,
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "Conflict", "code": 409,
            "message": "Apply failed with 1 conflict: conflict with \"mgr-a\": .spec.replicas",
            "details": {"causes": [{
                "reason": "FieldManagerConflict",
                "message": "conflict with \"mgr-a\"",
                "field": ".spec.replicas",
            }]},
        }))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let (server, cs) = start().await;
    let pools = cs.example_v1().pools("team-a");
    let pp = PostParams::default();

    // Status is dropped on create when the status subresource is on.
    let mut with_status = pool("st", "nginx:1", 2, &[]);
    with_status.status = Some(PoolStatus {
        phase: Some("Ignored".into()),
        ..PoolStatus::default()
    });
    let created = pools.create(&pp, &with_status).await.unwrap();
    assert_eq!(created.status, None);

    // update_status: status changes, the spec in the same body does not.
    let mut desired = created.clone();
    desired.status = Some(PoolStatus {
        replicas: Some(2),
        selector: Some("app=st".into()),
        ..PoolStatus::default()
    });
    desired.spec.as_mut().unwrap().replicas = Some(99);
    let updated = pools.update_status(&pp, &desired).await.unwrap();
    assert_eq!(updated.status, desired.status);
    assert_eq!(replicas(&updated), Some(2), "/status ignores the spec");
    assert_eq!(
        updated.metadata.generation,
        Some(1),
        "status writes keep the generation"
    );
    assert_eq!(pools.get("st").await.unwrap(), updated);
    // ... and a stale resourceVersion on /status is a conflict too.
    let stale = api_status(
        "PUT /status with a stale resourceVersion",
        pools.update_status(&pp, &desired).await,
    );
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));

    // patch_status
    let patched = pools
        .patch_status(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}, "spec": {"replicas": 50}})),
        )
        .await
        .unwrap();
    let st = patched.status.clone().unwrap();
    assert_eq!(st.phase.as_deref(), Some("Running"));
    assert_eq!(
        st.replicas,
        Some(2),
        "a merge patch keeps the other status fields"
    );
    assert_eq!(replicas(&patched), Some(2));

    // apply_status
    let applied = pools
        .apply_status(
            &PoolApply::new("st", "team-a")
                .spec(PoolSpecApply::new().image("ignored").replicas(42))
                .status(PoolStatusApply::new().ready_replicas(1)),
            &PatchParams::apply("status-mgr"),
        )
        .await
        .unwrap();
    let st = applied.status.clone().unwrap();
    assert_eq!(st.ready_replicas, Some(1));
    assert_eq!(
        st.phase.as_deref(),
        Some("Running"),
        "fields other managers own stay"
    );
    assert_eq!(applied.spec, created.spec, "/status apply ignores the spec");
    assert_eq!(applied.metadata.generation, Some(1));
    assert!(
        applied
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .any(|m| m.manager.as_deref() == Some("status-mgr")
                && m.operation.as_deref() == Some("Apply")
                && m.subresource.as_deref() == Some("status")),
        "{:?}",
        applied.metadata.managed_fields
    );
    // The status subresource of an object that does not exist is not created by an apply.
    assert_eq!(
        api_status(
            "apply_status to a missing object",
            pools
                .apply_status(
                    &PoolApply::new("nope", "team-a").status(PoolStatusApply::new().phase("x")),
                    &PatchParams::apply("status-mgr"),
                )
                .await
        )
        .code,
        404
    );

    // get_scale / update_scale: spec.replicas through the scale subresource.
    let scale = pools.get_scale("st").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("st"));
    assert_eq!(scale.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(
        scale.metadata.resource_version,
        applied.metadata.resource_version
    );
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let scale_status = scale.status.clone().unwrap();
    assert_eq!(scale_status.replicas, 2);
    assert_eq!(scale_status.selector.as_deref(), Some("app=st"));

    let mut rescale = scale.clone();
    rescale.spec.as_mut().unwrap().replicas = Some(6);
    let rescaled = pools.update_scale("st", &pp, &rescale).await.unwrap();
    assert_eq!(rescaled.spec.unwrap().replicas, Some(6));
    let after = pools.get("st").await.unwrap();
    assert_eq!(replicas(&after), Some(6));
    assert_eq!(after.spec.as_ref().unwrap().image, "nginx:1");
    assert_eq!(
        after.status, applied.status,
        "a scale write leaves the status alone"
    );
    assert_eq!(after.metadata.generation, Some(2));
    assert_eq!(
        pools.get_scale("st").await.unwrap().spec.unwrap().replicas,
        Some(6)
    );
    // The old Scale's resourceVersion is stale now.
    let stale = api_status(
        "PUT /scale with a stale resourceVersion",
        pools.update_scale("st", &pp, &rescale).await,
    );
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert_eq!(replicas(&pools.get("st").await.unwrap()), Some(6));
    server.shutdown().await;
}

#[tokio::test]
async fn cluster_scoped_client() {
    let (server, cs) = start().await;
    let regions = cs.example_v1().regions();
    let pp = PostParams::default();
    let eu = regions.create(&pp, &region("eu", 3)).await.unwrap();
    assert_eq!(eu.metadata.namespace, None);
    regions.create(&pp, &region("us", 5)).await.unwrap();
    assert_eq!(regions.get("eu").await.unwrap(), eu);
    assert_eq!(
        names(&regions.list(&ListParams::default()).await.unwrap().items),
        ["eu", "us"]
    );
    let mut bigger = eu.clone();
    bigger.spec.as_mut().unwrap().capacity = Some(4);
    let bigger = regions.update(&pp, &bigger).await.unwrap();
    assert_eq!(bigger.spec.unwrap().capacity, Some(4));
    regions
        .delete("us", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(regions.get_opt("us").await.unwrap(), None);
    assert_eq!(
        api_status("GET of a missing region", regions.get("us").await),
        status(json!({
            "metadata": {}, "status": "Failure", "reason": "NotFound", "code": 404,
            "message": "regions.example.com \"us\" not found",
            "details": {"name": "us", "group": "example.com", "kind": "regions"},
        }))
    );
    server.shutdown().await;
}

/// What an event handler saw, by object key.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Add(String, bool),
    /// Key, old and new resourceVersion.
    Update(String, String, String),
    Delete(String),
}

/// An event handler that reports every event on `tx`.
fn recorder<K: Resource + Send + Sync + 'static>(
    tx: mpsc::UnboundedSender<Seen>,
) -> EventHandlerFns<K> {
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    EventHandlerFns::new()
        .on_add(move |k: &Arc<K>, initial| {
            let _ = t1.send(Seen::Add(key(k.as_ref()), initial));
        })
        .on_update(move |old: &Arc<K>, new: &Arc<K>| {
            let _ = t2.send(Seen::Update(
                key(new.as_ref()),
                rv(old.as_ref()),
                rv(new.as_ref()),
            ));
        })
        .on_delete(move |d: &Deleted<K>| {
            let _ = t3.send(Seen::Delete(key(d.object().as_ref())));
        })
}

/// The next `n` events on `rx` concerning `key`, in order (events of other objects skipped).
async fn events_of(rx: &mut mpsc::UnboundedReceiver<Seen>, key: &str, n: usize) -> Vec<Seen> {
    let mut found = Vec::new();
    while found.len() < n {
        let what = format!(
            "handler event {} of {n} for {key} (so far: {found:?})",
            found.len() + 1
        );
        let seen = within(&what, rx.recv())
            .await
            .unwrap_or_else(|| panic!("the handler went away while waiting for {what}"));
        let of = match &seen {
            Seen::Add(k, _) | Seen::Update(k, _, _) | Seen::Delete(k) => k,
        };
        if of == key {
            found.push(seen);
        }
    }
    found
}

#[tokio::test]
async fn shared_informers_of_generated_and_builtin_kinds() {
    let (server, cs) = start().await;
    let v1 = cs.example_v1();
    let pp = PostParams::default();
    // Objects that exist before the informers start arrive as the initial list.
    v1.pools("team-a")
        .create(&pp, &pool("p0", "i", 1, &[]))
        .await
        .unwrap();
    v1.regions().create(&pp, &region("r0", 1)).await.unwrap();
    let configmaps: ResourceClient<ConfigMap> =
        ResourceClient::namespaced(cs.client().clone(), "team-a");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("cm0".into());
    configmaps.create(&pp, &cm).await.unwrap();

    let factory = SharedInformerFactory::new(cs.clone());
    let pools: PoolInformer = factory.example().v1().pools();
    let regions = factory.example().v1().regions();
    let cms = factory.informer_for::<ConfigMap>();

    // The same informer however it is asked for.
    let pools_again = factory.example().v1().pools();
    assert!(
        pools
            .informer()
            .store()
            .is_same_cache(&pools_again.informer().store())
    );
    assert!(
        pools
            .informer()
            .store()
            .is_same_cache(&factory.informer_for::<Pool>().store())
    );
    assert!(
        regions
            .informer()
            .store()
            .is_same_cache(&factory.example().v1().regions().informer().store())
    );
    assert!(
        cms.store()
            .is_same_cache(&factory.informer_for::<ConfigMap>().store())
    );
    assert!(
        format!("{factory:?}").contains("informers: 3"),
        "three kinds, three informers: {factory:?}"
    );

    // Before the start, listers refuse to answer rather than answer "nothing".
    let pool_lister: PoolLister = pools.lister();
    let region_lister: RegionLister = regions.lister();
    assert!(!pool_lister.has_synced());
    assert_eq!(pool_lister.list(&Selector::default()), Err(NotSynced));
    assert_eq!(pool_lister.pools("team-a").get("p0"), Err(NotSynced));
    assert_eq!(
        pool_lister.pools("team-a").list(&Selector::default()),
        Err(NotSynced)
    );
    assert_eq!(region_lister.get("r0"), Err(NotSynced));
    assert_eq!(region_lister.list(&Selector::default()), Err(NotSynced));
    assert_eq!(cms.lister().list(&Selector::default()), Err(NotSynced));

    // Handlers: on the pool informer through one accessor and through the other, which must be
    // the same informer, so both see every event.
    let (pool_tx, mut pool_rx) = mpsc::unbounded_channel();
    let (pool_tx2, mut pool_rx2) = mpsc::unbounded_channel();
    let (region_tx, mut region_rx) = mpsc::unbounded_channel();
    let (cm_tx, mut cm_rx) = mpsc::unbounded_channel();
    let pool_reg = pools
        .informer()
        .add_event_handler(recorder::<Pool>(pool_tx))
        .unwrap();
    pools_again
        .informer()
        .add_event_handler(recorder::<Pool>(pool_tx2))
        .unwrap();
    regions
        .informer()
        .add_event_handler(recorder::<Region>(region_tx))
        .unwrap();
    cms.add_event_handler(recorder::<ConfigMap>(cm_tx)).unwrap();

    factory.start();
    within(
        "the factory's caches to sync",
        factory.wait_for_cache_sync(),
    )
    .await;
    assert!(pool_lister.has_synced() && region_lister.has_synced() && cms.has_synced());
    assert_eq!(
        names(&unarc(pool_lister.list(&Selector::default()).unwrap())),
        ["p0"]
    );
    assert_eq!(
        region_lister.get("r0").unwrap().map(|r| name(r.as_ref())),
        Some("r0".into())
    );
    assert_eq!(
        names(&unarc(
            cms.lister()
                .namespace("team-a")
                .list(&Selector::default())
                .unwrap()
        )),
        ["cm0"]
    );

    assert_eq!(
        events_of(&mut pool_rx, "team-a/p0", 1).await,
        [Seen::Add("team-a/p0".into(), true)]
    );
    assert_eq!(
        events_of(&mut pool_rx2, "team-a/p0", 1).await,
        [Seen::Add("team-a/p0".into(), true)]
    );
    assert_eq!(
        events_of(&mut region_rx, "r0", 1).await,
        [Seen::Add("r0".into(), true)]
    );
    assert_eq!(
        events_of(&mut cm_rx, "team-a/cm0", 1).await,
        [Seen::Add("team-a/cm0".into(), true)]
    );
    within("the pool handler's initial list to be handled", async {
        while !pool_reg.has_synced() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;

    // Adds, updates and deletes of each kind reach the handlers, in order.
    let p1 = v1
        .pools("team-b")
        .create(&pp, &pool("p1", "i", 1, &[]))
        .await
        .unwrap();
    let p1b = v1
        .pools("team-b")
        .patch(
            "p1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    v1.pools("team-b")
        .delete("p1", &DeleteParams::default())
        .await
        .unwrap();
    let expected = [
        Seen::Add("team-b/p1".into(), false),
        Seen::Update("team-b/p1".into(), rv(&p1), rv(&p1b)),
        Seen::Delete("team-b/p1".into()),
    ];
    assert_eq!(events_of(&mut pool_rx, "team-b/p1", 3).await, expected);
    assert_eq!(events_of(&mut pool_rx2, "team-b/p1", 3).await, expected);

    let r1 = v1.regions().create(&pp, &region("r1", 1)).await.unwrap();
    let r1b = v1
        .regions()
        .patch(
            "r1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"capacity": 2}})),
        )
        .await
        .unwrap();
    v1.regions()
        .delete("r1", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        events_of(&mut region_rx, "r1", 3).await,
        [
            Seen::Add("r1".into(), false),
            Seen::Update("r1".into(), rv(&r1), rv(&r1b)),
            Seen::Delete("r1".into()),
        ]
    );

    let mut cm1 = ConfigMap::default();
    cm1.metadata.name = Some("cm1".into());
    let cm1 = configmaps.create(&pp, &cm1).await.unwrap();
    let mut cm1b = cm1.clone();
    cm1b.data = Some(BTreeMap::from([("k".to_string(), "v".to_string())]));
    let cm1b = configmaps.update(&pp, &cm1b).await.unwrap();
    configmaps
        .delete("cm1", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        events_of(&mut cm_rx, "team-a/cm1", 3).await,
        [
            Seen::Add("team-a/cm1".into(), false),
            Seen::Update("team-a/cm1".into(), rv(&cm1), rv(&cm1b)),
            Seen::Delete("team-a/cm1".into()),
        ]
    );
    // The caches follow: the deleted objects are gone from the listers.
    assert_eq!(pool_lister.pools("team-b").get("p1"), Ok(None));
    assert_eq!(region_lister.get("r1"), Ok(None));

    factory.shutdown();
    server.shutdown().await;
}

/// Owned copies of a lister's answer, sorted by key (listers answer in no particular order).
fn unarc<K: Clone + Resource>(items: Vec<Arc<K>>) -> Vec<K> {
    let mut items: Vec<K> = items.iter().map(|k| k.as_ref().clone()).collect();
    items.sort_by_key(key);
    items
}

/// `key -> resourceVersion` of some objects.
fn versions<K: Resource>(items: impl IntoIterator<Item = K>) -> BTreeMap<String, String> {
    items.into_iter().map(|k| (key(&k), rv(&k))).collect()
}

fn versions_arc<K: Resource>(items: Vec<Arc<K>>) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|k| (key(k.as_ref()), rv(k.as_ref())))
        .collect()
}

/// One namespace's churn: creates, merge patches, PUTs that flip a label, deletes.
async fn churn(cs: Clientset, ns: &'static str) {
    let pools = cs.example_v1().pools(ns);
    let pp = PostParams::default();
    for i in 0..12 {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        pools
            .create(&pp, &pool(&format!("p{i}"), "i", i, &[("parity", parity)]))
            .await
            .unwrap();
    }
    for i in (0..12).step_by(3) {
        pools
            .patch(
                &format!("p{i}"),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"tier": "gold"}})),
            )
            .await
            .unwrap();
    }
    for i in (1..12).step_by(5) {
        let mut p = pools.get(&format!("p{i}")).await.unwrap();
        p.metadata.labels = Some(BTreeMap::from([("parity".into(), "flipped".into())]));
        pools.update(&pp, &p).await.unwrap();
    }
    for i in (2..12).step_by(4) {
        pools
            .delete(&format!("p{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn listers_match_the_server_after_churn() {
    let (server, cs) = start().await;
    let v1 = cs.example_v1();
    let pp = PostParams::default();
    for ns in ["churn-a", "churn-b"] {
        v1.pools(ns)
            .create(&pp, &pool("before", "i", 1, &[("parity", "even")]))
            .await
            .unwrap();
    }
    for i in 0..4 {
        v1.regions()
            .create(&pp, &region(&format!("r{i}"), i))
            .await
            .unwrap();
    }

    let factory = SharedInformerFactory::new(cs.clone());
    let pools = factory.example().v1().pools();
    let regions = factory.example().v1().regions();
    let lister = pools.lister();
    let region_lister = regions.lister();
    assert_eq!(lister.list(&Selector::default()), Err(NotSynced));
    assert_eq!(lister.pools("churn-a").get("before"), Err(NotSynced));
    factory.start();
    within(
        "the pool and region caches to sync",
        factory.wait_for_cache_sync(),
    )
    .await;
    assert_eq!(
        versions_arc(lister.list(&Selector::default()).unwrap()),
        versions(
            v1.pools_all()
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
        ),
        "the initial list is cached"
    );

    // Churn in three namespaces at once, and on the cluster-scoped kind.
    let tasks = ["churn-a", "churn-b", "churn-c"].map(|ns| tokio::spawn(churn(cs.clone(), ns)));
    for i in 4..10 {
        v1.regions()
            .create(&pp, &region(&format!("r{i}"), i))
            .await
            .unwrap();
    }
    for i in [0, 5] {
        v1.regions()
            .delete(&format!("r{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    v1.regions()
        .patch(
            "r1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"capacity": 100}})),
        )
        .await
        .unwrap();
    for task in tasks {
        within("a namespace's churn", task)
            .await
            .expect("churn task");
    }

    // Wait until the caches show exactly what the server lists.
    let server_pools = v1
        .pools_all()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let server_regions = v1
        .regions()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(
        server_pools.len(),
        2 + 3 * 9,
        "12 created and 3 deleted per namespace"
    );
    assert_eq!(server_regions.len(), 8);
    let (want_pools, want_regions) = (
        versions(server_pools.clone()),
        versions(server_regions.clone()),
    );
    let mut last = (BTreeMap::new(), BTreeMap::new());
    let converged = tokio::time::timeout(DEADLINE, async {
        loop {
            last = (
                versions_arc(lister.list(&Selector::default()).unwrap()),
                versions_arc(region_lister.list(&Selector::default()).unwrap()),
            );
            if last.0 == want_pools && last.1 == want_regions {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        converged.is_ok(),
        "timed out after {DEADLINE:?} waiting for the listers to equal the server's lists\n\
         pools: lister {:?}\n       server {want_pools:?}\nregions: lister {:?}\n         server {want_regions:?}",
        last.0,
        last.1
    );

    // Every cached object is the server's object, whole.
    for p in &server_pools {
        let ns = p.metadata.namespace.as_deref().unwrap();
        let cached = lister.pools(ns).get(&name(p)).unwrap();
        assert_eq!(cached.as_deref(), Some(p), "cached {}", key(p));
    }
    for r in &server_regions {
        assert_eq!(region_lister.get(&name(r)).unwrap().as_deref(), Some(r));
    }
    // Per namespace, and with label selectors (including labels changed by updates).
    for ns in ["churn-a", "churn-b", "churn-c", "nowhere"] {
        let from_server = v1
            .pools(ns)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert_eq!(
            versions_arc(lister.pools(ns).list(&Selector::default()).unwrap()),
            versions(from_server),
            "namespace {ns}"
        );
        for parity in ["even", "odd", "flipped"] {
            let from_server = v1
                .pools(ns)
                .list(&ListParams::default().labels(&format!("parity={parity}")))
                .await
                .unwrap()
                .items;
            let selector = Selector::from_iter([("parity".to_string(), parity.to_string())]);
            assert_eq!(
                versions_arc(lister.pools(ns).list(&selector).unwrap()),
                versions(from_server),
                "namespace {ns}, parity={parity}"
            );
        }
    }
    let flipped = Selector::from_iter([("parity", "flipped")]);
    assert_eq!(
        versions_arc(lister.list(&flipped).unwrap()),
        versions(
            v1.pools_all()
                .list(&ListParams::default().labels("parity=flipped"))
                .await
                .unwrap()
                .items
        ),
    );
    assert_eq!(
        lister.list(&flipped).unwrap().len(),
        3 * 2,
        "p1 and p11 flipped (p6 was deleted) in each namespace"
    );
    // Deleted and never-created names are Ok(None), not errors.
    assert_eq!(lister.pools("churn-a").get("p2"), Ok(None));
    assert_eq!(lister.pools("churn-a").get("no-such-pool"), Ok(None));
    assert_eq!(lister.pools("nowhere").get("p0"), Ok(None));
    assert_eq!(region_lister.get("r0"), Ok(None));
    assert_eq!(
        region_lister
            .get("r1")
            .unwrap()
            .and_then(|r| r.spec.as_ref().and_then(|s| s.capacity)),
        Some(100)
    );

    factory.shutdown();
    server.shutdown().await;
}
