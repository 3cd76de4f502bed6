//! The cache store, its indices and listers: client-go `threadSafeMap` / lister semantics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{Expression, Selector};
use kube_codegen_runtime::cache::{
    CacheError, IndexFn, Indexers, Lister, NAMESPACE_INDEX, Store, list_all_by_namespace,
};
use proptest::prelude::*;

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    })
}

/// Indexes a config map under every value of its comma-separated `tiers` label.
fn tiers() -> IndexFn<ConfigMap> {
    Arc::new(|o: &ConfigMap| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("tiers"))
            .map(|t| t.split(',').map(str::to_owned).collect())
            .unwrap_or_default()
    })
}

fn store_with_tiers() -> Store<ConfigMap> {
    let store = Store::with_namespace_index();
    store
        .add_indexers(Indexers::from([("tiers".to_owned(), tiers())]))
        .unwrap();
    store
}

fn names(objs: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut n: Vec<String> = objs
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    n.sort();
    n
}

#[test]
fn updates_move_an_object_between_index_values() {
    let s = store_with_tiers();
    s.add(cm("a", "x", &[("tiers", "web,db")])).unwrap();
    s.add(cm("a", "y", &[("tiers", "web")])).unwrap();
    assert_eq!(s.index_keys("tiers", "web").unwrap(), ["a/x", "a/y"]);
    assert_eq!(s.index_keys("tiers", "db").unwrap(), ["a/x"]);

    s.update(cm("a", "x", &[("tiers", "cache")])).unwrap();
    assert_eq!(s.index_keys("tiers", "web").unwrap(), ["a/y"]);
    assert_eq!(
        s.index_values("tiers"),
        ["cache", "web"],
        "an emptied value leaves the index"
    );
    assert_eq!(names(&s.by_index("tiers", "cache").unwrap()), ["x"]);

    let gone = s.delete_key("a/y").expect("was cached");
    assert_eq!(gone.metadata.name.as_deref(), Some("y"));
    assert_eq!(s.index_values("tiers"), ["cache"]);
    assert_eq!(s.by_index(NAMESPACE_INDEX, "a").unwrap().len(), 1);
    assert!(s.delete_key("a/y").is_none());
}

#[test]
fn an_update_that_keeps_index_values_still_replaces_the_indexed_object() {
    let s = store_with_tiers();
    s.add(cm("a", "x", &[("tiers", "web")])).unwrap();
    let first = s.get_by_key("a/x").unwrap();
    let newer = cm("a", "x", &[("tiers", "web"), ("rev", "2")]);
    let replaced = s
        .insert("a/x", newer.clone())
        .expect("the key held an object");
    assert!(
        Arc::ptr_eq(&replaced, &first),
        "insert hands back what it replaced"
    );
    let by_ns = s.by_index(NAMESPACE_INDEX, "a").unwrap();
    assert!(Arc::ptr_eq(&by_ns[0], &newer));
    assert!(Arc::ptr_eq(&s.by_index("tiers", "web").unwrap()[0], &newer));
}

#[test]
fn index_returns_objects_sharing_any_value_once() {
    let s = store_with_tiers();
    s.add(cm("a", "x", &[("tiers", "web,db")])).unwrap();
    s.add(cm("a", "y", &[("tiers", "db")])).unwrap();
    s.add(cm("a", "z", &[("tiers", "cache")])).unwrap();
    let probe = cm("b", "probe", &[("tiers", "web,db,db")]);
    assert_eq!(names(&s.index("tiers", &probe).unwrap()), ["x", "y"]);
}

#[test]
fn cached_objects_are_shared_not_copied() {
    let s = Store::<ConfigMap>::default();
    let obj = cm("a", "x", &[]);
    s.add(obj.clone()).unwrap();
    let got = s.get_by_key("a/x").unwrap();
    assert!(Arc::ptr_eq(&obj, &got));
    assert!(Arc::ptr_eq(&obj, &s.get(&obj).unwrap().unwrap()));
    assert!(Arc::ptr_eq(&obj, &s.list()[0]));
}

#[test]
fn unknown_indices_and_conflicts_are_errors() {
    let s = store_with_tiers();
    let err = s.by_index("owner", "x").unwrap_err();
    assert_eq!(err, CacheError::UnknownIndex("owner".into()));
    assert_eq!(err.to_string(), "index with name owner does not exist");
    assert!(s.index_keys("owner", "x").is_err());
    assert!(s.index("owner", &cm("a", "x", &[])).is_err());
    assert!(s.index_values("owner").is_empty());

    let clash = Indexers::from([
        ("extra".to_owned(), tiers()),
        (NAMESPACE_INDEX.to_owned(), tiers()),
    ]);
    assert_eq!(
        s.add_indexers(clash),
        Err(CacheError::IndexConflict(NAMESPACE_INDEX.into()))
    );
    assert_eq!(
        s.index_names(),
        [NAMESPACE_INDEX, "tiers"],
        "a failed add adds nothing"
    );
}

#[test]
fn indexers_added_later_are_filled_from_the_cache() {
    let s = Store::<ConfigMap>::default();
    s.add(cm("a", "x", &[("tiers", "web")])).unwrap();
    s.add(cm("b", "y", &[("tiers", "web,db")])).unwrap();
    s.add_indexers(Indexers::from([("tiers".to_owned(), tiers())]))
        .unwrap();
    assert_eq!(s.index_keys("tiers", "web").unwrap(), ["a/x", "b/y"]);
    assert_eq!(s.index_keys("tiers", "db").unwrap(), ["b/y"]);
}

#[test]
fn replace_swaps_content_and_rebuilds_indices_or_changes_nothing() {
    let s = store_with_tiers();
    s.add(cm("a", "old", &[("tiers", "web")])).unwrap();
    s.replace([cm("b", "new", &[("tiers", "db")])]).unwrap();
    assert_eq!(s.list_keys(), ["b/new"]);
    assert_eq!(s.index_values("tiers"), ["db"]);
    assert_eq!(s.index_values(NAMESPACE_INDEX), ["b"]);

    let mut nameless = (*cm("c", "x", &[])).clone();
    nameless.metadata.name = None;
    let err = s
        .replace([cm("c", "fine", &[]), Arc::new(nameless.clone())])
        .unwrap_err();
    assert_eq!(err, CacheError::NoName);
    assert_eq!(s.list_keys(), ["b/new"], "a failed replace changes nothing");
    assert_eq!(s.add(Arc::new(nameless)), Err(CacheError::NoName));
    assert_eq!(s.len(), 1);
}

#[test]
fn listers_filter_by_namespace_and_selector() {
    let store = Arc::new(Store::<ConfigMap>::with_namespace_index());
    store.add(cm("a", "x", &[("app", "web")])).unwrap();
    store.add(cm("a", "y", &[("app", "db")])).unwrap();
    store.add(cm("b", "z", &[("app", "web")])).unwrap();
    store.add(cm("b", "bare", &[])).unwrap();
    let lister = Lister::new(store.clone());
    let all = Selector::default();
    let web: Selector = Expression::Equal("app".into(), "web".into()).into();
    let no_app: Selector = Expression::DoesNotExist("app".into()).into();

    assert_eq!(names(&lister.list(&all).unwrap()), ["bare", "x", "y", "z"]);
    assert_eq!(names(&lister.list(&web).unwrap()), ["x", "z"]);
    assert_eq!(names(&lister.list(&no_app).unwrap()), ["bare"]);
    assert_eq!(names(&lister.namespace("a").list(&web).unwrap()), ["x"]);
    assert_eq!(
        names(&lister.namespace("b").list(&all).unwrap()),
        ["bare", "z"]
    );
    assert_eq!(
        names(&lister.namespace("").list(&web).unwrap()),
        ["x", "z"],
        "namespace \"\" lists all namespaces"
    );
    assert!(
        lister.has_synced(),
        "a lister over a bare store is always synced"
    );
    assert!(lister.namespace("a").get("y").unwrap().is_some());
    assert_eq!(lister.namespace("b").get("y"), Ok(None));
}

#[test]
fn listing_a_namespace_without_the_index_scans() {
    let store = Store::<ConfigMap>::default();
    store.add(cm("a", "x", &[])).unwrap();
    store.add(cm("b", "y", &[])).unwrap();
    assert_eq!(
        names(&list_all_by_namespace(&store, "b", &Selector::default())),
        ["y"]
    );
}

#[test]
fn cluster_scoped_objects_are_keyed_by_name() {
    let store = Arc::new(Store::<Namespace>::with_namespace_index());
    let ns = Arc::new(Namespace {
        metadata: ObjectMeta {
            name: Some("kube-system".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    });
    store.add(ns.clone()).unwrap();
    let lister = Lister::new(store.clone());
    assert!(Arc::ptr_eq(
        &lister.get("kube-system").unwrap().unwrap(),
        &ns
    ));
    assert!(lister.namespace("").get("kube-system").unwrap().is_some());
    assert_eq!(lister.get("missing"), Ok(None));
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "").unwrap(),
        ["kube-system"]
    );
}

/// Readers racing a writer never see an index that disagrees with the objects it returns.
#[test]
fn readers_see_indices_consistent_with_objects() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let store = Store::<ConfigMap>::with_namespace_index();
    for i in 0..50 {
        store.add(cm("even", &format!("o{i}"), &[])).unwrap();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads == 0 {
                    for ns in ["even", "odd"] {
                        for o in store.by_index(NAMESPACE_INDEX, ns).unwrap() {
                            assert_eq!(o.metadata.namespace.as_deref(), Some(ns));
                        }
                    }
                    reads += 1;
                }
            });
        }
        for round in 0..200 {
            for i in 0..50 {
                // Moving to the other namespace is a new key: delete the old one first.
                let (from, to) = if (i + round) % 2 == 0 {
                    ("odd", "even")
                } else {
                    ("even", "odd")
                };
                store.delete_key(&format!("{from}/o{i}"));
                store.add(cm(to, &format!("o{i}"), &[])).unwrap();
            }
        }
        done.store(true, Ordering::Release);
    });
    assert_eq!(store.len(), 50);
    assert_eq!(store.by_index(NAMESPACE_INDEX, "even").unwrap().len(), 25);
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u8, u8),
    Delete(u8, u8),
    Replace(Vec<(u8, u8, u8)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3u8, 0..8u8, 0..16u8).prop_map(|(n, i, t)| Op::Add(n, i, t)),
        3 => (0..3u8, 0..8u8).prop_map(|(n, i)| Op::Delete(n, i)),
        1 => prop::collection::vec((0..3u8, 0..8u8, 0..16u8), 0..6).prop_map(Op::Replace),
    ]
}

/// Object `i`'s name: odd ones make keys longer than the 24 bytes a key holds in place.
fn obj_name(i: u8) -> String {
    if i % 2 == 1 {
        format!("o{i}-a-name-long-enough-to-live-on-the-heap")
    } else {
        format!("o{i}")
    }
}

/// `tiers` label from a bit set: bit b set -> tier "t{b}" (so 0..16 covers 0 to 4 values).
fn member(ns: u8, i: u8, bits: u8) -> Arc<ConfigMap> {
    let t: Vec<String> = (0..4)
        .filter(|b| bits & (1 << b) != 0)
        .map(|b| format!("t{b}"))
        .collect();
    let joined = t.join(",");
    if t.is_empty() {
        cm(&format!("ns{ns}"), &obj_name(i), &[])
    } else {
        cm(&format!("ns{ns}"), &obj_name(i), &[("tiers", &joined)])
    }
}

proptest! {
    /// After any sequence of writes, every index equals one recomputed from the objects.
    #[test]
    fn indices_always_match_a_recomputation(ops in prop::collection::vec(op(), 1..60)) {
        let store = store_with_tiers();
        let mut model: BTreeMap<String, Arc<ConfigMap>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Add(n, i, t) => {
                    let o = member(n, i, t);
                    model.insert(format!("ns{n}/{}", obj_name(i)), o.clone());
                    store.add(o).unwrap();
                }
                Op::Delete(n, i) => {
                    let key = format!("ns{n}/{}", obj_name(i));
                    prop_assert_eq!(store.delete_key(&key).is_some(), model.remove(&key).is_some());
                }
                Op::Replace(members) => {
                    let objs: Vec<_> = members.iter().map(|&(n, i, t)| member(n, i, t)).collect();
                    model = members.iter().zip(&objs)
                        .map(|(&(n, i, _), o)| (format!("ns{n}/{}", obj_name(i)), o.clone()))
                        .collect();
                    store.replace(objs).unwrap();
                }
            }
            let mut keys = store.list_keys();
            keys.sort();
            prop_assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
            for (name, f) in [(NAMESPACE_INDEX, kube_codegen_runtime::cache::namespace_index::<ConfigMap>()), ("tiers", tiers())] {
                let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for (k, o) in &model {
                    for v in f(o) {
                        expected.entry(v).or_default().insert(k.clone());
                    }
                }
                prop_assert_eq!(store.index_values(name), expected.keys().cloned().collect::<Vec<_>>());
                for (v, ks) in &expected {
                    prop_assert_eq!(store.index_keys(name, v).unwrap(), ks.iter().cloned().collect::<Vec<_>>());
                    // The index hands out the current objects, not ones it saw earlier.
                    let objs = store.by_index(name, v).unwrap();
                    prop_assert_eq!(objs.len(), ks.len());
                    for o in objs {
                        let key = kube_codegen_runtime::cache::key_of(&*o).unwrap();
                        prop_assert!(Arc::ptr_eq(&o, &model[&key]), "stale object under {}", key);
                    }
                }
            }
        }
    }
}
