//! The sync logic in client-go's style (upstream's `controller_test.go`): listers over stores
//! filled by hand, `sync` called directly, and the server writes and events it asked for
//! recorded and compared with what is expected. No server, no informers.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_codegen_runtime::cache::{Deleted, EventHandler, Lister, Store};
use kube_codegen_runtime::controller::FakeWrites;
use kube_codegen_runtime::controller::owners::{EnqueueRequestForOwner, controller_owner_key};
use kube_codegen_runtime::controller::writes::Verb;
use kube_codegen_runtime::events::EventType;
use kube_codegen_runtime::workqueue::WorkQueue;
use sample_controller::controller::{Controller, SyncError, new_deployment};
use sample_controller::samplecontroller::v1alpha1::{Foo, FooLister, FooSpec, FooStatus};
use tokio::sync::watch;

/// One write the controller sent (upstream's expected `core.Action`s).
#[derive(Debug, Clone, PartialEq)]
enum Write {
    CreateDeployment(Deployment),
    UpdateDeployment(Deployment),
    UpdateFooStatus(Foo),
}

/// An event about a Foo, as the runtime's `FakeWrites` recorded it (upstream's fake recorder).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FooEvent {
    type_: EventType,
    reason: String,
    note: String,
}

impl FooEvent {
    fn normal(reason: &str, note: &str) -> Self {
        let (type_, reason, note) = (EventType::Normal, reason.into(), note.into());
        FooEvent {
            type_,
            reason,
            note,
        }
    }

    fn warning(reason: &str, note: &str) -> Self {
        let (type_, reason, note) = (EventType::Warning, reason.into(), note.into());
        FooEvent {
            type_,
            reason,
            note,
        }
    }
}

/// Stores filled by hand (upstream's `fooLister`/`deploymentLister` indexers) and the
/// controller over them.
struct Fixture {
    foos: Arc<Store<Foo>>,
    deployments: Arc<Store<Deployment>>,
    controller: Controller<FakeWrites>,
}

impl Fixture {
    fn new(foos: &[Foo], deployments: &[Deployment]) -> Fixture {
        let foo_store = Arc::new(Store::with_namespace_index());
        for f in foos {
            foo_store.add(Arc::new(f.clone())).unwrap();
        }
        let deployment_store = Arc::new(Store::with_namespace_index());
        for d in deployments {
            deployment_store.add(Arc::new(d.clone())).unwrap();
        }
        let controller = Controller::new(
            FooLister::new(Lister::new(foo_store.clone())),
            Lister::new(deployment_store.clone()),
            FakeWrites::default(),
        );
        Fixture {
            foos: foo_store,
            deployments: deployment_store,
            controller,
        }
    }

    /// The writes recorded (every attempt, failed or not), each of the kind its verb writes.
    fn writes(&self) -> Vec<Write> {
        let writes = self.controller.writes().writes();
        let decode = |w: &kube_codegen_runtime::controller::writes::Write| match w.verb {
            Verb::Create => Write::CreateDeployment(w.object().expect("a Deployment created")),
            Verb::Replace => Write::UpdateDeployment(w.object().expect("a Deployment replaced")),
            Verb::ReplaceStatus => Write::UpdateFooStatus(w.object().expect("a Foo's status")),
        };
        writes.iter().map(decode).collect()
    }

    /// The events recorded (every attempt, failed or not), by the Foo's name; every one is
    /// about a Foo in `default`, with the action `Sync`.
    fn events(&self) -> Vec<(String, FooEvent)> {
        let events = self.controller.writes().events();
        events
            .into_iter()
            .map(|e| {
                assert_eq!(e.regarding.kind.as_deref(), Some("Foo"), "{e:?}");
                assert_eq!(e.regarding.namespace.as_deref(), Some("default"), "{e:?}");
                assert_eq!(e.action, "Sync", "{e:?}");
                let note = e.note.unwrap_or_default();
                let event = FooEvent {
                    type_: e.type_,
                    reason: e.reason,
                    note,
                };
                (e.regarding.name.unwrap_or_default(), event)
            })
            .collect()
    }
}

fn foo(name: &str, deployment_name: Option<&str>, replicas: Option<i32>) -> Foo {
    Foo {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("7".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(FooSpec {
            deployment_name: deployment_name.map(Into::into),
            replicas,
        }),
        ..Foo::default()
    }
}

fn with_status(mut foo: Foo, available: i32) -> Foo {
    foo.status = Some(FooStatus {
        available_replicas: Some(available),
    });
    foo
}

/// The Deployment as the server would hold it after the controller created it.
fn stored(mut deployment: Deployment, available: Option<i32>) -> Deployment {
    deployment.metadata.resource_version = Some("11".into());
    deployment.metadata.uid = Some("deployment-uid".into());
    deployment.status = available.map(|a| DeploymentStatus {
        available_replicas: Some(a),
        ..DeploymentStatus::default()
    });
    deployment
}

fn synced() -> FooEvent {
    FooEvent::normal("Synced", "Foo synced successfully")
}

#[tokio::test]
async fn creates_the_deployment_when_missing() {
    let f = foo("test", Some("web"), Some(1));
    let fx = Fixture::new(std::slice::from_ref(&f), &[]);

    fx.controller.sync("default/test").await.unwrap();

    let writes = fx.writes();
    assert_eq!(writes.len(), 2, "{writes:#?}");
    let Write::CreateDeployment(created) = &writes[0] else {
        panic!("first write is not a deployment create: {writes:#?}");
    };
    // What upstream's newDeployment makes, field by field.
    let labels = BTreeMap::from([
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), "test".to_owned()),
    ]);
    assert_eq!(created.metadata.name.as_deref(), Some("web"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.metadata.labels.as_ref(), Some(&labels));
    assert_eq!(
        created.metadata.owner_references,
        Some(vec![OwnerReference {
            api_version: "samplecontroller.k8s.io/v1alpha1".into(),
            kind: "Foo".into(),
            name: "test".into(),
            uid: "uid-test".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }])
    );
    let spec = created.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.selector.match_labels.as_ref(), Some(&labels));
    let template = &spec.template;
    assert_eq!(
        template.metadata.as_ref().unwrap().labels.as_ref(),
        Some(&labels)
    );
    let containers = &template.spec.as_ref().unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].name, "nginx");
    assert_eq!(containers[0].image.as_deref(), Some("nginx:latest"));
    assert_eq!(created.metadata.resource_version, None);
    assert_eq!(created.status, None);

    // Then the status from the created Deployment (no pods available yet), on a copy.
    assert_eq!(writes[1], Write::UpdateFooStatus(with_status(f.clone(), 0)));
    assert_eq!(fx.events(), [("test".to_owned(), synced())]);
    let cached = fx.foos.get_by_key("default/test").unwrap();
    assert_eq!(*cached, f, "the cached Foo is never modified");
}

#[tokio::test]
async fn does_nothing_when_everything_matches() {
    let f = with_status(foo("test", Some("web"), Some(1)), 1);
    let d = stored(new_deployment(&f, "web"), Some(1));
    let fx = Fixture::new(&[f], &[d]);

    fx.controller.sync("default/test").await.unwrap();

    assert_eq!(fx.writes(), Vec::<Write>::new());
    assert_eq!(fx.events(), [("test".to_owned(), synced())]);
}

#[tokio::test]
async fn updates_the_replicas_of_the_deployment() {
    let f = with_status(foo("test", Some("web"), Some(3)), 1);
    let mut d = stored(new_deployment(&f, "web"), Some(1));
    d.spec.as_mut().unwrap().replicas = Some(1);
    d.metadata.annotations = Some(BTreeMap::from([("kept".into(), "yes".into())]));
    let fx = Fixture::new(&[f], std::slice::from_ref(&d));

    fx.controller.sync("default/test").await.unwrap();

    // Only the replicas change; the resourceVersion makes the update conditional, and what
    // others set on the Deployment is kept.
    let mut want = d.clone();
    want.spec.as_mut().unwrap().replicas = Some(3);
    assert_eq!(fx.writes(), [Write::UpdateDeployment(want)]);
    assert_eq!(fx.events(), [("test".to_owned(), synced())]);
    let cached = fx.deployments.get_by_key("default/web").unwrap();
    assert_eq!(*cached, d, "the cached Deployment is never modified");
}

#[tokio::test]
async fn a_foo_without_replicas_leaves_them_alone() {
    let f = with_status(foo("test", Some("web"), None), 0);
    let mut d = stored(new_deployment(&f, "web"), None);
    d.spec.as_mut().unwrap().replicas = Some(5);
    let fx = Fixture::new(&[f], &[d]);

    fx.controller.sync("default/test").await.unwrap();

    assert_eq!(fx.writes(), Vec::<Write>::new());
}

#[tokio::test]
async fn the_status_follows_the_deployment() {
    let f = with_status(foo("test", Some("web"), Some(3)), 1);
    let d = stored(new_deployment(&f, "web"), Some(3));
    let fx = Fixture::new(std::slice::from_ref(&f), &[d]);

    fx.controller.sync("default/test").await.unwrap();

    assert_eq!(fx.writes(), [Write::UpdateFooStatus(with_status(f, 3))]);
    assert_eq!(fx.events(), [("test".to_owned(), synced())]);
}

#[tokio::test]
async fn a_deployment_not_controlled_by_the_foo_is_not_touched() {
    let f = foo("test", Some("web"), Some(3));
    let mut unowned = stored(new_deployment(&f, "web"), Some(1));
    unowned.metadata.owner_references = None;
    let mut owned_by_another = unowned.clone();
    owned_by_another.metadata.name = Some("other-web".into());
    owned_by_another.metadata.owner_references = Some(vec![OwnerReference {
        uid: "uid-someone-else".into(),
        ..kube_codegen_runtime::controller::owners::controller_ref(&f)
    }]);
    let g = foo("second", Some("other-web"), Some(1));
    let fx = Fixture::new(&[f, g], &[unowned, owned_by_another]);

    for (key, name) in [("default/test", "web"), ("default/second", "other-web")] {
        let err = fx.controller.sync(key).await.unwrap_err();
        let message = format!("Resource \"{name}\" already exists and is not managed by Foo");
        assert!(
            matches!(&err, SyncError::ResourceExists(m) if *m == message),
            "{err:?}"
        );
        assert_eq!(err.to_string(), message);
    }

    assert_eq!(fx.writes(), Vec::<Write>::new(), "no takeover, no status");
    let warning = |foo: &str, name: &str| {
        (
            foo.to_owned(),
            FooEvent {
                type_: EventType::Warning,
                reason: "ErrResourceExists".into(),
                note: format!("Resource \"{name}\" already exists and is not managed by Foo"),
            },
        )
    };
    assert_eq!(
        fx.events(),
        [warning("test", "web"), warning("second", "other-web")]
    );
}

#[tokio::test]
async fn an_invalid_foo_is_reported_once_and_not_retried() {
    let f = foo("test", None, Some(1));
    let fx = Fixture::new(std::slice::from_ref(&f), &[]);
    let invalid = || {
        (
            "test".to_owned(),
            FooEvent::warning("InvalidSpec", "spec.deploymentName must be specified"),
        )
    };

    // Ok (forget the key: retrying cannot help), however often it is synced.
    for _ in 0..3 {
        fx.controller.sync("default/test").await.unwrap();
    }
    assert_eq!(fx.writes(), Vec::<Write>::new());
    assert_eq!(fx.events(), [invalid()]);

    // An empty name is as invalid as a missing one, and a new spec (generation) is a new
    // report.
    let mut changed = foo("test", Some(""), Some(2));
    changed.metadata.generation = Some(2);
    fx.foos.update(Arc::new(changed)).unwrap();
    fx.controller.sync("default/test").await.unwrap();
    fx.controller.sync("default/test").await.unwrap();
    assert_eq!(fx.events(), [invalid(), invalid()]);

    // Fixed, then broken again: reported again.
    fx.foos
        .update(Arc::new(with_status(foo("test", Some("web"), Some(1)), 0)))
        .unwrap();
    fx.controller.sync("default/test").await.unwrap();
    fx.foos.update(Arc::new(f)).unwrap();
    fx.controller.sync("default/test").await.unwrap();
    let events = fx.events();
    assert_eq!(events.len(), 4, "{events:#?}");
    assert_eq!(events[2], ("test".to_owned(), synced()));
    assert_eq!(events[3], invalid());
}

#[tokio::test]
async fn an_invalid_foo_whose_report_failed_is_reported_again() {
    let fx = Fixture::new(&[foo("test", None, Some(1))], &[]);
    fx.controller.writes().fail_next_event(500);
    let err = fx.controller.sync("default/test").await.unwrap_err();
    assert!(
        matches!(
            &err,
            SyncError::Api {
                action: "writing an event about foo",
                ..
            }
        ),
        "{err:?}"
    );
    // The retry reports it (the failed attempt did not count), and then no more.
    fx.controller.sync("default/test").await.unwrap();
    fx.controller.sync("default/test").await.unwrap();
    let events = fx.events();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(events[0], events[1]);
}

#[tokio::test]
async fn a_lost_synced_event_does_not_fail_the_sync() {
    let f = with_status(foo("test", Some("web"), Some(1)), 1);
    let d = stored(new_deployment(&f, "web"), Some(1));
    let fx = Fixture::new(&[f], &[d]);
    fx.controller.writes().fail_next_event(500);
    fx.controller.sync("default/test").await.unwrap();
    assert_eq!(fx.events(), [("test".to_owned(), synced())]);
}

#[tokio::test]
async fn a_deleted_foo_is_a_no_op() {
    let fx = Fixture::new(&[], &[]);
    fx.controller.sync("default/gone").await.unwrap();
    assert_eq!(fx.writes(), Vec::<Write>::new());
    assert_eq!(fx.events(), Vec::<(String, FooEvent)>::new());
}

#[tokio::test]
async fn a_malformed_key_is_dropped() {
    let fx = Fixture::new(&[], &[]);
    fx.controller.sync("a/b/c").await.unwrap();
    assert_eq!(fx.writes(), Vec::<Write>::new());
}

#[tokio::test]
async fn failed_writes_are_errors_and_skip_the_synced_event() {
    let f = foo("test", Some("web"), Some(1));
    let fx = Fixture::new(&[f], &[]);
    fx.controller.writes().fail_next_write(500);
    let err = fx.controller.sync("default/test").await.unwrap_err();
    assert!(
        matches!(
            &err,
            SyncError::Api {
                action: "creating deployment",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("default/web"), "{err}");
    assert_eq!(
        fx.events(),
        Vec::<(String, FooEvent)>::new(),
        "no Synced after a failure"
    );

    // The status write fails too: still an error.
    let f = with_status(foo("test", Some("web"), Some(1)), 0);
    let d = stored(new_deployment(&f, "web"), Some(1));
    let fx = Fixture::new(&[f], &[d]);
    fx.controller.writes().fail_next_write(409);
    let err = fx.controller.sync("default/test").await.unwrap_err();
    assert!(
        matches!(
            &err,
            SyncError::Api {
                action: "updating status of foo",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(fx.events(), Vec::<(String, FooEvent)>::new());
}

#[tokio::test]
async fn a_lister_that_has_not_synced_is_an_error_not_a_delete() {
    let (_tx, rx) = watch::channel(false);
    let controller = Controller::new(
        FooLister::new(Lister::with_synced(
            Arc::new(Store::with_namespace_index()),
            rx,
        )),
        Lister::new(Arc::new(Store::with_namespace_index())),
        FakeWrites::default(),
    );
    let err = controller.sync("default/test").await.unwrap_err();
    assert!(matches!(err, SyncError::NotSynced(_)), "{err:?}");
}

/// A Deployment of `owner` (kind, name, uid), as another controller or the Foo's would hold it.
fn deployment_owned_by(name: &str, owner: Option<(&str, &str, &str, bool)>) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some("1".into()),
            owner_references: owner.map(|(kind, owner, uid, controller)| {
                vec![OwnerReference {
                    api_version: if kind == "Foo" {
                        "samplecontroller.k8s.io/v1beta1".into()
                    } else {
                        "apps/v1".into()
                    },
                    kind: kind.into(),
                    name: owner.into(),
                    uid: uid.into(),
                    controller: Some(controller),
                    block_owner_deletion: Some(true),
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec::default()),
        status: None,
    }
}

#[tokio::test]
async fn deployments_map_to_the_foo_that_controls_them() {
    let fx = Fixture::new(&[foo("test", Some("web"), Some(1))], &[]);
    // The runtime's `owns` mapping (it replaced the example's own `owner_foo_key`).
    let lister = Lister::new(fx.foos.clone());
    let key = |d: &Deployment| controller_owner_key(&d.metadata, &lister);

    assert_eq!(
        key(&deployment_owned_by(
            "web",
            Some(("Foo", "test", "uid-test", true))
        )),
        Some("default/test".to_owned())
    );
    // Another kind, an owner that is not the controller, no owner, a Foo not in the cache.
    assert_eq!(
        key(&deployment_owned_by(
            "web",
            Some(("ReplicaSet", "test", "uid-test", true))
        )),
        None
    );
    assert_eq!(
        key(&deployment_owned_by(
            "web",
            Some(("Foo", "test", "uid-test", false))
        )),
        None
    );
    assert_eq!(key(&deployment_owned_by("web", None)), None);
    assert_eq!(
        key(&deployment_owned_by(
            "web",
            Some(("Foo", "gone", "uid-gone", true))
        )),
        None
    );
}

#[tokio::test]
async fn handlers_enqueue_foo_keys_including_from_tombstones() {
    let fx = Fixture::new(&[foo("test", Some("web"), Some(1))], &[]);
    let lister = Lister::new(fx.foos.clone());
    let queue: WorkQueue<String> = WorkQueue::new();
    // The runtime's `owns` handler (it replaced the example's `deployment_event_handler`),
    // called as the informer calls it.
    let handler = EnqueueRequestForOwner::<Foo, Deployment>::new(queue.clone(), lister);
    let owned = Arc::new(deployment_owned_by(
        "web",
        Some(("Foo", "test", "uid-test", true)),
    ));

    // An update with an unchanged resourceVersion (a resync or relist repeat) is skipped.
    EventHandler::on_update(&handler, &owned, &owned);
    assert_eq!(queue.len(), 0);
    let mut newer = (*owned).clone();
    newer.metadata.resource_version = Some("2".into());
    EventHandler::on_update(&handler, &owned, &Arc::new(newer));
    assert_eq!(next(&queue).await, "default/test");

    EventHandler::on_add(&handler, &owned, true);
    assert_eq!(next(&queue).await, "default/test");
    EventHandler::on_delete(&handler, &Deleted::Object(owned.clone()));
    assert_eq!(next(&queue).await, "default/test");
    // A delete seen only at a relist: the tombstone's last known state maps the same way.
    EventHandler::on_delete(
        &handler,
        &Deleted::FinalStateUnknown {
            key: "default/web".into(),
            object: owned.clone(),
        },
    );
    assert_eq!(next(&queue).await, "default/test");
    // Unowned Deployments enqueue nothing.
    EventHandler::on_add(
        &handler,
        &Arc::new(deployment_owned_by("other", None)),
        false,
    );
    assert_eq!(queue.len(), 0);

    // The Foo handler is the runtime's own (adds, updates and deletes, tombstones included,
    // queue the key): tested in kube-codegen-runtime's tests/controller.rs.
    assert_eq!(queue.len(), 0);
}

/// The next key, marked done.
async fn next(queue: &WorkQueue<String>) -> String {
    let key = tokio::time::timeout(std::time::Duration::from_secs(5), queue.get())
        .await
        .expect("a key is queued")
        .expect("the queue is running");
    queue.done(&key);
    key
}
