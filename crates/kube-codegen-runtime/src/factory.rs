//! [`SharedInformerFactory`]: one shared informer per kind for a whole program (client-go's
//! `informers.SharedInformerFactory` machinery, which generated factories wrap).
//!
//! Every part of a controller that asks for the informer of a kind gets the same one, so a kind
//! is listed and watched once however many handlers and listers use it. `start` runs every
//! informer asked for so far (call it again after asking for more); `wait_for_cache_sync`
//! waits for all of them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::api::Api;
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::cache::{InformerOptions, ReflectorOptions, SharedIndexInformer};

/// How a kind's scope turns a factory's namespace into an [`Api`]: namespaced kinds are read
/// in the factory's namespace (every namespace without one), cluster-scoped kinds everywhere.
pub trait FactoryScope {
    /// The `Api` the factory's informer for `K` lists and watches through.
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}

impl FactoryScope for NamespaceResourceScope {
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
}

/// What the factory does with an informer of any kind.
trait ErasedInformer: Send + Sync {
    fn run(&self) -> BoxFuture<'static, ()>;
    fn wait_for_sync(&self) -> BoxFuture<'static, ()>;
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Builds a [`SharedInformerFactory`].
pub struct SharedInformerFactoryBuilder {
    client: Client,
    namespace: Option<String>,
    resync: Option<Duration>,
    reflector: ReflectorOptions,
}

impl fmt::Debug for SharedInformerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("namespace", &self.namespace)
            .field("resync", &self.resync)
            .field("reflector", &self.reflector)
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactoryBuilder {
    /// Restricts namespaced kinds to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Resync period of every informer (none by default).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Reflector settings of every informer.
    pub fn reflector(mut self, options: ReflectorOptions) -> Self {
        self.reflector = options;
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                client: self.client,
                namespace: self.namespace,
                resync: self.resync,
                reflector: self.reflector,
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
    reflector: ReflectorOptions,
    entries: Mutex<HashMap<TypeId, Entry>>,
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
    /// A factory over `client` with default settings.
    pub fn new(client: Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder for a factory over `client`.
    pub fn builder(client: Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            client,
            namespace: None,
            resync: None,
            reflector: ReflectorOptions::default(),
        }
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
            if let Some(period) = self.inner.resync {
                options = options.resync(period);
            }
            Entry {
                informer: Box::new(SharedIndexInformer::<K>::new(api, options)),
                task: None,
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

    /// Stops every informer (they cannot be started again).
    pub fn shutdown(&self) {
        self.inner.abort_all();
    }
}
