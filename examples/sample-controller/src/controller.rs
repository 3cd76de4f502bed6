//! The controller: kubernetes/sample-controller's `syncHandler` as a
//! [`Reconciler`] of Foos on the runtime's controller loop, which owns Deployments.
//!
//! [`Controller::sync`] reads only listers and writes only through [`ServerWrites`], so tests
//! fill stores by hand, call it, and compare the writes it made (client-go's fake-clientset
//! "actions") without a server; [`ApiWrites`] is the real [`ServerWrites`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Resource;
use kube::api::PostParams;
use kube_codegen_runtime::ResourceClient;
use kube_codegen_runtime::cache::{Lister, NotSynced, split_key};
use kube_codegen_runtime::controller::{Action, Context, Reconciler};
use kube_codegen_runtime::events::{Event, EventType, Recorder};
use parking_lot::Mutex;

pub use kube_codegen_runtime::controller::owners::controller_ref;
use kube_codegen_runtime::controller::owners::is_controlled_by;

use crate::Clientset;
use crate::samplecontroller::v1beta1::{Foo, FooLister};

/// The controller's name: the events' reporting controller and the writes' field manager.
pub const CONTROLLER_NAME: &str = "sample-controller";
/// Reason of the Normal event after a successful sync (upstream's `SuccessSynced`).
pub const REASON_SYNCED: &str = "Synced";
/// Note of the Normal event after a successful sync (upstream's `MessageResourceSynced`).
pub const MESSAGE_SYNCED: &str = "Foo synced successfully";
/// Reason of the Warning event when another owner controls the Deployment (`ErrResourceExists`).
pub const REASON_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Reason of the Warning event for a Foo without `spec.deployment.name` (upstream only logs it).
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
/// Note of the [`REASON_INVALID_SPEC`] event.
pub const MESSAGE_INVALID_SPEC: &str = "spec.deployment.name must be specified";

/// upstream's `MessageResourceExists` (Debug quoting of a name is Go's %q for valid names).
pub fn message_resource_exists(deployment_name: &str) -> String {
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
        let (type_, note) = (EventType::Normal, note.into());
        FooEvent { type_, reason, note }
    }

    pub fn warning(reason: &'static str, note: impl Into<String>) -> Self {
        let (type_, note) = (EventType::Warning, note.into());
        FooEvent { type_, reason, note }
    }
}

/// Everything the sync writes (upstream's fake clientset actions and fake recorder events).
pub trait ServerWrites: Send + Sync + 'static {
    /// Creates `deployment`; returns it as stored.
    fn create_deployment(
        &self,
        d: &Deployment,
    ) -> impl Future<Output = Result<Deployment, kube::Error>> + Send;
    /// Replaces `deployment` (conditional on its `resourceVersion`); returns it as stored.
    fn update_deployment(
        &self,
        d: &Deployment,
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

/// Why a sync failed; the runtime logs it and retries the key with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A lister was read before its informer synced (workers start after the sync).
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

fn api_error(action: &'static str, object: String) -> impl FnOnce(kube::Error) -> SyncError {
    move |source| SyncError::Api { action, object, source }
}

/// The sync logic (upstream's `Controller` minus its queue and informers, which the runtime has).
pub struct Controller<W> {
    foos: FooLister,
    deployments: Lister<Deployment>,
    writes: W,
    /// Foos reported invalid, by key, with the (uid, generation) reported: one report per spec.
    invalid_reported: Mutex<HashMap<String, (Option<String>, Option<i64>)>>,
}

impl<W: ServerWrites> Controller<W> {
    /// A controller reading `foos` and `deployments` and writing through `writes`.
    pub fn new(foos: FooLister, deployments: Lister<Deployment>, writes: W) -> Self {
        let invalid_reported = Mutex::default();
        Controller { foos, deployments, writes, invalid_reported }
    }

    /// The writer (tests read what was recorded).
    pub fn writes(&self) -> &W {
        &self.writes
    }

    /// Syncs the Foo at `key` (`namespace/name`) as the cache holds it (upstream's
    /// `syncHandler`). `Ok` means done; `Err` means retry with backoff.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Ok((namespace, name)) = split_key(key) else {
            // Retrying cannot fix a malformed key (upstream: HandleError, return nil).
            tracing::error!(key, "invalid resource key");
            return Ok(());
        };
        match self.foos.foos(namespace).get(name)? {
            Some(foo) => self.sync_foo(key, &foo).await,
            None => Ok(self.forget(key)),
        }
    }

    /// Deleted since it was queued: nothing to do (its Deployment goes through the garbage
    /// collector), but what was remembered about it.
    fn forget(&self, key: &str) {
        tracing::info!(key, "foo no longer exists; nothing to do");
        self.invalid_reported.lock().remove(key);
    }

    async fn sync_foo(&self, key: &str, foo: &Foo) -> Result<(), SyncError> {
        let namespace = foo.metadata.namespace.as_deref().unwrap_or_default();
        let spec = foo.spec.as_ref();
        let deployment_name = spec
            .and_then(|s| s.deployment.as_ref())
            .and_then(|d| d.name.as_deref())
            .unwrap_or_default();
        if deployment_name.is_empty() {
            // Not retried: only a change to the Foo can fix it, and that queues it again.
            return self.report_invalid(key, foo).await;
        }
        self.invalid_reported.lock().remove(key);
        let object = format!("{namespace}/{deployment_name}");
        let deployment = match self.deployments.namespace(namespace).get(deployment_name)? {
            Some(d) => d,
            None => {
                let want = new_deployment(foo, deployment_name);
                let created = self.writes.create_deployment(&want).await;
                Arc::new(created.map_err(api_error("creating deployment", object.clone()))?)
            }
        };
        // Someone else's Deployment is never taken over: say so and retry later.
        if !is_controlled_by(&deployment.metadata, foo) {
            let message = message_resource_exists(deployment_name);
            // Retried anyway, so a lost event is written again next time.
            let _ = self
                .event(key, foo, FooEvent::warning(REASON_RESOURCE_EXISTS, message.clone()))
                .await;
            return Err(SyncError::ResourceExists(message));
        }
        let deployment = match spec.and_then(|s| s.replicas) {
            Some(want)
                if want != deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) =>
            {
                // Only the replicas change; the cached resourceVersion makes it conditional.
                let mut updated = (*deployment).clone();
                updated.spec.get_or_insert_default().replicas = Some(want);
                let stored = self.writes.update_deployment(&updated).await;
                Arc::new(stored.map_err(api_error("updating deployment", object))?)
            }
            _ => deployment,
        };
        let available = deployment.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
        if foo.status.as_ref().and_then(|s| s.available_replicas) != Some(available) {
            // A copy: the cached Foo is shared and must never be modified.
            let mut copy = foo.clone();
            copy.status.get_or_insert_default().available_replicas = Some(available);
            let written = self.writes.update_foo_status(&copy).await;
            written.map_err(api_error("updating status of foo", key.to_owned()))?;
        }
        // Like client-go's recorder, a lost event never fails a sync that did its work.
        let _ = self.event(key, foo, FooEvent::normal(REASON_SYNCED, MESSAGE_SYNCED)).await;
        Ok(())
    }

    /// Reports an invalid Foo once per spec; only a report that reached the server counts.
    async fn report_invalid(&self, key: &str, foo: &Foo) -> Result<(), SyncError> {
        let seen = (foo.metadata.uid.clone(), foo.metadata.generation);
        if self.invalid_reported.lock().get(key) == Some(&seen) {
            tracing::debug!(key, "invalid foo already reported");
            return Ok(());
        }
        tracing::warn!(key, "{MESSAGE_INVALID_SPEC}; not retrying until the foo changes");
        let warning = FooEvent::warning(REASON_INVALID_SPEC, MESSAGE_INVALID_SPEC);
        let written = self.event(key, foo, warning).await;
        written.map_err(api_error("writing an event about foo", key.to_owned()))?;
        self.invalid_reported.lock().insert(key.to_owned(), seen);
        Ok(())
    }

    /// Publishes an event about `foo`, logging it, and a failure to write it.
    async fn event(&self, key: &str, foo: &Foo, event: FooEvent) -> Result<(), kube::Error> {
        let (type_, reason) = (event.type_, event.reason);
        tracing::info!(foo = key, ?type_, reason, "event: {}", event.note);
        let written = self.writes.record_event(foo, event).await;
        if let Err(e) = &written {
            tracing::warn!(foo = key, reason, "could not write event: {e}");
        }
        written
    }
}

impl<W: ServerWrites> Reconciler<Foo> for Controller<W> {
    type Error = SyncError;

    async fn reconcile(&self, foo: Arc<Foo>, ctx: &Context) -> Result<Action, SyncError> {
        match ctx.is_deleted() {
            true => self.forget(ctx.key()),
            false => self.sync_foo(ctx.key(), &foo).await?,
        }
        Ok(Action::done())
    }
}

/// The labels of a Foo's Deployment and its pods.
pub fn deployment_labels(foo: &Foo) -> BTreeMap<String, String> {
    let name = foo.metadata.name.clone().unwrap_or_default();
    BTreeMap::from([("app".to_owned(), "nginx".to_owned()), ("controller".to_owned(), name)])
}

/// The Deployment a Foo asks for (upstream's `newDeployment`): `nginx:latest` pods labelled
/// `app: nginx, controller: <foo>`, the Foo's replicas, controlled by the Foo.
pub fn new_deployment(foo: &Foo, deployment_name: &str) -> Deployment {
    let labels = deployment_labels(foo);
    let container = Container {
        name: "nginx".to_owned(),
        image: Some("nginx:latest".to_owned()),
        ..Container::default()
    };
    let metadata = ObjectMeta {
        name: Some(deployment_name.to_owned()),
        namespace: foo.metadata.namespace.clone(),
        labels: Some(labels.clone()),
        owner_references: Some(vec![controller_ref(foo)]),
        ..ObjectMeta::default()
    };
    let selector = LabelSelector { match_labels: Some(labels.clone()), match_expressions: None };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
        spec: Some(PodSpec { containers: vec![container], ..PodSpec::default() }),
    };
    let replicas = foo.spec.as_ref().and_then(|s| s.replicas);
    let spec = DeploymentSpec { replicas, selector, template, ..DeploymentSpec::default() };
    Deployment { metadata, spec: Some(spec), status: None }
}

/// The real [`ServerWrites`]: the generated clientset, a typed client for Deployments, and
/// the runtime's event recorder.
#[derive(Clone)]
pub struct ApiWrites {
    clientset: Clientset,
    recorder: Recorder,
}

impl ApiWrites {
    pub fn new(clientset: Clientset, recorder: Recorder) -> Self {
        ApiWrites { clientset, recorder }
    }

    fn deployments(&self, d: &Deployment) -> ResourceClient<Deployment> {
        let namespace = d.metadata.namespace.as_deref().unwrap_or("default");
        ResourceClient::namespaced(self.clientset.client().clone(), namespace)
    }
}

fn post_params() -> PostParams {
    PostParams { dry_run: false, field_manager: Some(CONTROLLER_NAME.to_owned()) }
}

impl ServerWrites for ApiWrites {
    async fn create_deployment(&self, d: &Deployment) -> Result<Deployment, kube::Error> {
        self.deployments(d).create(&post_params(), d).await
    }

    async fn update_deployment(&self, d: &Deployment) -> Result<Deployment, kube::Error> {
        self.deployments(d).update(&post_params(), d).await
    }

    async fn update_foo_status(&self, foo: &Foo) -> Result<Foo, kube::Error> {
        let namespace = foo.metadata.namespace.as_deref().unwrap_or("default");
        let foos = self.clientset.samplecontroller_v1beta1().foos(namespace);
        foos.update_status(&post_params(), foo).await
    }

    async fn record_event(&self, foo: &Foo, event: FooEvent) -> Result<(), kube::Error> {
        let mut regarding = foo.object_ref(&());
        // Repeats aggregate per object, not per resourceVersion (as client-go's core/v1
        // recorder keys them), so status writes do not start new series.
        regarding.resource_version = None;
        let (type_, reason, note) = (event.type_, event.reason.to_owned(), Some(event.note));
        let published = Event { type_, reason, note, action: "Sync".to_owned(), secondary: None };
        self.recorder.publish(&published, &regarding).await
    }
}
