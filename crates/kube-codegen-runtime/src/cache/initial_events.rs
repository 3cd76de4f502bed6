//! The initial events of a watch-list, collected until the bookmark that ends them (client-go's
//! temporary store in `watchList()`): the real store sees them as one replace, never a partial
//! state, and an interrupted watch-list leaves it untouched.

use hashbrown::HashMap;

use super::store::Hasher;
use kube::Resource;
use kube::core::watch::Bookmark;

use super::keys::key_of;

/// The annotation of the bookmark that ends a watch-list's initial events.
pub(crate) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether `bookmark` ends the initial events.
pub(crate) fn ends_initial_events(bookmark: &Bookmark) -> bool {
    bookmark
        .metadata
        .annotations
        .get(INITIAL_EVENTS_END)
        .is_some_and(|v| v == "true")
}

/// Objects by key, in the order they first arrived.
pub(crate) struct InitialEvents<K> {
    objects: Vec<Option<K>>,
    index: HashMap<String, usize, Hasher>,
    live: usize,
}

impl<K: Resource> InitialEvents<K> {
    pub(crate) fn new() -> Self {
        InitialEvents {
            objects: Vec::new(),
            index: HashMap::default(),
            live: 0,
        }
    }

    /// Adds or replaces an object. One without a name cannot be cached: it is dropped with a
    /// warning, as the store would drop it.
    pub(crate) fn put(&mut self, object: K) {
        let key = match key_of(&object) {
            Ok(k) => k,
            Err(e) => return tracing::warn!("reflector: watch-list object not cached: {e}"),
        };
        match self.index.get(&key) {
            Some(&i) => {
                if self.objects[i].replace(object).is_none() {
                    self.live += 1;
                }
            }
            None => {
                self.index.insert(key, self.objects.len());
                self.objects.push(Some(object));
                self.live += 1;
            }
        }
    }

    /// Forgets an object (a server sends none before the end bookmark, but a delete there
    /// must not leave the object behind).
    pub(crate) fn remove(&mut self, object: &K) {
        let Ok(key) = key_of(object) else { return };
        if let Some(&i) = self.index.get(&key)
            && self.objects[i].take().is_some()
        {
            self.live -= 1;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The objects, for one replace.
    pub(crate) fn into_objects(self) -> Vec<K> {
        let mut out = Vec::with_capacity(self.live);
        out.extend(self.objects.into_iter().flatten());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(name: &str, v: &str) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some("ns".into());
        c.data = Some([("k".to_owned(), v.to_owned())].into());
        c
    }

    #[test]
    fn keeps_arrival_order_the_newest_state_and_no_deleted_object() {
        let mut e = InitialEvents::new();
        e.put(cm("a", "1"));
        e.put(cm("b", "1"));
        e.put(cm("c", "1"));
        e.put(cm("a", "2"));
        e.remove(&cm("b", "1"));
        e.put(ConfigMap::default()); // no name: dropped
        assert_eq!(e.len(), 2);
        let got: Vec<(String, String)> = e
            .into_objects()
            .into_iter()
            .map(|c| (c.metadata.name.unwrap(), c.data.unwrap()["k"].clone()))
            .collect();
        assert_eq!(
            got,
            [("a".into(), "2".into()), ("c".into(), "1".into())],
            "a replaced in place, b gone"
        );
    }

    #[test]
    fn only_the_annotated_bookmark_ends_the_initial_events() {
        let parse = |meta: &str| -> Bookmark {
            serde_json::from_str(&format!(
                r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{meta}}}"#
            ))
            .unwrap()
        };
        assert!(ends_initial_events(&parse(
            r#"{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}"#
        )));
        assert!(!ends_initial_events(&parse(r#"{"resourceVersion":"7"}"#)));
        assert!(!ends_initial_events(&parse(
            r#"{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"false"}}"#
        )));
    }
}
