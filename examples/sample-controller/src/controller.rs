//! The controller: kubernetes/sample-controller's `controller.go` on the generated Foo API and
//! the kube-codegen runtime.
//!
//! [`Controller::sync`] is the `syncHandler`: it reads only listers and writes only through
//! [`ServerWrites`], so tests fill stores by hand, call it, and compare the writes it made
//! (client-go's fake-clientset "actions") without a server. [`foo_event_handler`] and
//! [`deployment_event_handler`] feed the workqueue with `namespace/name` keys of Foos;
//! [`ApiWrites`] is the real [`ServerWrites`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::Resource as _;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use kube::api::PostParams;
use kube_codegen_runtime::ResourceClient;
use kube_codegen_runtime::cache::{EventHandlerFns, Lister, NotSynced, key_of, split_key};
use kube_codegen_runtime::events::{Event, EventType, Recorder};
use kube_codegen_runtime::workqueue::WorkQueue;
use parking_lot::Mutex;

use crate::Clientset;
use crate::samplecontroller::v1beta1::{Foo, FooLister};

/// The controller's name: the events' reporting controller and the writes' field manager.
pub const CONTROLLER_NAME: &str = "sample-controller";

/// Reason of the Normal event after a successful sync (upstream's `SuccessSynced`).
pub const REASON_SYNCED: &str = "Synced";
/// Note of the Normal event after a successful sync (upstream's `MessageResourceSynced`).
pub const MESSAGE_SYNCED: &str = "Foo synced successfully";
/// Reason of the Warning event when the Deployment exists but another owner controls it
/// (upstream's `ErrResourceExists`).
pub const REASON_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Reason of the Warning event for a Foo without `spec.deployment.name`. Upstream only logs
/// this; an event makes it visible to `kubectl describe foo`.
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
/// Note of the [`REASON_INVALID_SPEC`] event.
pub const MESSAGE_INVALID_SPEC: &str = "spec.deployment.name must be specified";

/// upstream's `MessageResourceExists`: `Resource %q already exists and is not managed by Foo`.
pub fn message_resource_exists(deployment_name: &str) -> String {
    // Debug quoting of a str is Go's %q for the names Kubernetes allows.
    format!("Resource {deployment_name:?} already exists and is not managed by Foo")
}

/// An event about a Foo, as the controller asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooEvent {
    pub type_: EventType,
    pub reason: &'static str,
    pub note: String,
}

impl FooEvent {
    pub fn normal(reason: &'static str, note: impl Into<String>) -> Self {
        FooEvent {
            type_: EventType::Normal,
            reason,
            note: note.into(),
        }
    }

    pub fn warning(reason: &'static str, note: impl Into<String>) -> Self {
        FooEvent {
            type_: EventType::Warning,
            reason,
            note: note.into(),
        }
    }
}

/// Everything the sync writes: the server actions of upstream's fake clientsets, and the
/// events of its fake recorder. Objects carry their namespace in `metadata.namespace`.
pub trait ServerWrites: Send + Sync + 'static {
    /// Creates `deployment`; returns it as stored.
    fn create_deployment(
        &self,
        deployment: &Deployment,
    ) -> impl Future<Output = Result<Deployment, kube::Error>> + Send;
    /// Replaces `deployment` (conditional on its `resourceVersion`); returns it as stored.
    fn update_deployment(
        &self,
        deployment: &Deployment,
    ) -> impl Future<Output = Result<Deployment, kube::Error>> + Send;
    /// Writes `foo`'s status subresource (conditional on its `resourceVersion`).
    fn update_foo_status(&self, foo: &Foo)
    -> impl Future<Output = Result<Foo, kube::Error>> + Send;
    /// Publishes an event about `foo`.
    fn record_event(
        &self,
        foo: &Foo,
        event: FooEvent,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
}

/// Why a sync failed; the worker logs it and retries the key with rate limiting.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A lister was read before its informer synced (workers start after the sync, so this
    /// is only a safety net).
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
    /// The Deployment named by the Foo exists and is controlled by something else.
    #[error("{0}")]
    ResourceExists(String),
    /// A write the server refused or did not answer.
    #[error("{action} {object}: {source}")]
    Api {
        action: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// The sync logic (upstream's `Controller` minus its queue and informers).
pub struct Controller<W> {
    foos: FooLister,
    deployments: Lister<Deployment>,
    writes: W,
    /// Foos already reported invalid, by key, with the (uid, generation) reported: the same
    /// spec is reported once, however often the key is synced again (resyncs, relists,
    /// metadata-only changes).
    invalid_reported: Mutex<HashMap<String, Reported>>,
}

/// The (uid, generation) of a Foo reported invalid.
type Reported = (Option<String>, Option<i64>);

impl<W> std::fmt::Debug for Controller<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("foos", &self.foos)
            .field("deployments", &self.deployments)
            .finish_non_exhaustive()
    }
}

impl<W: ServerWrites> Controller<W> {
    /// A controller reading `foos` and `deployments` (informers' listers, or listers over
    /// stores filled by hand) and writing through `writes`.
    pub fn new(foos: FooLister, deployments: Lister<Deployment>, writes: W) -> Self {
        Controller {
            foos,
            deployments,
            writes,
            invalid_reported: Mutex::new(HashMap::new()),
        }
    }

    /// The writer (tests read what was recorded).
    pub fn writes(&self) -> &W {
        &self.writes
    }

    /// Brings the Foo at `key` (`namespace/name`) and its Deployment to the desired state,
    /// then reports the Deployment's available replicas in the Foo's status (upstream's
    /// `syncHandler`). `Ok` means done (forget the key); `Err` means retry with backoff.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Ok((namespace, name)) = split_key(key) else {
            // Retrying cannot fix a malformed key (upstream: HandleError, return nil).
            tracing::error!(key, "invalid resource key");
            return Ok(());
        };
        let Some(foo) = self.foos.foos(namespace).get(name)? else {
            // Deleted since it was queued: nothing to do (its Deployment goes with it through
            // the owner reference and the garbage collector).
            tracing::info!(key, "foo no longer exists; nothing to do");
            self.invalid_reported.lock().remove(key);
            return Ok(());
        };

        let deployment_name = foo
            .spec
            .as_ref()
            .and_then(|s| s.deployment.as_ref())
            .and_then(|d| d.name.as_deref())
            .unwrap_or_default();
        if deployment_name.is_empty() {
            // Not retried: only a change to the Foo can fix it, and that enqueues it again.
            return self.report_invalid(key, &foo).await;
        }
        self.invalid_reported.lock().remove(key);

        let deployment = match self.deployments.namespace(namespace).get(deployment_name)? {
            Some(d) => d,
            None => {
                let want = new_deployment(&foo, deployment_name);
                let created = self
                    .writes
                    .create_deployment(&want)
                    .await
                    .map_err(|source| SyncError::Api {
                        action: "creating deployment",
                        object: format!("{namespace}/{deployment_name}"),
                        source,
                    })?;
                Arc::new(created)
            }
        };

        // Someone else's Deployment is never taken over: say so on the Foo and retry later
        // (it may be deleted or handed over meanwhile).
        if !is_controlled_by(&deployment, &foo) {
            let message = message_resource_exists(deployment_name);
            let warning = FooEvent::warning(REASON_RESOURCE_EXISTS, message.clone());
            // Retried anyway, so a lost event is written again next time.
            let _ = self.event(key, &foo, warning).await;
            return Err(SyncError::ResourceExists(message));
        }

        let wanted_replicas = foo.spec.as_ref().and_then(|s| s.replicas);
        let deployment = match wanted_replicas {
            Some(want) if want != replicas_of(&deployment) => {
                // Only the replicas change: the cached object carries its resourceVersion, so
                // a concurrent writer makes this a conflict (retried), never a lost update.
                let mut updated = (*deployment).clone();
                updated.spec.get_or_insert_default().replicas = Some(want);
                let stored = self
                    .writes
                    .update_deployment(&updated)
                    .await
                    .map_err(|source| SyncError::Api {
                        action: "updating deployment",
                        object: format!("{namespace}/{deployment_name}"),
                        source,
                    })?;
                Arc::new(stored)
            }
            _ => deployment,
        };

        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        let reported = foo.status.as_ref().and_then(|s| s.available_replicas);
        if reported != Some(available) {
            // A copy: the cached Foo is shared and must never be modified.
            let mut copy = (*foo).clone();
            copy.status.get_or_insert_default().available_replicas = Some(available);
            self.writes
                .update_foo_status(&copy)
                .await
                .map_err(|source| SyncError::Api {
                    action: "updating status of foo",
                    object: key.to_owned(),
                    source,
                })?;
        }

        // Like client-go's recorder, a lost event never fails a sync that did its work.
        let _ = self
            .event(key, &foo, FooEvent::normal(REASON_SYNCED, MESSAGE_SYNCED))
            .await;
        Ok(())
    }

    /// Reports an invalid Foo (event + log) once per spec it had. Only a report that reached
    /// the server counts: a failed one is an error, retried with backoff.
    async fn report_invalid(&self, key: &str, foo: &Foo) -> Result<(), SyncError> {
        let seen = (foo.metadata.uid.clone(), foo.metadata.generation);
        if self.invalid_reported.lock().get(key) == Some(&seen) {
            tracing::debug!(key, "invalid foo already reported");
            return Ok(());
        }
        tracing::warn!(
            key,
            "{MESSAGE_INVALID_SPEC}; not retrying until the foo changes"
        );
        let warning = FooEvent::warning(REASON_INVALID_SPEC, MESSAGE_INVALID_SPEC);
        self.event(key, foo, warning)
            .await
            .map_err(|source| SyncError::Api {
                action: "writing an event about foo",
                object: key.to_owned(),
                source,
            })?;
        self.invalid_reported.lock().insert(key.to_owned(), seen);
        Ok(())
    }

    /// Publishes an event about `foo`, logging it, and a failure to write it.
    async fn event(&self, key: &str, foo: &Foo, event: FooEvent) -> Result<(), kube::Error> {
        tracing::info!(
            foo = key,
            type_ = ?event.type_,
            reason = event.reason,
            "event: {}",
            event.note
        );
        let reason = event.reason;
        let written = self.writes.record_event(foo, event).await;
        if let Err(e) = &written {
            tracing::warn!(foo = key, reason, "could not write event: {e}");
        }
        written
    }
}

/// `spec.replicas` of a Deployment; absent means the server's default, 1.
fn replicas_of(deployment: &Deployment) -> i32 {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
}

/// The labels of a Foo's Deployment and its pods.
pub fn deployment_labels(foo: &Foo) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "nginx".to_owned()),
        (
            "controller".to_owned(),
            foo.metadata.name.clone().unwrap_or_default(),
        ),
    ])
}

/// The owner reference that makes `foo` the controller of an object (`metav1.NewControllerRef`):
/// `controller` and `blockOwnerDeletion` set, so deleting the Foo deletes what it owns.
pub fn controller_ref(foo: &Foo) -> OwnerReference {
    OwnerReference {
        api_version: Foo::API_VERSION.to_owned(),
        kind: Foo::KIND.to_owned(),
        name: foo.metadata.name.clone().unwrap_or_default(),
        uid: foo.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The Deployment a Foo asks for (upstream's `newDeployment`): `nginx:latest` pods labelled
/// `app: nginx, controller: <foo>`, the Foo's replicas, owned by the Foo.
pub fn new_deployment(foo: &Foo, deployment_name: &str) -> Deployment {
    let labels = deployment_labels(foo);
    Deployment {
        metadata: ObjectMeta {
            name: Some(deployment_name.to_owned()),
            namespace: foo.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![controller_ref(foo)]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: foo.spec.as_ref().and_then(|s| s.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".to_owned(),
                        image: Some("nginx:latest".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// The owner reference marked `controller: true`, if any (`metav1.GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether `foo` controls `deployment` (`metav1.IsControlledBy`: the controller reference
/// carries the Foo's uid).
pub fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    match (controller_of(&deployment.metadata), &foo.metadata.uid) {
        (Some(owner), Some(uid)) => owner.uid == *uid,
        _ => false,
    }
}

/// The key of the Foo that controls `deployment`, when that Foo is in the cache (upstream's
/// `handleObject`). Objects of other controllers, or whose Foo is gone, map to nothing.
pub fn owner_foo_key(deployment: &Deployment, foos: &FooLister) -> Option<String> {
    let owner = controller_of(&deployment.metadata)?;
    let group = Foo::API_VERSION.split('/').next().unwrap_or_default();
    let same_group = owner.api_version.split('/').next() == Some(group);
    if owner.kind != Foo::KIND || !same_group {
        return None;
    }
    let namespace = deployment.metadata.namespace.as_deref().unwrap_or_default();
    match foos.foos(namespace).get(&owner.name) {
        Ok(Some(foo)) => key_of(&*foo).ok(),
        // An orphan (its Foo is gone), or a Foo not listed yet: its own add enqueues it.
        Ok(None) | Err(NotSynced) => {
            tracing::debug!(
                deployment = deployment.metadata.name.as_deref().unwrap_or_default(),
                namespace,
                foo = %owner.name,
                "ignoring deployment: its foo is not in the cache"
            );
            None
        }
    }
}

fn enqueue(queue: &WorkQueue<String>, foo: &Foo) {
    match key_of(foo) {
        Ok(key) => queue.add(key),
        Err(e) => tracing::error!("foo without a key: {e}"),
    }
}

/// Enqueues a Foo's key when it is added or changed (upstream's `enqueueFoo`), and when it is
/// deleted, so the sync that finds it gone can drop what it remembered about it.
pub fn foo_event_handler(queue: WorkQueue<String>) -> EventHandlerFns<Foo> {
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue);
    EventHandlerFns::new()
        .on_add(move |foo, _| enqueue(&on_add, foo))
        .on_update(move |_, new| enqueue(&on_update, new))
        .on_delete(move |deleted| enqueue(&on_delete, deleted.object()))
}

/// Enqueues the owning Foo of every added, changed or deleted Deployment (deletes seen only at
/// a relist arrive as tombstones holding the last cached state, and map the same way). An
/// update with an unchanged resourceVersion is a resync or relist repeat and is skipped, as
/// upstream does.
pub fn deployment_event_handler(
    queue: WorkQueue<String>,
    foos: FooLister,
) -> EventHandlerFns<Deployment> {
    let handle = Arc::new(move |deployment: &Deployment| {
        if let Some(key) = owner_foo_key(deployment, &foos) {
            queue.add(key);
        }
    });
    let (on_add, on_update, on_delete) = (handle.clone(), handle.clone(), handle);
    EventHandlerFns::new()
        .on_add(move |d, _| on_add(d))
        .on_update(move |old, new| {
            if old.metadata.resource_version != new.metadata.resource_version {
                on_update(new)
            }
        })
        .on_delete(move |deleted| on_delete(deleted.object()))
}

/// The real [`ServerWrites`]: the generated clientset for Foos, a typed client for
/// Deployments, and the runtime's event recorder.
#[derive(Clone)]
pub struct ApiWrites {
    clientset: Clientset,
    recorder: Recorder,
}

impl std::fmt::Debug for ApiWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiWrites")
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

impl ApiWrites {
    pub fn new(clientset: Clientset, recorder: Recorder) -> Self {
        ApiWrites {
            clientset,
            recorder,
        }
    }

    fn deployments(&self, deployment: &Deployment) -> ResourceClient<Deployment> {
        let namespace = deployment
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default");
        ResourceClient::namespaced(self.clientset.client().clone(), namespace)
    }
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(CONTROLLER_NAME.to_owned()),
    }
}

impl ServerWrites for ApiWrites {
    async fn create_deployment(&self, deployment: &Deployment) -> Result<Deployment, kube::Error> {
        self.deployments(deployment)
            .create(&post_params(), deployment)
            .await
    }

    async fn update_deployment(&self, deployment: &Deployment) -> Result<Deployment, kube::Error> {
        self.deployments(deployment)
            .update(&post_params(), deployment)
            .await
    }

    async fn update_foo_status(&self, foo: &Foo) -> Result<Foo, kube::Error> {
        let namespace = foo.metadata.namespace.as_deref().unwrap_or("default");
        self.clientset
            .samplecontroller_v1beta1()
            .foos(namespace)
            .update_status(&post_params(), foo)
            .await
    }

    async fn record_event(&self, foo: &Foo, event: FooEvent) -> Result<(), kube::Error> {
        let mut regarding = foo.object_ref(&());
        // Repeats aggregate per object, not per resourceVersion (as client-go's core/v1
        // recorder, which upstream uses, keys them), so status writes do not start new series.
        regarding.resource_version = None;
        let published = Event {
            type_: event.type_,
            reason: event.reason.to_owned(),
            note: Some(event.note),
            action: "Sync".to_owned(),
            secondary: None,
        };
        self.recorder.publish(&published, &regarding).await
    }
}
