//! The OpenAPI v2 definitions of the Kubernetes 1.35 built-in kinds (`data/builtin-definitions.json`,
//! written by `cargo xtask builtin-schemas`; source and licence in ARCHITECTURE.md), parsed once,
//! on first use: the OpenAPI documents serve them, server-side apply reads their list types and
//! map keys.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Map, Value};

const DATA: &str = include_str!("../data/builtin-definitions.json");

/// The definitions by name, with an index from group/version/kind to the name.
pub struct Definitions {
    pub by_name: Map<String, Value>,
    by_gvk: BTreeMap<(String, String, String), String>,
}

/// The definitions (parsed on the first call).
pub fn definitions() -> &'static Definitions {
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(|| {
        // The file is written by the xtask and checked by a test: it parses.
        let by_name: Map<String, Value> = serde_json::from_str(DATA).unwrap_or_default();
        let mut by_gvk = BTreeMap::new();
        for (name, def) in &by_name {
            let Some(Value::Array(gvks)) = def.get("x-kubernetes-group-version-kind") else {
                continue;
            };
            for g in gvks {
                let s = |k: &str| g.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                by_gvk.insert((s("group"), s("version"), s("kind")), name.clone());
            }
        }
        Definitions { by_name, by_gvk }
    })
}

impl Definitions {
    /// The name of the definition of `group/version, Kind=kind`.
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.by_gvk
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
            .map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name)
    }

    /// The definition a `$ref` (`#/definitions/<name>`) points at.
    pub fn resolve(&self, reference: &str) -> Option<&Value> {
        self.get(reference.rsplit('/').next()?)
    }

    /// Removes from `obj` (of `group/version, Kind=kind`) every field its definition does not
    /// declare, as decoding into the Go types drops them, and returns their paths (`spec.foo`,
    /// `spec.containers[0].bar`), sorted: what `fieldValidation` reports. Nothing is removed
    /// below a type without declared properties (quantities, times, raw JSON) or one that keeps
    /// unknown fields. No definition: nothing removed.
    pub fn prune_unknown(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        obj: &mut Value,
    ) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(def) = self.name_of(group, version, kind).and_then(|n| self.get(n)) {
            self.prune_node(def, obj, String::new(), &mut out, 0);
        }
        out.sort();
        out
    }

    fn prune_node(
        &self,
        node: &Value,
        v: &mut Value,
        path: String,
        out: &mut Vec<String>,
        depth: usize,
    ) {
        // The deepest built-in type nests far less; the bound only guards hostile input.
        if depth > 64 {
            return;
        }
        let node = match node.get("$ref").and_then(Value::as_str) {
            Some(r) => match self.resolve(r) {
                Some(n) => n,
                None => return,
            },
            None => node,
        };
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            return;
        }
        let child = |key: &str| {
            if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            }
        };
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(props)) = node.get("properties") {
                    let unknown: Vec<String> = m
                        .keys()
                        .filter(|k| !props.contains_key(*k))
                        .cloned()
                        .collect();
                    for k in unknown {
                        m.remove(&k);
                        out.push(child(&k));
                    }
                    for (k, value) in m.iter_mut() {
                        self.prune_node(&props[k], value, child(k), out, depth + 1);
                    }
                } else if let Some(items @ Value::Object(_)) = node.get("additionalProperties") {
                    for (k, value) in m.iter_mut() {
                        self.prune_node(items, value, format!("{path}[{k}]"), out, depth + 1);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = node.get("items") {
                    for (i, item) in list.iter_mut().enumerate() {
                        self.prune_node(items, item, format!("{path}[{i}]"), out, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// `roots` and every definition they refer to, directly or not.
    pub fn closure<'a>(&'a self, roots: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = roots.into_iter().collect();
        while let Some(name) = todo.pop() {
            let Some((key, def)) = self.by_name.get_key_value(name) else {
                continue;
            };
            if !seen.insert(key.as_str()) {
                continue;
            }
            refs(def, &mut todo);
        }
        seen
    }
}

/// The names every `$ref` under `v` points at.
fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.rsplit('/').next() {
                            out.push(name);
                        }
                    }
                    _ => refs(child, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_carries_the_extensions() {
        let d = definitions();
        assert!(d.by_name.len() > 700, "{}", d.by_name.len());
        let name = d.name_of("apps", "v1", "StatefulSet").unwrap();
        assert_eq!(name, "io.k8s.api.apps.v1.StatefulSet");
        let containers = &d.get("io.k8s.api.core.v1.PodSpec").unwrap()["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(
            containers["items"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.Container"
        );
        assert_eq!(
            d.name_of("apiregistration.k8s.io", "v1", "APIService"),
            Some("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService")
        );
        let closure = d.closure(["io.k8s.api.apps.v1.StatefulSet"]);
        assert!(closure.contains("io.k8s.api.core.v1.Container"));
        assert!(closure.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!closure.contains("io.k8s.api.batch.v1.Job"));
    }
}
