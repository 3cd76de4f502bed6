//! A complete controller (the repository README quotes this file): every Website
//! (`crd.yaml`) gets a ConfigMap holding its `spec.content`, owned by it; the Website's
//! `Ready` condition says whether the ConfigMap is in place; a finalizer runs a cleanup before
//! a Website goes; only the holder of a Lease reconciles. `website --print-rbac NS/NAME` prints
//! the RBAC objects it needs, run as that ServiceAccount (the runtime's tests run it with
//! exactly those).
//!
//! The API was generated with `kube-codegen gen crd.yaml -o generated`.

// The generated module has more than this controller uses, and stays as kube-codegen wrote
// it (unformatted by `cargo fmt`), so `kube-codegen gen --check` passes.
#[allow(dead_code)]
#[rustfmt::skip]
mod generated;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use generated::example::v1::Website;
use generated::{Clientset, InformerFactoryExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_codegen_runtime::cache::NotSynced;
use kube_codegen_runtime::controller::conditions::{condition, set_condition};
use kube_codegen_runtime::controller::owners::{controller_ref, is_controlled_by};
use kube_codegen_runtime::controller::{
    Action, Context, Controller, FinalizerError, FinalizerEvent, LeaderElection, Manager,
    Reconciler, finalizer, shutdown_signal, unique_identity,
};
use kube_codegen_runtime::events::{Event, EventType};
use kube_codegen_runtime::{LeaderElectionConfig, LeaseLock, SharedInformerFactory};

const NAME: &str = "website-controller";
const FINALIZER: &str = "example.com/website-cleanup";

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    NotSynced(#[from] NotSynced),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

struct Websites;

impl Reconciler<Website> for Websites {
    type Error = FinalizerError<Error>;

    async fn reconcile(&self, site: Arc<Website>, ctx: &Context) -> Result<Action, Self::Error> {
        if ctx.is_deleted() {
            return Ok(Action::done()); // its ConfigMap goes with it (owner reference)
        }
        let namespace = site.metadata.namespace.clone().unwrap_or_default();
        let sites: Api<Website> = Api::namespaced(ctx.client().clone(), &namespace);
        // Adds the finalizer first; on delete, runs the cleanup, then removes it.
        finalizer(&sites, FINALIZER, site, async |event| match event {
            FinalizerEvent::Apply(site) => apply(&site, &sites, ctx).await,
            FinalizerEvent::Cleanup(site) => {
                tracing::info!(site = ctx.key(), "cleaning up {:?}", site.metadata.name);
                Ok(Action::done())
            }
        })
        .await
    }

    // The default error policy retries with backoff; this is where to change that.
    fn error_policy(
        &self,
        _: &Arc<Website>,
        error: &kube_codegen_runtime::controller::ReconcileError<Self::Error>,
        ctx: &Context,
    ) -> Action {
        tracing::warn!(site = ctx.key(), "{error}");
        Action::backoff()
    }
}

async fn apply(site: &Website, sites: &Api<Website>, ctx: &Context) -> Result<Action, Error> {
    let name = site.metadata.name.clone().unwrap_or_default();
    let namespace = site.metadata.namespace.clone().unwrap_or_default();
    let content = site
        .spec
        .as_ref()
        .map(|s| s.content.clone())
        .unwrap_or_default();
    let want = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![controller_ref(site)]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("index.html".to_owned(), content)])),
        ..ConfigMap::default()
    };
    // The child from the cache: `owns` put its lister in the context.
    let cached = match ctx.lister::<ConfigMap>() {
        Some(configmaps) => configmaps.namespace(&namespace).get(&name)?,
        None => None,
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), &namespace);
    let (status, reason, message) = match cached {
        None => {
            configmaps.create(&PostParams::default(), &want).await?;
            ("True", "Created", "ConfigMap created")
        }
        Some(cm) if !is_controlled_by(&cm.metadata, site) => (
            "False",
            "NotOwned",
            "a ConfigMap of that name belongs to someone else",
        ),
        Some(cm) if cm.data != want.data => {
            let mut updated = (*cm).clone(); // conditional on the cached resourceVersion
            updated.data = want.data;
            configmaps
                .replace(&name, &PostParams::default(), &updated)
                .await?;
            ("True", "Updated", "ConfigMap updated")
        }
        Some(_) => ("True", "UpToDate", "ConfigMap up to date"),
    };
    if reason != "UpToDate" {
        let type_ = match status {
            "True" => EventType::Normal,
            _ => EventType::Warning,
        };
        let (reason, note) = (reason.to_owned(), Some(message.to_owned()));
        let action = "Reconcile".to_owned();
        let event = Event {
            type_,
            reason,
            note,
            action,
            secondary: None,
        };
        // As client-go's recorder: a lost event is logged, it never fails the reconcile.
        if let Err(e) = ctx.recorder().publish_for(&event, site).await {
            tracing::warn!(site = ctx.key(), "could not record an event: {e}");
        }
    }
    let mut conditions = site
        .status
        .clone()
        .unwrap_or_default()
        .conditions
        .unwrap_or_default();
    let ready = condition("Ready", status, reason, message, site.metadata.generation);
    if set_condition(&mut conditions, ready) {
        let patch = serde_json::json!({"status": {"conditions": conditions}});
        sites
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::requeue_after(Duration::from_secs(300)))
}

/// The program: the controller and its manager. `main` runs it; the tests build the same one
/// (hence `pub`).
pub fn manager(client: kube::Client) -> Manager {
    let factory = SharedInformerFactory::builder(Clientset::new(client)).build();
    let websites = factory.example().v1().websites();
    let controller = Controller::new(&factory, websites.informer())
        .name(NAME)
        .owns::<ConfigMap>() // a ConfigMap's change reconciles the Website controlling it
        .writes::<Website>(&["patch"]) // the finalizer (for the derived RBAC)
        .writes_subresource::<Website>("status", &["patch"]) // the Ready condition
        .generation_changed() // our own status writes do not come back as work
        .workers(4);
    let lock = LeaseLock {
        namespace: "default".to_owned(),
        name: NAME.to_owned(),
        identity: unique_identity(NAME),
    };
    Manager::new(&factory)
        .add(controller.build(Websites))
        .leader_election(LeaderElection::new(lock, LeaderElectionConfig::default()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let shutdown = shutdown_signal()?; // first: SIGTERM during startup is seen
    let client = kube::Client::try_default().await?;
    let manager = manager(client);
    // `--print-rbac NS/NAME`: the permissions it needs, for `kubectl apply -f -`; nothing is sent.
    if let Some(sa) = std::env::args().skip_while(|a| a != "--print-rbac").nth(1) {
        let (namespace, name) = sa.split_once('/').ok_or("--print-rbac takes NS/NAME")?;
        let items = manager.rbac_manifests(NAME, namespace, name);
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    manager.run(shutdown).await?;
    Ok(())
}
