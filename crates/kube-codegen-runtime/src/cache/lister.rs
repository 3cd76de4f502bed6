//! Listers: read-only, selector-aware views of a [`Store`] (client-go's `listers.go` and the
//! generic `ResourceIndexer` behind generated listers).

use std::fmt;
use std::sync::Arc;

use kube::Resource;
use kube::core::{Selector, SelectorExt};
use tokio::sync::watch;

use super::error::NotSynced;
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

/// Whether the cache behind a lister has its first list: `None` for a store that is always
/// complete (one filled by hand), else the informer's flag.
type SyncedFlag = Option<watch::Receiver<bool>>;

fn check(synced: &SyncedFlag) -> Result<(), NotSynced> {
    if is_synced(synced) {
        Ok(())
    } else {
        Err(NotSynced)
    }
}

fn is_synced(synced: &SyncedFlag) -> bool {
    synced.as_ref().is_none_or(|rx| *rx.borrow())
}

/// Reads one kind of object from a shared cache: what a generated `FooLister` wraps.
///
/// A lister made by an informer refuses reads with [`NotSynced`] until the informer's first
/// list is cached, so "missing" (`Ok(None)`, an empty list) is never confused with "not loaded
/// yet". Once synced it stays synced: during a relist it answers from the previous list, as
/// client-go's listers do.
pub struct Lister<K> {
    store: Arc<Store<K>>,
    synced: SyncedFlag,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            store: self.store.clone(),
            synced: self.synced.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("store", &self.store)
            .field("synced", &is_synced(&self.synced))
            .finish()
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `store`, which is taken as complete: reads never fail.
    pub fn new(store: Arc<Store<K>>) -> Self {
        Lister {
            store,
            synced: None,
        }
    }

    /// A lister over `store` that refuses reads while `synced` holds `false` (an informer's
    /// "first list cached" flag; [`SharedIndexInformer::lister`](super::SharedIndexInformer::lister)
    /// passes its own).
    pub fn with_synced(store: Arc<Store<K>>, synced: watch::Receiver<bool>) -> Self {
        Lister {
            store,
            synced: Some(synced),
        }
    }

    /// True once the cache holds its first full list (always, for [`Lister::new`]).
    pub fn has_synced(&self) -> bool {
        is_synced(&self.synced)
    }

    /// Objects in every namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Result<Vec<Arc<K>>, NotSynced> {
        check(&self.synced)?;
        Ok(list_all(&self.store, selector))
    }

    /// A cluster-scoped object by name: `Ok(None)` when the synced cache has no such object
    /// (for a namespaced kind, use [`namespace`](Self::namespace)).
    pub fn get(&self, name: &str) -> Result<Option<Arc<K>>, NotSynced> {
        check(&self.synced)?;
        Ok(self.store.get_by_key(name))
    }

    /// The objects of one namespace (every namespace for `""`), with the same synced flag.
    pub fn namespace(&self, namespace: impl Into<String>) -> NamespaceLister<K> {
        NamespaceLister {
            store: self.store.clone(),
            namespace: namespace.into(),
            synced: self.synced.clone(),
        }
    }
}

/// Reads the objects of one namespace from a shared cache. Like [`Lister`], refuses reads
/// with [`NotSynced`] until the informer has listed.
pub struct NamespaceLister<K> {
    store: Arc<Store<K>>,
    namespace: String,
    synced: SyncedFlag,
}

impl<K> Clone for NamespaceLister<K> {
    fn clone(&self) -> Self {
        NamespaceLister {
            store: self.store.clone(),
            namespace: self.namespace.clone(),
            synced: self.synced.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .field("synced", &is_synced(&self.synced))
            .finish_non_exhaustive()
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// True once the cache holds its first full list.
    pub fn has_synced(&self) -> bool {
        is_synced(&self.synced)
    }

    /// Objects of this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Result<Vec<Arc<K>>, NotSynced> {
        check(&self.synced)?;
        Ok(list_all_by_namespace(
            &self.store,
            &self.namespace,
            selector,
        ))
    }

    /// The object `name` in this namespace (a cluster-scoped object for namespace `""`):
    /// `Ok(None)` when the synced cache has no such object.
    pub fn get(&self, name: &str) -> Result<Option<Arc<K>>, NotSynced> {
        check(&self.synced)?;
        if self.namespace.is_empty() {
            return Ok(self.store.get_by_key(name));
        }
        Ok(with_key(&self.namespace, name, |key| {
            self.store.get_by_key(key)
        }))
    }
}

/// Runs `f` with the key `namespace/name` built on the stack: a lookup is ~140 instructions,
/// and building the key with `format!` cost 1,075 (W4's callgrind figures). Every valid key fits
/// (a namespace is at most 63 bytes, a name 253); a longer one is built on the heap.
fn with_key<T>(namespace: &str, name: &str, f: impl FnOnce(&str) -> T) -> T {
    let mut buf = [0u8; 320];
    let len = namespace.len() + 1 + name.len();
    if len <= buf.len() {
        buf[..namespace.len()].copy_from_slice(namespace.as_bytes());
        buf[namespace.len()] = b'/';
        buf[namespace.len() + 1..len].copy_from_slice(name.as_bytes());
        // Two strings joined by an ASCII byte are UTF-8; the check only satisfies the type.
        if let Ok(key) = std::str::from_utf8(&buf[..len]) {
            return f(key);
        }
    }
    f(&format!("{namespace}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::with_key;

    #[test]
    fn keys_are_namespace_slash_name_on_the_stack_or_the_heap() {
        assert_eq!(with_key("ns-1", "name-2", str::to_owned), "ns-1/name-2");
        assert_eq!(with_key("ns", "ü", str::to_owned), "ns/ü");
        let long = "n".repeat(400);
        assert_eq!(
            with_key("default", &long, str::to_owned),
            format!("default/{long}")
        );
    }
}
