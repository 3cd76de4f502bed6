//! Listers: read-only, selector-aware views of a [`Store`] (client-go's `listers.go` and the
//! generic `ResourceIndexer` behind generated listers).

use std::fmt;
use std::sync::Arc;

use kube::Resource;
use kube::core::{Selector, SelectorExt};

use super::store::{NAMESPACE_INDEX, Store};

/// `objs` whose labels match `selector` (an empty selector keeps all without reading labels).
fn matching<K: Resource>(mut objs: Vec<Arc<K>>, selector: &Selector) -> Vec<Arc<K>> {
    if !selector.selects_all() {
        let none = Default::default();
        objs.retain(|o| selector.matches(o.meta().labels.as_ref().unwrap_or(&none)));
    }
    objs
}

/// Every object in `store` whose labels match `selector`.
pub fn list_all<K: Resource>(store: &Store<K>, selector: &Selector) -> Vec<Arc<K>> {
    matching(store.list(), selector)
}

/// Every object in `namespace` (all namespaces for `""`) whose labels match `selector`. Uses
/// the namespace index when the store has one, else scans.
pub fn list_all_by_namespace<K: Resource>(
    store: &Store<K>,
    namespace: &str,
    selector: &Selector,
) -> Vec<Arc<K>> {
    if namespace.is_empty() {
        return list_all(store, selector);
    }
    let found = match store.by_index(NAMESPACE_INDEX, namespace) {
        Ok(objs) => objs,
        Err(_) => {
            tracing::warn!(
                "cache has no {NAMESPACE_INDEX:?} index: listing namespace {namespace:?} by a scan"
            );
            let mut all = store.list();
            all.retain(|o| o.meta().namespace.as_deref().unwrap_or("") == namespace);
            all
        }
    };
    matching(found, selector)
}

/// Reads one kind of object from a shared cache: what a generated `FooLister` wraps.
pub struct Lister<K> {
    store: Arc<Store<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            store: self.store.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("store", &self.store)
            .finish()
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `store`.
    pub fn new(store: Arc<Store<K>>) -> Self {
        Lister { store }
    }

    /// Objects in every namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        list_all(&self.store, selector)
    }

    /// A cluster-scoped object by name (for a namespaced kind, use
    /// [`namespace`](Self::namespace)).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store.get_by_key(name)
    }

    /// The objects of one namespace.
    pub fn namespace(&self, namespace: impl Into<String>) -> NamespaceLister<K> {
        NamespaceLister {
            store: self.store.clone(),
            namespace: namespace.into(),
        }
    }
}

/// Reads the objects of one namespace from a shared cache.
pub struct NamespaceLister<K> {
    store: Arc<Store<K>>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// Objects of this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        list_all_by_namespace(&self.store, &self.namespace, selector)
    }

    /// The object `name` in this namespace (a cluster-scoped object for namespace `""`).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        if self.namespace.is_empty() {
            return self.store.get_by_key(name);
        }
        self.store.get_by_key(&format!("{}/{name}", self.namespace))
    }
}
