//! What server-side apply needs to know of a type: how each list merges
//! (`x-kubernetes-list-type` atomic, set, or map keyed by `x-kubernetes-list-map-keys`),
//! whether a map is atomic (`x-kubernetes-map-type`), and which keys are declared fields.
//! Custom resources take it from their schema; built-in kinds from their Kubernetes 1.35 OpenAPI
//! definitions ([`crate::builtin_schemas`]), whose `$ref`s are followed as the walk reaches them
//! (so recursive definitions such as `JSONSchemaProps` cost nothing until an object nests them).
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::registry::Resource;

/// How a list merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced wholesale, owned as one field (also the default, as for structural schemas).
    Atomic,
    /// Scalars merged by value.
    Set,
    /// Objects merged by these key fields.
    Map(Vec<String>),
}

/// A schema node (or none, where the schema says nothing). At the root, `metadata` is
/// `ObjectMeta` whatever the schema says.
#[derive(Debug, Clone, Copy)]
pub struct Shape<'a> {
    node: Option<&'a Value>,
    root: bool,
}

impl<'a> Shape<'a> {
    /// The shape of a whole object with this schema.
    pub fn root(schema: Option<&'a Value>) -> Shape<'a> {
        Shape {
            node: schema,
            root: true,
        }
    }

    fn inner(node: Option<&'a Value>) -> Shape<'a> {
        Shape {
            node: node.map(resolve),
            root: false,
        }
    }

    fn get(self, key: &str) -> Option<&'a Value> {
        self.node?.as_object()?.get(key)
    }

    /// The schema of `key` inside this object node, and whether `key` is a declared field
    /// (a map entry under `additionalProperties` is not; it is owned as a node of its own).
    pub fn child(self, key: &str) -> (Shape<'a>, bool) {
        if self.root && key == "metadata" {
            return (Shape::inner(Some(&OBJECT_META)), true);
        }
        if let Some(p) = self.get("properties").and_then(|p| p.get(key)) {
            return (Shape::inner(Some(p)), true);
        }
        match self.get("additionalProperties") {
            Some(v @ Value::Object(_)) => (Shape::inner(Some(v)), false),
            Some(Value::Bool(true)) => (Shape::inner(None), false),
            // Kept unknown fields are SMD's deduced type: a map of undeclared entries whose
            // values are deduced again (lists atomic), so every key at any depth is a field.
            _ if self.preserves_unknown() => (Shape::inner(Some(&DEDUCED)), false),
            _ => (Shape::inner(None), true),
        }
    }

    fn preserves_unknown(self) -> bool {
        self.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
    }

    /// Whether the schema says anything here.
    pub fn is_known(self) -> bool {
        self.node.is_some()
    }

    pub fn items(self) -> Shape<'a> {
        Shape::inner(self.get("items").filter(|v| v.is_object()))
    }

    pub fn list_type(self) -> ListType {
        match self.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                self.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        }
    }

    /// `x-kubernetes-map-type: atomic` (granular is the default).
    pub fn atomic_map(self) -> bool {
        self.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    }

    /// The default of the item field `key` (a list-map key the element may omit, as `protocol`).
    /// The built-in definitions carry no defaults: the ports keyed by a `protocol` (container
    /// and service ports) default it to `TCP`.
    pub fn item_default(self, key: &str) -> Option<&'a Value> {
        let items = self.items();
        let field = items.get("properties")?.get(key)?;
        match field.get("default").filter(|d| !d.is_null()) {
            Some(d) => Some(d),
            None if key == "protocol" && items.node.is_some_and(is_port_definition) => Some(&TCP),
            None => None,
        }
    }
}

/// The definitions of the built-in list-map items keyed by a defaulted `protocol`.
fn is_port_definition(node: &Value) -> bool {
    let defs = crate::builtin_schemas::definitions();
    [
        "io.k8s.api.core.v1.ContainerPort",
        "io.k8s.api.core.v1.ServicePort",
    ]
    .iter()
    .any(|n| defs.get(n).is_some_and(|d| std::ptr::eq(d, node)))
}

static TCP: LazyLock<Value> = LazyLock::new(|| json!("TCP"));

/// Follows `$ref`s (`#/definitions/<name>`) to the built-in definition they name.
fn resolve(mut node: &Value) -> &Value {
    // A ref chain is short (a definition is never a bare ref to another); the bound guards
    // against a malformed data file only.
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => match crate::builtin_schemas::definitions().resolve(r) {
                Some(def) => node = def,
                None => return node,
            },
            None => return node,
        }
    }
    node
}

/// The schema apply follows for `res` served as `version`: its structural schema, or for a
/// built-in kind its definition (none, for a kind registered without either: every list atomic).
pub fn schema_of<'r>(res: &'r Resource, version: &str) -> Option<&'r Value> {
    if let Some(s) = res.version(version).and_then(|v| v.schema.as_deref()) {
        return Some(s.schema());
    }
    if res.custom {
        return None;
    }
    let defs = crate::builtin_schemas::definitions();
    defs.get(defs.name_of(&res.group, version, &res.kind)?)
}

fn list_map(keys: &[&str], items: Value) -> Value {
    json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys, "items": items})
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// The shape of a value below `x-kubernetes-preserve-unknown-fields` (see [`Shape::child`]).
static DEDUCED: LazyLock<Value> =
    LazyLock::new(|| json!({"x-kubernetes-preserve-unknown-fields": true}));

static OBJECT_META: LazyLock<Value> = LazyLock::new(|| {
    object(json!({
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        // An owner reference is one atomic value (`+structType=atomic`).
        "ownerReferences": list_map(&["uid"], json!({"type": "object", "x-kubernetes-map-type": "atomic"})),
    }))
});

/// What a create is compared with: the kind's empty object as kube-apiserver encodes it. For a
/// `custom` resource (one with a structural schema) that is nothing (so a create adds `spec` itself, owned with a `.`); for a
/// built-in kind it is its Go type's zero value, whose fields without `omitempty` are there
/// (`null`, or `{}` for a struct), so a create owns those only through what it puts in them.
pub fn zero(res: &Resource, custom: bool) -> Value {
    if custom {
        return json!({});
    }
    let template =
        || json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}});
    let spec = match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => json!({"containers": null}),
        ("apps", "deployments") => {
            json!({"selector": null, "template": template(), "strategy": {}})
        }
        ("apps", "statefulsets" | "daemonsets") => {
            json!({"selector": null, "template": template(), "updateStrategy": {}})
        }
        ("apps", "replicasets") => json!({"selector": null, "template": template()}),
        ("batch", "jobs") => json!({"template": template()}),
        // Most other built-in kinds have a `spec` struct, or none (then nothing is compared with it).
        _ => json!({}),
    };
    json!({"metadata": {"creationTimestamp": null}, "spec": spec, "status": {}})
}
