//! The object store: JSON objects keyed by (group, resource, namespace, name), one global
//! resourceVersion counter and a bounded event history for watch replay.
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

/// Version-independent identity of an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub group: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, kept in the history and fanned out to watchers.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub key: Key,
    /// The object after the change (for DELETED: the last state, with the deletion's resourceVersion).
    pub object: Value,
    /// The object before the change (MODIFIED and DELETED).
    pub old: Option<Value>,
    /// Watch lines already rendered for (apiVersion, event type), shared by all watchers.
    pub lines: parking_lot::Mutex<Vec<(String, &'static str, bytes::Bytes)>>,
}

pub struct Store {
    objects: BTreeMap<Key, Value>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    limit: usize,
    /// Watches and snapshots from a resourceVersion below this are too old.
    floor: u64,
    tx: broadcast::Sender<Arc<Event>>,
}

/// Set `metadata.resourceVersion` on an object.
pub fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

impl Store {
    pub fn new(limit: usize) -> Self {
        let (tx, _) = broadcast::channel(16_384);
        Store {
            objects: BTreeMap::new(),
            rv: 1,
            history: VecDeque::new(),
            limit: limit.max(1),
            floor: 1,
            tx,
        }
    }

    pub fn rv(&self) -> u64 {
        self.rv
    }
    #[cfg(test)]
    pub fn floor(&self) -> u64 {
        self.floor
    }
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }
    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Value)> {
        self.objects.iter()
    }

    fn prefix_range<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> {
        let start = Key {
            group: group.into(),
            resource: resource.into(),
            namespace: String::new(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.group == group && k.resource == resource)
    }

    /// Every object of one resource, borrowed (controllers that run after every write look at
    /// all CRDs this way: cloning them cost a deep copy of every CRD per write).
    pub fn of_resource<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
    ) -> impl Iterator<Item = &'a Value> {
        self.prefix_range(group, resource).map(|(_, v)| v)
    }

    /// The keys of every object of one resource, in key order.
    pub fn keys_of_resource<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
    ) -> impl Iterator<Item = &'a Key> {
        self.prefix_range(group, resource).map(|(k, _)| k)
    }

    /// Current objects of a resource, optionally in one namespace, ordered by (namespace, name).
    pub fn list(&self, group: &str, resource: &str, namespace: Option<&str>) -> Vec<(Key, Value)> {
        self.prefix_range(group, resource)
            .filter(|(k, _)| namespace.is_none_or(|ns| k.namespace == ns))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Keys of every object in namespace `ns` (any resource).
    pub fn keys_in_namespace(&self, ns: &str) -> Vec<Key> {
        self.objects
            .keys()
            .filter(|k| k.namespace == ns)
            .cloned()
            .collect()
    }

    /// The objects of a resource as they were at `rv`, rebuilt by undoing later history.
    /// `Err(floor)` when the history no longer reaches back that far.
    pub fn snapshot(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        rv: u64,
    ) -> Result<Vec<(Key, Value)>, u64> {
        if rv >= self.rv {
            return Ok(self.list(group, resource, namespace));
        }
        if rv < self.floor {
            return Err(self.floor);
        }
        let mut map: BTreeMap<Key, Value> =
            self.list(group, resource, namespace).into_iter().collect();
        for e in self.history.iter().rev().take_while(|e| e.rv > rv) {
            if e.key.group != group
                || e.key.resource != resource
                || namespace.is_some_and(|ns| e.key.namespace != ns)
            {
                continue;
            }
            match (e.kind, &e.old) {
                (EventType::Added, _) => {
                    map.remove(&e.key);
                }
                (_, Some(old)) => {
                    map.insert(e.key.clone(), old.clone());
                }
                (_, None) => {}
            }
        }
        Ok(map.into_iter().collect())
    }

    /// History events after `rv`; `Err(floor)` when `rv` is older than the history.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Event>>, u64> {
        if rv < self.floor {
            return Err(self.floor);
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.iter().skip(start).cloned().collect())
    }

    /// Writes an object (create or update), stamping the next resourceVersion. Returns the stored object.
    pub fn put(&mut self, key: Key, mut obj: Value) -> Value {
        self.rv += 1;
        set_rv(&mut obj, self.rv);
        let old = self.objects.insert(key.clone(), obj.clone());
        let kind = if old.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(Event {
            lines: Default::default(),
            rv: self.rv,
            kind,
            key,
            object: obj.clone(),
            old,
        });
        obj
    }

    /// Removes an object; the returned last state carries the deletion's resourceVersion.
    pub fn delete(&mut self, key: &Key) -> Option<Value> {
        self.delete_as(key, None)
    }

    /// Removes an object, reporting `last` (or the stored state) as its final state.
    pub fn delete_as(&mut self, key: &Key, last: Option<Value>) -> Option<Value> {
        let old = self.objects.remove(key)?;
        self.rv += 1;
        let mut last = last.unwrap_or_else(|| old.clone());
        set_rv(&mut last, self.rv);
        self.record(Event {
            lines: Default::default(),
            rv: self.rv,
            kind: EventType::Deleted,
            key: key.clone(),
            object: last.clone(),
            old: Some(old),
        });
        Some(last)
    }

    fn record(&mut self, e: Event) {
        let e = Arc::new(e);
        self.history.push_back(e.clone());
        while self.history.len() > self.limit {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(e);
    }

    /// Forgets all history: a watch or snapshot from any earlier resourceVersion now gets 410.
    pub fn compact(&mut self) {
        self.history.clear();
        self.floor = self.rv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(n: &str) -> Key {
        Key {
            group: "g".into(),
            resource: "r".into(),
            namespace: "ns".into(),
            name: n.into(),
        }
    }

    #[test]
    fn snapshot_undoes_later_changes() {
        let mut s = Store::new(100);
        s.put(key("a"), json!({"metadata": {"name": "a"}, "v": 1}));
        let at = s.rv();
        s.put(key("a"), json!({"metadata": {"name": "a"}, "v": 2}));
        s.put(key("b"), json!({"metadata": {"name": "b"}}));
        let snap = s.snapshot("g", "r", None, at).unwrap();
        assert_eq!(snap.len(), 1);
        assert_eq!(snap[0].1["v"], 1);
        s.delete(&key("a"));
        assert_eq!(s.snapshot("g", "r", None, at).unwrap()[0].1["v"], 1);
        assert!(s.list("g", "r", None).len() == 1);
    }

    #[test]
    fn bounded_history_raises_floor() {
        let mut s = Store::new(2);
        for i in 0..5 {
            s.put(key(&format!("o{i}")), json!({"metadata": {}}));
        }
        assert_eq!(s.since(1).err(), Some(s.floor()));
        assert_eq!(s.since(s.rv() - 2).unwrap().len(), 2);
        s.compact();
        assert!(s.since(s.rv() - 1).is_err());
        assert!(s.since(s.rv()).unwrap().is_empty());
    }
}
