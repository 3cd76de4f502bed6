//! A read-only handle on an informer's cache. Only the informer writes its store; everyone
//! else (controllers, listers, tests) reads it through this handle, so a program cannot put
//! the cache out of step with the server by writing to it (kube-runtime's `Store`/`Writer`
//! split, client-go's "treat the cache as read-only" rule made a type).

use std::fmt;
use std::sync::Arc;

use super::error::CacheError;
use super::store::Store;

/// Read access to an informer's cache; cheap to clone. There is no way to write through it:
///
/// ```compile_fail,E0599
/// # use std::sync::Arc;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// fn corrupt(cache: kube_codegen_runtime::cache::StoreReader<ConfigMap>) {
///     cache.add(Arc::new(ConfigMap::default()));
/// }
/// ```
pub struct StoreReader<K>(Arc<Store<K>>);

impl<K> Clone for StoreReader<K> {
    fn clone(&self) -> Self {
        StoreReader(self.0.clone())
    }
}

impl<K> fmt::Debug for StoreReader<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreReader").field(&self.0).finish()
    }
}

impl<K> StoreReader<K> {
    pub(crate) fn new(store: Arc<Store<K>>) -> Self {
        StoreReader(store)
    }

    /// Whether both handles read the same cache (one shared informer).
    pub fn is_same_cache(&self, other: &StoreReader<K>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<K: kube::Resource> StoreReader<K> {
    /// The cached object with `obj`'s key.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, CacheError> {
        self.0.get(obj)
    }

    /// The cached object under `key` (`namespace/name`, or `name` when cluster-scoped).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.0.get_by_key(key)
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.0.list()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.0.list_keys()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The objects that share an index value with `obj` under index `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, CacheError> {
        self.0.index(name, obj)
    }

    /// The keys of the objects indexed under `value` in index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<String>, CacheError> {
        self.0.index_keys(name, value)
    }

    /// The objects indexed under `value` in index `name`, in no particular order.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, CacheError> {
        self.0.by_index(name, value)
    }

    /// The values index `name` holds objects under, sorted (empty for an unknown index).
    pub fn index_values(&self, name: &str) -> Vec<String> {
        self.0.index_values(name)
    }

    /// The names of the cache's indices, sorted.
    pub fn index_names(&self) -> Vec<String> {
        self.0.index_names()
    }
}
