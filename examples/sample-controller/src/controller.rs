//! The controller: kubernetes/sample-controller's `syncHandler` as a [`Reconciler`] of Foos
//! that own Deployments. It reads only listers and writes only through a
//! [`Writes`], so tests fill stores by hand and compare what a `FakeWrites` recorded.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube_codegen_runtime::cache::{Lister, NotSynced, split_key};
use kube_codegen_runtime::controller::owners::{controller_ref, is_controlled_by};
use kube_codegen_runtime::controller::{Action, Context, Reconciler, Writes};
use kube_codegen_runtime::events::{Event, EventType};
use parking_lot::Mutex;

use crate::samplecontroller::v1alpha1::{Foo, FooLister};

/// The controller's name: the events' reporting controller and the writes' field manager.
pub const CONTROLLER_NAME: &str = "sample-controller";
/// Reason of the Normal event after a successful sync (upstream's `SuccessSynced`).
pub const REASON_SYNCED: &str = "Synced";
/// Note of the Normal event after a successful sync (upstream's `MessageResourceSynced`).
pub const MESSAGE_SYNCED: &str = "Foo synced successfully";
/// Reason of the Warning event when another owner controls the Deployment (`ErrResourceExists`).
pub const REASON_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Reason of the Warning event for a Foo without `spec.deploymentName` (upstream only logs it).
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
/// Note of the [`REASON_INVALID_SPEC`] event.
pub const MESSAGE_INVALID_SPEC: &str = "spec.deploymentName must be specified";

/// upstream's `MessageResourceExists` (Debug quoting of a name is Go's %q for valid names).
pub fn message_resource_exists(deployment_name: &str) -> String {
    format!("Resource {deployment_name:?} already exists and is not managed by Foo")
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
    move |source| SyncError::Api {
        action,
        object,
        source,
    }
}

/// The (uid, generation) of a Foo reported invalid.
type UidGeneration = (Option<String>, Option<i64>);

/// The sync logic (upstream's `Controller` minus its queue and informers, which the runtime has).
pub struct Controller<W> {
    foos: FooLister,
    deployments: Lister<Deployment>,
    writes: W,
    /// Foos reported invalid, by key: one report per spec.
    invalid_reported: Mutex<HashMap<String, UidGeneration>>,
}

impl<W: Writes> Controller<W> {
    /// A controller reading `foos` and `deployments` and writing through `writes`.
    pub fn new(foos: FooLister, deployments: Lister<Deployment>, writes: W) -> Self {
        let invalid_reported = Mutex::default();
        Controller {
            foos,
            deployments,
            writes,
            invalid_reported,
        }
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
            None => {
                self.forget(key);
                Ok(())
            }
        }
    }

    /// Deleted: nothing to do (the garbage collector deletes its Deployment), but forget it.
    fn forget(&self, key: &str) {
        tracing::info!(key, "foo no longer exists; nothing to do");
        self.invalid_reported.lock().remove(key);
    }

    async fn sync_foo(&self, key: &str, foo: &Foo) -> Result<(), SyncError> {
        let namespace = foo.metadata.namespace.as_deref().unwrap_or_default();
        let spec = foo.spec.as_ref();
        let deployment_name = spec.and_then(|s| s.deployment_name.as_deref());
        let Some(deployment_name) = deployment_name.filter(|n| !n.is_empty()) else {
            // Not retried: only a change to the Foo can fix it, and that queues it again.
            return self.report_invalid(key, foo).await;
        };
        self.invalid_reported.lock().remove(key);
        let object = format!("{namespace}/{deployment_name}");
        let deployment = match self.deployments.namespace(namespace).get(deployment_name)? {
            Some(d) => d,
            None => {
                let created = self
                    .writes
                    .create(&new_deployment(foo, deployment_name))
                    .await;
                Arc::new(created.map_err(api_error("creating deployment", object.clone()))?)
            }
        };
        // Someone else's Deployment is never taken over: say so and retry later.
        if !is_controlled_by(&deployment.metadata, foo) {
            let message = message_resource_exists(deployment_name);
            let warning = (EventType::Warning, REASON_RESOURCE_EXISTS);
            // Retried anyway, so a lost event is written again next time.
            let _ = self.event(key, foo, warning, message.clone()).await;
            return Err(SyncError::ResourceExists(message));
        }
        let replicas = deployment.spec.as_ref().and_then(|s| s.replicas);
        let deployment = match spec.and_then(|s| s.replicas) {
            Some(want) if want != replicas.unwrap_or(1) => {
                // Only the replicas change; the cached resourceVersion makes it conditional.
                let mut updated = (*deployment).clone();
                updated.spec.get_or_insert_default().replicas = Some(want);
                let stored = self.writes.replace(&updated).await;
                Arc::new(stored.map_err(api_error("updating deployment", object))?)
            }
            _ => deployment,
        };
        let status = deployment.status.as_ref();
        let available = status.and_then(|s| s.available_replicas).unwrap_or(0);
        if foo.status.as_ref().and_then(|s| s.available_replicas) != Some(available) {
            // A copy: the cached Foo is shared and must never be modified.
            let mut copy = foo.clone();
            copy.status.get_or_insert_default().available_replicas = Some(available);
            let written = self.writes.replace_status(&copy).await;
            written.map_err(api_error("updating status of foo", key.to_owned()))?;
        }
        // Like client-go's recorder, a lost event never fails a sync that did its work.
        let normal = (EventType::Normal, REASON_SYNCED);
        let _ = self
            .event(key, foo, normal, MESSAGE_SYNCED.to_owned())
            .await;
        Ok(())
    }

    /// Reports an invalid Foo once per spec; only a report that reached the server counts.
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
        let warning = (EventType::Warning, REASON_INVALID_SPEC);
        let written = self
            .event(key, foo, warning, MESSAGE_INVALID_SPEC.to_owned())
            .await;
        written.map_err(api_error("writing an event about foo", key.to_owned()))?;
        self.invalid_reported.lock().insert(key.to_owned(), seen);
        Ok(())
    }

    /// Publishes an event about `foo`, logging it, and a failure to write it.
    async fn event(
        &self,
        key: &str,
        foo: &Foo,
        (type_, reason): (EventType, &str),
        note: String,
    ) -> Result<(), kube::Error> {
        tracing::info!(foo = key, ?type_, reason, "event: {note}");
        let (reason, note, action) = (reason.to_owned(), Some(note), "Sync".to_owned());
        let event = Event {
            type_,
            reason,
            note,
            action,
            secondary: None,
        };
        let written = self.writes.publish(foo, event).await;
        if let Err(e) = &written {
            tracing::warn!(foo = key, "could not write event: {e}");
        }
        written
    }
}

impl<W: Writes> Reconciler<Foo> for Controller<W> {
    type Error = SyncError;

    async fn reconcile(&self, foo: Arc<Foo>, ctx: &Context) -> Result<Action, SyncError> {
        match ctx.is_deleted() {
            true => self.forget(ctx.key()),
            false => self.sync_foo(ctx.key(), &foo).await?,
        }
        Ok(Action::done())
    }
}

/// The Deployment a Foo asks for (upstream's `newDeployment`): `nginx:latest` pods labelled
/// `app: nginx, controller: <foo>`, the Foo's replicas, controlled by the Foo.
pub fn new_deployment(foo: &Foo, deployment_name: &str) -> Deployment {
    let foo_name = foo.metadata.name.clone().unwrap_or_default();
    let labels = BTreeMap::from([
        ("app".into(), "nginx".into()),
        ("controller".into(), foo_name),
    ]);
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
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            ..PodSpec::default()
        }),
    };
    let selector = LabelSelector {
        match_labels: Some(labels),
        match_expressions: None,
    };
    let replicas = foo.spec.as_ref().and_then(|s| s.replicas);
    let spec = DeploymentSpec {
        replicas,
        selector,
        template,
        ..DeploymentSpec::default()
    };
    Deployment {
        metadata,
        spec: Some(spec),
        status: None,
    }
}
