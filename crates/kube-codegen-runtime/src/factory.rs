//! [`SharedInformerFactory`]: one shared informer per kind for a whole program (client-go's
//! `informers.SharedInformerFactory` machinery, which generated factories wrap).
//!
//! Every part of a controller that asks for the informer of a kind gets the same one, so a kind
//! is listed and watched once however many handlers and listers use it. `start` runs every
//! informer asked for so far (call it again after asking for more); `wait_for_cache_sync`
//! waits for all of them.
//!
//! Options set on the builder apply to every informer of the factory: a list-params tweak
//! (client-go's `WithTweakListOptions`), a metadata transform (`WithTransform`), and a resync
//! period with per-kind overrides (`WithCustomResyncConfig`).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, ObjectList, WatchParams};
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::cache::{
    InformerMetricsProvider, InformerOptions, ListWatch, ReflectorOptions, ShardedList,
    SharedIndexInformer, WatchStream,
};

/// A [`SharedInformerFactoryBuilder::tweak_list_params`] closure.
type Tweak = Arc<dyn Fn(&mut ListParams) + Send + Sync>;
/// A [`SharedInformerFactoryBuilder::transform`] closure.
type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// A [`ListWatch`] that passes the selectors of every list and watch through the factory's
/// tweak, so the reflector needs no notion of selectors.
struct Tweaked<L> {
    inner: L,
    tweak: Tweak,
}

impl<L> Tweaked<L> {
    /// The label and field selectors after the tweak. Only these are taken from it: paging and
    /// resourceVersion carry the reflector's consistency guarantees (a `limit` on a read it
    /// expects whole would cache a partial list), and watches have no `ListParams` of their own
    /// (client-go's tweak edits the one `ListOptions` both use).
    fn selectors(
        &self,
        label_selector: &Option<String>,
        field_selector: &Option<String>,
    ) -> (Option<String>, Option<String>) {
        let mut params = ListParams {
            label_selector: label_selector.clone(),
            field_selector: field_selector.clone(),
            ..ListParams::default()
        };
        (self.tweak)(&mut params);
        (params.label_selector, params.field_selector)
    }
}

impl<K, L> ListWatch<K> for Tweaked<L>
where
    K: Clone + Send + 'static,
    L: ListWatch<K>,
{
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<K>, kube::Error>> {
        let mut tweaked = params.clone();
        (tweaked.label_selector, tweaked.field_selector) =
            self.selectors(&params.label_selector, &params.field_selector);
        async move { self.inner.list(&tweaked).await }.boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        let mut tweaked = params.clone();
        (tweaked.label_selector, tweaked.field_selector) =
            self.selectors(&params.label_selector, &params.field_selector);
        async move { self.inner.watch(&tweaked, resource_version).await }.boxed()
    }

    fn supports_watch_list(&self) -> bool {
        self.inner.supports_watch_list()
    }

    fn list_sharded<'a>(
        &'a self,
        params: &'a ListParams,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<ShardedList<K>, kube::Error>> {
        let mut tweaked = params.clone();
        (tweaked.label_selector, tweaked.field_selector) =
            self.selectors(&params.label_selector, &params.field_selector);
        async move { self.inner.list_sharded(&tweaked, selector).await }.boxed()
    }

    fn watch_sharded<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        let mut tweaked = params.clone();
        (tweaked.label_selector, tweaked.field_selector) =
            self.selectors(&params.label_selector, &params.field_selector);
        async move {
            self.inner
                .watch_sharded(&tweaked, resource_version, selector)
                .await
        }
        .boxed()
    }
}

/// How a kind's scope turns a factory's namespace into an [`Api`]: namespaced kinds are read
/// in the factory's namespace (every namespace without one), cluster-scoped kinds everywhere.
pub trait FactoryScope {
    /// Whether objects of this scope live in namespaces.
    const NAMESPACED: bool;

    /// The `Api` the factory's informer for `K` lists and watches through.
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}

impl FactoryScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;

    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }
}

impl FactoryScope for ClusterResourceScope {
    const NAMESPACED: bool = false;

    fn api<K>(client: Client, _: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        Api::all(client)
    }
}

/// One informer of the factory, type-erased.
struct Entry {
    informer: Box<dyn ErasedInformer>,
    task: Option<JoinHandle<()>>,
    /// The resource as metrics name it (`deployments.apps`).
    resource: String,
}

/// What the factory does with an informer of any kind.
trait ErasedInformer: Send + Sync {
    fn run(&self) -> BoxFuture<'static, ()>;
    fn wait_for_sync(&self) -> BoxFuture<'static, ()>;
    fn last_error(&self) -> Option<crate::cache::ReflectorError>;
    fn as_any(&self) -> &dyn Any;
}

impl<K> ErasedInformer for SharedIndexInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn run(&self) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.run().await })
    }

    fn wait_for_sync(&self) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.wait_for_sync().await })
    }

    fn last_error(&self) -> Option<crate::cache::ReflectorError> {
        SharedIndexInformer::last_error(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Builds a [`SharedInformerFactory`].
pub struct SharedInformerFactoryBuilder {
    client: Client,
    namespace: Option<String>,
    resync: Option<Duration>,
    custom_resync: HashMap<TypeId, Option<Duration>>,
    reflector: ReflectorOptions,
    tweak: Option<Tweak>,
    transform: Option<MetaTransform>,
    metrics: Option<Arc<dyn InformerMetricsProvider>>,
}

impl fmt::Debug for SharedInformerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("namespace", &self.namespace)
            .field("resync", &self.resync)
            .field("custom_resync", &self.custom_resync.len())
            .field("reflector", &self.reflector)
            .field("tweak_list_params", &self.tweak.is_some())
            .field("transform", &self.transform.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactoryBuilder {
    /// Restricts namespaced kinds to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Resync period of every informer (none by default; `Duration::ZERO` means none, as in
    /// client-go; other periods under one second are raised to one second).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = nonzero(period);
        self
    }

    /// Resync period of `K`'s informer, overriding [`resync`](Self::resync) for that kind only
    /// (`Duration::ZERO`: no resync for it). client-go's `WithCustomResyncConfig`.
    pub fn custom_resync<K: 'static>(mut self, period: Duration) -> Self {
        self.custom_resync
            .insert(TypeId::of::<K>(), nonzero(period));
        self
    }

    /// Edits the selectors of every list and watch of every informer (client-go's
    /// `WithTweakListOptions`), so that only matching objects are cached. The tweak gets a
    /// `ListParams` holding the request's label and field selectors; only the selectors it
    /// leaves are used (paging, `resourceVersion` and timeouts stay the reflector's).
    pub fn tweak_list_params(
        mut self,
        tweak: impl Fn(&mut ListParams) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    /// Rewrites the metadata of every object of every informer before it is cached (client-go's
    /// `WithTransform`), typically to drop `managedFields` and save memory
    /// (`.transform(cache::strip_managed_fields)`). It runs on every listed and watched object,
    /// so it should be quick.
    pub fn transform(mut self, f: impl Fn(&mut ObjectMeta) + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Reflector settings of every informer.
    pub fn reflector(mut self, options: ReflectorOptions) -> Self {
        self.reflector = options;
        self
    }

    /// Turns every informer's streaming watch-list on (the default) or off
    /// ([`ReflectorOptions::watch_list`]).
    pub fn watch_list(mut self, on: bool) -> Self {
        self.reflector.watch_list = on;
        self
    }

    /// Shards every informer over the replica's ranges ([`ReflectorOptions::sharded`]).
    #[cfg(feature = "sharding")]
    pub fn sharded(mut self, scope: crate::shard::ShardScope) -> Self {
        self.reflector.shard = Some(scope);
        self
    }

    /// Records every informer's metrics through `provider`, each labelled with its resource
    /// (`configmaps`, `widgets.example.com`).
    pub fn metrics(mut self, provider: Arc<dyn InformerMetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                client: self.client,
                namespace: self.namespace,
                resync: self.resync,
                custom_resync: self.custom_resync,
                reflector: self.reflector,
                tweak: self.tweak,
                transform: self.transform,
                metrics: self.metrics,
                entries: Mutex::new(HashMap::new()),
            }),
        }
    }
}

/// Hands out one [`SharedIndexInformer`] per kind and runs them. A cheap handle: clones share
/// the factory. Dropping the last handle stops its informers.
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    namespace: Option<String>,
    resync: Option<Duration>,
    custom_resync: HashMap<TypeId, Option<Duration>>,
    reflector: ReflectorOptions,
    tweak: Option<Tweak>,
    transform: Option<MetaTransform>,
    metrics: Option<Arc<dyn InformerMetricsProvider>>,
    entries: Mutex<HashMap<TypeId, Entry>>,
}

/// A kind's resource as metrics name it: the plural, and the group after a dot if any.
fn resource_name<K: Resource<DynamicType = ()>>() -> String {
    let group = K::group(&());
    let plural = K::plural(&());
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// `None` for a zero period: client-go's "no resync".
fn nonzero(period: Duration) -> Option<Duration> {
    (!period.is_zero()).then_some(period)
}

impl Inner {
    fn abort_all(&self) {
        for entry in self.entries.lock().values() {
            if let Some(task) = &entry.task {
                task.abort();
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.inner.namespace)
            .field("resync", &self.inner.resync)
            .field("informers", &self.inner.entries.lock().len())
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory over `client` (a `kube::Client`, or a generated clientset) with default
    /// settings.
    pub fn new(client: impl Into<Client>) -> Self {
        Self::builder(client).build()
    }

    /// A builder for a factory over `client` (a `kube::Client`, or a generated clientset).
    pub fn builder(client: impl Into<Client>) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client: client.into(),
            namespace: None,
            resync: None,
            custom_resync: HashMap::new(),
            reflector: ReflectorOptions::default(),
            tweak: None,
            transform: None,
            metrics: None,
        }
    }

    /// The namespace the informers of namespaced kinds watch (`None`: all).
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// The client the informers list and watch through.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The informer for `K`: created on first use, the same one afterwards.
    pub fn informer_for<K>(&self) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::Scope: FactoryScope,
    {
        let mut entries = self.inner.entries.lock();
        let entry = entries.entry(TypeId::of::<K>()).or_insert_with(|| {
            let api = <K::Scope as FactoryScope>::api::<K>(
                self.inner.client.clone(),
                self.inner.namespace.as_deref(),
            );
            let mut options = InformerOptions::default().reflector(self.inner.reflector.clone());
            if let Some(provider) = self.inner.metrics.clone() {
                options = options.metrics(provider, resource_name::<K>());
            }
            let resync = match self.inner.custom_resync.get(&TypeId::of::<K>()) {
                Some(custom) => *custom,
                None => self.inner.resync,
            };
            if let Some(period) = resync {
                options = options.resync(period);
            }
            if let Some(f) = self.inner.transform.clone() {
                options = options.transform(move |mut k: K| {
                    f(k.meta_mut());
                    k
                });
            }
            let informer = match self.inner.tweak.clone() {
                Some(tweak) => {
                    SharedIndexInformer::<K>::new(Tweaked { inner: api, tweak }, options)
                }
                None => SharedIndexInformer::<K>::new(api, options),
            };
            Entry {
                informer: Box::new(informer),
                task: None,
                resource: resource_name::<K>(),
            }
        });
        entry
            .informer
            .as_any()
            .downcast_ref::<SharedIndexInformer<K>>()
            .expect("entries are keyed by the informer's type")
            .clone()
    }

    /// Starts every informer asked for and not yet started, on the current Tokio runtime.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn start(&self) {
        for entry in self.inner.entries.lock().values_mut() {
            if entry.task.is_none() {
                entry.task = Some(tokio::spawn(entry.informer.run()));
            }
        }
    }

    /// Waits until every started informer has its first list cached.
    pub async fn wait_for_cache_sync(&self) {
        let waits: Vec<BoxFuture<'static, ()>> = self
            .inner
            .entries
            .lock()
            .values()
            .filter(|e| e.task.is_some())
            .map(|e| e.informer.wait_for_sync())
            .collect();
        futures::future::join_all(waits).await;
    }

    /// The started informers whose reflector is failing now, by resource (`deployments.apps`),
    /// with its last error: what a health check reports.
    pub fn reflector_errors(&self) -> Vec<(String, crate::cache::ReflectorError)> {
        let mut out: Vec<_> = self
            .inner
            .entries
            .lock()
            .values()
            .filter(|e| e.task.is_some())
            .filter_map(|e| Some((e.resource.clone(), e.informer.last_error()?)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Stops every informer (they cannot be started again).
    pub fn shutdown(&self) {
        self.inner.abort_all();
    }
}
