//! [`Store`]: the thread-safe object cache with named indices (client-go's `threadSafeMap`
//! behind `cache.Indexer`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError};

use crossbeam_utils::sync::{ShardedLock, ShardedLockReadGuard, ShardedLockWriteGuard};
use hashbrown::HashMap;
use hashbrown::hash_map::EntryRef;
use kube::Resource;

use super::error::CacheError;
use super::keys::store_key;

/// Computes the values an object is indexed under (any number, duplicates ignored).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Named index functions.
pub type Indexers<K> = BTreeMap<String, IndexFn<K>>;

/// The name of the namespace index (client-go's `cache.NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes an object by its namespace (`""` when cluster-scoped): client-go's
/// `MetaNamespaceIndexFunc`, which listers use to list one namespace without a scan.
pub fn namespace_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| vec![obj.meta().namespace.clone().unwrap_or_default()])
}

/// A cache key. Keys up to 24 bytes live inside the map's slot, so a lookup compares them
/// without following a pointer to another cache line (one miss fewer per `get_by_key`).
/// Longer keys are copied, not shared, between the item map and each index entry.
pub(crate) type Key = compact_str::CompactString;
pub(crate) type Hasher = foldhash::fast::RandomState;
/// Index value -> the objects indexed under it, by key. Holding the objects (not only their
/// keys) lets `by_index` copy pointers without a lookup per object.
type Index<K> = HashMap<String, HashMap<Key, Arc<K>, Hasher>, Hasher>;

/// A thread-safe cache of objects by key (`namespace/name`, see [`key_of`](super::key_of)),
/// with named indices kept up to date on every write.
///
/// Objects are stored as `Arc<K>`: readers share them without copying, and nothing can change
/// a cached object in place (client-go's "do not mutate cached objects" rule, enforced by the
/// type). Every write updates the object and all indices under one lock, so a reader sees
/// either the old or the new state, never a mix.
///
/// Reads take a reader lock of the calling thread's own shard (`crossbeam`'s `ShardedLock`):
/// lookups on different threads then touch no shared cache line and scale with cores, where
/// one reader count would bounce between them on every `get`. Writes lock every shard.
pub struct Store<K> {
    state: ShardedLock<State<K>>,
}

struct State<K> {
    items: HashMap<Key, Arc<K>, Hasher>,
    indexers: Indexers<K>,
    indices: BTreeMap<String, Index<K>>,
    /// The [`NAMESPACE_INDEX`] is the built-in [`namespace_index`]: writes then read the
    /// namespace in place instead of calling the index function, which allocates a `Vec` and a
    /// `String` for the old and the new object on every update.
    builtin_namespace_index: bool,
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.read();
        f.debug_struct("Store")
            .field("len", &s.items.len())
            .field("indexers", &s.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K> Store<K> {
    // Poisoning is ignored: only index functions run under the lock, and one that panics
    // stops a write before the item map changes.
    fn read(&self) -> ShardedLockReadGuard<'_, State<K>> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> ShardedLockWriteGuard<'_, State<K>> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Resource> Default for Store<K> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

impl<K: Resource> Store<K> {
    /// An empty store with `indexers`.
    pub fn new(indexers: Indexers<K>) -> Self {
        let indices = indexers
            .keys()
            .map(|n| (n.clone(), Index::default()))
            .collect();
        Store {
            state: ShardedLock::new(State {
                items: HashMap::default(),
                indexers,
                indices,
                builtin_namespace_index: false,
            }),
        }
    }

    /// An empty store with the namespace index ([`NAMESPACE_INDEX`]), as informers build it.
    pub fn with_namespace_index() -> Self {
        let store = Self::new(Indexers::from([(
            NAMESPACE_INDEX.to_owned(),
            namespace_index::<K>(),
        )]));
        store.write().builtin_namespace_index = true;
        store
    }

    /// Inserts or replaces `obj` under its key.
    pub fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        let key = store_key(&*obj)?;
        self.insert(&key, obj);
        Ok(())
    }

    /// Inserts or replaces `obj` under `key` (which must be [`key_of`](super::key_of) the
    /// object) and returns what the key held: one lock for what `get_by_key` + `add` would do
    /// in two.
    pub fn insert(&self, key: &str, obj: Arc<K>) -> Option<Arc<K>> {
        let mut s = self.write();
        // One hash lookup; an update copies no key (the indices copy one only for a new entry).
        let old = match s.items.entry_ref(key) {
            EntryRef::Occupied(mut e) => Some(e.insert(obj.clone())),
            EntryRef::Vacant(e) => {
                e.insert_entry_with_key(Key::from(key), obj.clone());
                None
            }
        };
        s.reindex(key, old.as_deref(), Some(&obj));
        old
    }

    /// Same as [`add`](Self::add): the store does not distinguish the two.
    pub fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.add(obj)
    }

    /// Removes the object with `obj`'s key; returns what was cached.
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, CacheError> {
        Ok(self.delete_key(&store_key(obj)?))
    }

    /// Removes the object under `key`; returns what was cached.
    pub fn delete_key(&self, key: &str) -> Option<Arc<K>> {
        let mut s = self.write();
        let old = s.items.remove(key)?;
        s.reindex(key, Some(&*old), None);
        Some(old)
    }

    /// The cached object with `obj`'s key.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, CacheError> {
        Ok(self.get_by_key(&store_key(obj)?))
    }

    /// The cached object under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.read().items.get(key).cloned()
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().items.values().cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.read().items.keys().map(|k| k.to_string()).collect()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole content with `objs` (a relist) and rebuilds every index. If any
    /// object has no key, nothing changes.
    pub fn replace(&self, objs: impl IntoIterator<Item = Arc<K>>) -> Result<(), CacheError> {
        let keyed = objs
            .into_iter()
            .map(|obj| Ok((store_key(&*obj)?, obj)))
            .collect::<Result<Vec<_>, CacheError>>()?;
        self.replace_keyed(keyed);
        Ok(())
    }

    /// [`replace`](Self::replace) with the objects' keys already made; returns the content it
    /// replaced, by key (what an informer compares the relist with).
    pub(crate) fn replace_keyed(
        &self,
        objs: impl IntoIterator<Item = (Key, Arc<K>)>,
    ) -> HashMap<Key, Arc<K>, Hasher> {
        let items: HashMap<Key, Arc<K>, Hasher> = objs.into_iter().collect();
        let mut s = self.write();
        let old = std::mem::replace(&mut s.items, items);
        let State {
            items,
            indexers,
            indices,
            ..
        } = &mut *s;
        *indices = indexers
            .iter()
            .map(|(name, f)| (name.clone(), build_index(items, f)))
            .collect();
        old
    }

    /// The objects that share an index value with `obj` under index `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, CacheError> {
        let s = self.read();
        let f = s.indexer(name)?;
        let index = &s.indices[name];
        let mut found: BTreeMap<&Key, &Arc<K>> = BTreeMap::new();
        for v in f(obj) {
            found.extend(index.get(&v).into_iter().flatten());
        }
        Ok(found.into_values().cloned().collect())
    }

    /// The keys of the objects indexed under `value` in index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<String>, CacheError> {
        let s = self.read();
        s.indexer(name)?;
        let mut keys: Vec<String> = s.indices[name]
            .get(value)
            .into_iter()
            .flat_map(|objs| objs.keys())
            .map(|k| k.to_string())
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects indexed under `value` in index `name`, in no particular order.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, CacheError> {
        let s = self.read();
        s.indexer(name)?;
        Ok(s.indices[name]
            .get(value)
            .into_iter()
            .flat_map(|objs| objs.values().cloned())
            .collect())
    }

    /// The values index `name` holds objects under, sorted (empty for an unknown index).
    pub fn index_values(&self, name: &str) -> Vec<String> {
        let s = self.read();
        let mut values: Vec<String> = s
            .indices
            .get(name)
            .map(|index| index.keys().cloned().collect())
            .unwrap_or_default();
        values.sort_unstable();
        values
    }

    /// The names of the store's indices, sorted.
    pub fn index_names(&self) -> Vec<String> {
        self.read().indexers.keys().cloned().collect()
    }

    /// Adds indices, filling them from the objects already cached. Fails, adding none, if a
    /// name is taken.
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), CacheError> {
        let mut s = self.write();
        if let Some(name) = new.keys().find(|n| s.indexers.contains_key(*n)) {
            return Err(CacheError::IndexConflict(name.clone()));
        }
        let State {
            items,
            indexers,
            indices,
            ..
        } = &mut *s;
        for (name, f) in new {
            indices.insert(name.clone(), build_index(items, &f));
            indexers.insert(name, f);
        }
        Ok(())
    }
}

impl<K: Resource> State<K> {
    fn indexer(&self, name: &str) -> Result<&IndexFn<K>, CacheError> {
        self.indexers
            .get(name)
            .ok_or_else(|| CacheError::UnknownIndex(name.to_owned()))
    }

    /// Moves `key` from the index values of `old` to those of `new` in every index.
    fn reindex(&mut self, key: &str, old: Option<&K>, new: Option<&Arc<K>>) {
        for (name, f) in &self.indexers {
            if self.builtin_namespace_index && name == NAMESPACE_INDEX {
                let index = self
                    .indices
                    .get_mut(name)
                    .expect("an index for every indexer");
                reindex_namespace(index, key, old, new);
                continue;
            }
            let old_values = old.map(|o| f(o)).unwrap_or_default();
            let new_values = new.map(|n| f(n)).unwrap_or_default();
            // Every indexer has its index (built with it), so no key is cloned here.
            let index = self
                .indices
                .get_mut(name)
                .expect("an index for every indexer");
            // The common case (one value, unchanged) only swaps the object in place.
            if let (Some(new), [v]) = (new, old_values.as_slice())
                && new_values == old_values
                && let Some(slot) = index.get_mut(v).and_then(|objs| objs.get_mut(key))
            {
                *slot = new.clone();
                continue;
            }
            for v in &old_values {
                if let Some(objs) = index.get_mut(v) {
                    objs.remove(key);
                    if objs.is_empty() {
                        index.remove(v);
                    }
                }
            }
            if let Some(new) = new {
                insert_all(index, new_values, key, new);
            }
        }
    }
}

/// [`State::reindex`] for the built-in namespace index, reading each object's namespace in
/// place (what [`namespace_index`] returns, without its allocations).
fn reindex_namespace<K: Resource>(
    index: &mut Index<K>,
    key: &str,
    old: Option<&K>,
    new: Option<&Arc<K>>,
) {
    fn ns<K: Resource>(o: &K) -> &str {
        o.meta().namespace.as_deref().unwrap_or("")
    }
    let old_ns = old.map(ns);
    if let (Some(old_ns), Some(new)) = (old_ns, new)
        && old_ns == ns(&**new)
        && let Some(slot) = index.get_mut(old_ns).and_then(|objs| objs.get_mut(key))
    {
        *slot = new.clone();
        return;
    }
    if let Some(old_ns) = old_ns
        && let Some(objs) = index.get_mut(old_ns)
    {
        objs.remove(key);
        if objs.is_empty() {
            index.remove(old_ns);
        }
    }
    if let Some(new) = new {
        let ns = ns(&**new);
        match index.get_mut(ns) {
            Some(objs) => {
                objs.insert(Key::from(key), new.clone());
            }
            None => {
                index
                    .entry(ns.to_owned())
                    .or_default()
                    .insert(Key::from(key), new.clone());
            }
        }
    }
}

/// The index `f` makes of `items`.
fn build_index<K>(items: &HashMap<Key, Arc<K>, Hasher>, f: &IndexFn<K>) -> Index<K> {
    let mut index = Index::default();
    for (key, obj) in items {
        insert_all(&mut index, f(obj), key, obj);
    }
    index
}

/// Files `obj` under each of `values` in `index`.
fn insert_all<K>(index: &mut Index<K>, values: Vec<String>, key: &str, obj: &Arc<K>) {
    for v in values {
        index
            .entry(v)
            .or_default()
            .insert(Key::from(key), obj.clone());
    }
}
