//! `/openapi/v3` and `/openapi/v2` documents built from the registered resources' schemas.
//!
//! Shaped like the real server's so that kubectl works against them: `kubectl explain` finds the
//! schema by its `x-kubernetes-group-version-kind`, and kubectl's "does the server validate
//! fields?" check finds the `fieldValidation` query parameter on the PATCH operation of the kind
//! (then it leaves validation to the server instead of downloading swagger 2.0 protobuf).
mod meta;
mod operations;
mod proto_v2;
mod resolve;

use serde_json::{Map, Value, json};

use meta::meta_schemas;
use operations::resource_paths;
pub use resolve::resolved_kind_schema;

/// What the OpenAPI builders need to know about one served resource version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSchema {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The version's openAPIV3Schema; `None` for kinds registered without one (stored as free-form objects).
    pub schema: Option<Value>,
    /// The built-in definition of the kind ([`crate::builtin_schemas`]), served instead of `schema`.
    pub builtin: Option<String>,
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const OWNER_REFERENCE: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference";
const MANAGED_FIELDS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers \
should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: \
https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may \
infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: \
https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: \
https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DOC: &str = "Standard list metadata. More info: \
https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

#[derive(Clone, Copy, PartialEq)]
enum Format {
    V2,
    V3,
}

impl Format {
    fn reference(self, name: &str) -> Value {
        match self {
            Format::V2 => json!({"$ref": format!("#/definitions/{name}")}),
            Format::V3 => json!({"$ref": format!("#/components/schemas/{name}")}),
        }
    }

    /// A property that points at a named schema with its own description: v3 wraps the ref in
    /// `allOf` (a `$ref` may not have siblings), v2 keeps the bare ref.
    fn described_ref(self, name: &str, description: &str) -> Value {
        match self {
            Format::V2 => self.reference(name),
            Format::V3 => json!({"description": description, "allOf": [self.reference(name)]}),
        }
    }
}

/// The group-version path key: `api/v1` for the core group, `apis/<g>/<v>` otherwise.
fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The schema name the real server uses: `io.k8s.api.<pkg>.<v>.<Kind>` for built-in groups,
/// reversed group for everything else (`stable.example.com` → `com.example.stable.v1.CronTab`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let prefix = match group {
        "" => "io.k8s.api.core".to_string(),
        "apiextensions.k8s.io" => {
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".to_string()
        }
        g if !g.contains('.') => format!("io.k8s.api.{g}"),
        g if g.ends_with(".k8s.io") => format!("io.k8s.api.{}", g.split('.').next().unwrap_or(g)),
        g => g.split('.').rev().collect::<Vec<_>>().join("."),
    };
    format!("{prefix}.{version}.{kind}")
}

/// A stable short hash of a document, for `?hash=` (clients treat it as an opaque cache key).
fn hash_of(doc: &Value) -> String {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    format!("{:016X}", kube_codegen_crd::shard::fnv1a64(&bytes))
}

/// `GET /openapi/v3`: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, "apis/<g>/<v>": ...}}`.
pub fn v3_index(resources: &[ResourceSchema]) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(&str, &str)> = resources
        .iter()
        .map(|r| (r.group.as_str(), r.version.as_str()))
        .collect();
    gvs.sort();
    gvs.dedup();
    for (g, v) in gvs {
        if let Some(doc) = cached_group_version(g, v, resources) {
            let key = gv_key(g, v);
            let url = format!("/openapi/v3/{key}?hash={}", doc.hash);
            paths.insert(key, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/apis/<group>/<version>` (or `api/v1` for the core group, `group == ""`).
/// Returns `None` when no resource is served in that group/version.
pub fn v3_group_version(group: &str, version: &str, resources: &[ResourceSchema]) -> Option<Value> {
    cached_group_version(group, version, resources).map(|d| d.doc.clone())
}

/// A built `/openapi/v3/<gv>` document and its `?hash=`.
struct GvDocument {
    doc: Value,
    hash: String,
    /// The whole swagger 2.0 document (megabytes with the built-ins): only the latest is kept.
    v2: bool,
}

/// Documents built so far (`/openapi/v3/<gv>` and `/openapi/v2`), by a fingerprint of what
/// they were built from: a built-in group's
/// document is large (`api/v1` is 600 kB) and the index hashes every one of them, so every
/// `kubectl` invocation would otherwise rebuild them all. Shared by the servers of a process
/// (the fingerprint tells their registries apart); emptied when it grows past a bound.
static GV_DOCUMENTS: std::sync::LazyLock<
    parking_lot::Mutex<std::collections::HashMap<u64, std::sync::Arc<GvDocument>>>,
> = std::sync::LazyLock::new(Default::default);

/// How many documents [`GV_DOCUMENTS`] keeps before it starts over.
const GV_DOCUMENTS_MAX: usize = 256;

fn cached_group_version(
    group: &str,
    version: &str,
    resources: &[ResourceSchema],
) -> Option<std::sync::Arc<GvDocument>> {
    let served: Vec<&ResourceSchema> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    Some(cached(Format::V3, &served, || {
        let (paths, schemas) = build(&served, Format::V3);
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        })
    }))
}

/// The document of format `f` built from `served`, from [`GV_DOCUMENTS`] when it was built
/// before (the key is a fingerprint of the format and every input the builders read).
fn cached(
    f: Format,
    served: &[&ResourceSchema],
    build_doc: impl FnOnce() -> Value,
) -> std::sync::Arc<GvDocument> {
    let mut key = vec![u8::from(f == Format::V3)];
    for r in served {
        key.extend_from_slice(
            format!(
                "{}|{}|{}|{}|{}|{}|{:?}|",
                r.group, r.version, r.kind, r.list_kind, r.plural, r.namespaced, r.builtin
            )
            .as_bytes(),
        );
        if let Some(schema) = &r.schema {
            key.extend(serde_json::to_vec(schema).unwrap_or_default());
        }
        key.push(0);
    }
    let key = kube_codegen_crd::shard::fnv1a64(&key);
    if let Some(doc) = GV_DOCUMENTS.lock().get(&key) {
        return doc.clone();
    }
    let doc = build_doc();
    let hash = hash_of(&doc);
    let v2 = f == Format::V2;
    let built = std::sync::Arc::new(GvDocument { doc, hash, v2 });
    let mut cache = GV_DOCUMENTS.lock();
    if cache.len() >= GV_DOCUMENTS_MAX {
        cache.clear();
    }
    if v2 {
        cache.retain(|_, d| !d.v2);
    }
    cache.insert(key, built.clone());
    built
}

/// How `GET /openapi/v2` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Format {
    Json,
    /// gnostic `openapi.v2.Document` ([`proto_v2`]).
    Protobuf,
}

/// kube-openapi's negotiation for `/openapi/v2`: the first `Accept` range that is JSON or one
/// of the two protobuf spellings (`*` matching any type or subtype); no header is JSON; `None`
/// (a 406) when nothing matches.
pub fn v2_format(accept: &str) -> Option<V2Format> {
    if accept.trim().is_empty() {
        return Some(V2Format::Json);
    }
    for range in accept.split(',') {
        let media = range.split(';').next().unwrap_or("").trim();
        let (t, sub) = media.split_once('/').unwrap_or((media, ""));
        if t != "application" && t != "*" {
            continue;
        }
        match sub {
            "json" | "*" => return Some(V2Format::Json),
            "com.github.proto-openapi.spec.v2@v1.0+protobuf"
            | "com.github.proto-openapi.spec.v2.v1.0+protobuf" => {
                return Some(V2Format::Protobuf);
            }
            _ => {}
        }
    }
    None
}

pub use proto_v2::{CONTENT_TYPE as V2_PROTOBUF, encode as v2_protobuf};

/// `GET /openapi/v2`: one swagger 2.0 document for everything.
pub fn v2(resources: &[ResourceSchema]) -> Value {
    let all: Vec<&ResourceSchema> = resources.iter().collect();
    cached(Format::V2, &all, || {
        let (paths, definitions) = build(&all, Format::V2);
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": paths,
            "definitions": definitions,
        })
    })
    .doc
    .clone()
}

fn build(resources: &[&ResourceSchema], f: Format) -> (Map<String, Value>, Map<String, Value>) {
    let mut paths = Map::new();
    let mut schemas = meta_schemas(f);
    let defs = crate::builtin_schemas::definitions();
    let mut builtin_roots: Vec<&str> = Vec::new();
    for r in resources {
        if let Some(name) = &r.builtin {
            let list_name = defs
                .name_of(&r.group, &r.version, &r.list_kind)
                .map(str::to_string)
                .unwrap_or_else(|| definition_name(&r.group, &r.version, &r.list_kind));
            builtin_roots.push(name);
            resource_paths(r, name, &list_name, f, &mut paths);
            if let Some((key, _)) = defs.by_name.get_key_value(&list_name) {
                builtin_roots.push(key);
            }
            continue;
        }
        let name = definition_name(&r.group, &r.version, &r.kind);
        let list_name = definition_name(&r.group, &r.version, &r.list_kind);
        schemas.insert(name.clone(), object_schema(r, f));
        schemas.insert(list_name.clone(), list_schema(r, &name, f));
        resource_paths(r, &name, &list_name, f, &mut paths);
    }
    // The built-in kinds' definitions and everything they refer to (ObjectMeta among them, in
    // full, replacing the trimmed one).
    for name in defs.closure(builtin_roots) {
        if let Some(def) = defs.get(name) {
            let mut def = def.clone();
            if f == Format::V3 {
                to_v3(&mut def);
            }
            schemas.insert(name.to_string(), def);
        }
    }
    (paths, schemas)
}

/// A v2 definition as v3 spells it: refs under `#/components/schemas/`, and a `$ref` with
/// siblings (a description) wrapped in `allOf` as kube-apiserver writes it (a v3 `$ref` may not
/// have siblings).
fn to_v3(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                let name = r.rsplit('/').next().unwrap_or_default().to_string();
                let reference = Format::V3.reference(&name);
                if m.len() == 1 {
                    *v = reference;
                } else {
                    m.remove("$ref");
                    m.insert("allOf".into(), Value::Array(vec![reference]));
                }
                return;
            }
            for (k, child) in m.iter_mut() {
                if k != "x-kubernetes-group-version-kind" {
                    to_v3(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_v3),
        _ => {}
    }
}

fn gvk_list(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// The kind's schema: the CRD schema with apiVersion/kind documented and metadata pointing at ObjectMeta.
fn object_schema(r: &ResourceSchema, f: Format) -> Value {
    let mut m = match &r.schema {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            m
        }
    };
    if f == Format::V2 {
        strip_for_v2(&mut m, 0);
    }
    m.entry("type").or_insert_with(|| json!("object"));
    let props = m.entry("properties").or_insert_with(|| json!({}));
    if !props.is_object() {
        *props = json!({});
    }
    if let Value::Object(props) = props {
        props
            .entry("apiVersion")
            .or_insert_with(|| json!({"description": API_VERSION_DOC, "type": "string"}));
        props
            .entry("kind")
            .or_insert_with(|| json!({"description": KIND_DOC, "type": "string"}));
        props.insert(
            "metadata".into(),
            f.described_ref(OBJECT_META, METADATA_DOC),
        );
    }
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk_list(&r.group, &r.version, &r.kind),
    );
    Value::Object(m)
}

/// Swagger 2.0 has no `nullable`, `anyOf`, `oneOf` or `not`; the real server drops them from v2.
fn strip_for_v2(m: &mut Map<String, Value>, depth: usize) {
    if depth > crate::schema::MAX_DEPTH {
        return;
    }
    for k in ["nullable", "anyOf", "oneOf", "not"] {
        m.remove(k);
    }
    let mut children: Vec<&mut Value> = Vec::new();
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        children.extend(props.values_mut());
    }
    for v in children {
        if let Value::Object(c) = v {
            strip_for_v2(c, depth + 1);
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(Value::Object(c)) = m.get_mut(k) {
            strip_for_v2(c, depth + 1);
        }
    }
    if let Some(Value::Array(all)) = m.get_mut("allOf") {
        for v in all {
            if let Value::Object(c) = v {
                strip_for_v2(c, depth + 1);
            }
        }
    }
}

fn list_schema(r: &ResourceSchema, item: &str, f: Format) -> Value {
    json!({
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
                "type": "array",
                "items": f.reference(item),
            },
            "metadata": f.described_ref(LIST_META, LIST_METADATA_DOC),
        },
        "x-kubernetes-group-version-kind": gvk_list(&r.group, &r.version, &r.list_kind),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespaced v1 kind with the usual `<Kind>List` list kind.
    fn namespaced_v1(
        group: &str,
        kind: &str,
        plural: &str,
        schema: Option<Value>,
    ) -> ResourceSchema {
        ResourceSchema {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            plural: plural.into(),
            namespaced: true,
            schema,
            builtin: None,
        }
    }

    fn crontab() -> ResourceSchema {
        let schema = json!({
            "type": "object",
            "description": "A cron job.",
            "properties": {"spec": {"type": "object", "properties": {
                "cronSpec": {"type": "string", "description": "The schedule."},
                "note": {"type": "string", "nullable": true}
            }}}
        });
        namespaced_v1("stable.example.com", "CronTab", "crontabs", Some(schema))
    }

    fn configmap() -> ResourceSchema {
        namespaced_v1("", "ConfigMap", "configmaps", None)
    }

    #[test]
    fn names_follow_the_real_server() {
        for (group, kind, want) in [
            (
                "stable.example.com",
                "CronTab",
                "com.example.stable.v1.CronTab",
            ),
            ("", "ConfigMap", "io.k8s.api.core.v1.ConfigMap"),
            ("apps", "Deployment", "io.k8s.api.apps.v1.Deployment"),
            ("events.k8s.io", "Event", "io.k8s.api.events.v1.Event"),
        ] {
            assert_eq!(definition_name(group, "v1", kind), want);
        }
    }

    #[test]
    fn index_lists_group_versions_with_stable_hashes() {
        let rs = [crontab(), configmap()];
        let idx = v3_index(&rs);
        let paths = idx["paths"].as_object().unwrap();
        assert_eq!(paths.len(), 2);
        let url = paths["apis/stable.example.com/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(
            url.starts_with("/openapi/v3/apis/stable.example.com/v1?hash="),
            "{url}"
        );
        assert!(
            paths["api/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/api/v1?hash=")
        );
        assert_eq!(v3_index(&rs), idx, "same input, same hashes");
        let mut changed = crontab();
        changed.schema = Some(json!({"type": "object"}));
        let other = v3_index(&[changed, configmap()]);
        assert_ne!(
            other["paths"]["apis/stable.example.com/v1"],
            idx["paths"]["apis/stable.example.com/v1"]
        );
        assert_eq!(other["paths"]["api/v1"], idx["paths"]["api/v1"]);
    }

    #[test]
    fn group_version_document_carries_the_schema() {
        let doc = v3_group_version("stable.example.com", "v1", &[crontab(), configmap()]).unwrap();
        assert_eq!(doc["openapi"], "3.0.0");
        let s = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(s["description"], "A cron job.");
        assert_eq!(
            s["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        assert_eq!(
            s["properties"]["spec"]["properties"]["cronSpec"]["description"],
            "The schedule."
        );
        assert_eq!(
            s["properties"]["spec"]["properties"]["note"]["nullable"],
            true
        );
        assert_eq!(s["properties"]["apiVersion"]["type"], "string");
        assert_eq!(
            s["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["name"].is_object());
        let list = &doc["components"]["schemas"]["com.example.stable.v1.CronTabList"];
        assert_eq!(
            list["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTab"
        );
        assert!(
            doc["components"]["schemas"]
                .get("io.k8s.api.core.v1.ConfigMap")
                .is_none(),
            "other groups stay out"
        );
        assert!(v3_group_version("nothing.example.com", "v1", &[crontab()]).is_none());
    }

    #[test]
    fn patch_operation_advertises_field_validation() {
        let doc = v3_group_version("stable.example.com", "v1", &[crontab()]).unwrap();
        let item =
            &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        let patch = &item["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "stable.example.com", "kind": "CronTab", "version": "v1"})
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let params = patch["parameters"].as_array().unwrap();
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        let content = patch["requestBody"]["content"].as_object().unwrap();
        assert!(content.contains_key("application/merge-patch+json"));
        assert!(!content.contains_key("application/strategic-merge-patch+json"));
        assert!(
            doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["post"]
                .is_object()
        );
        assert!(doc["paths"]["/apis/stable.example.com/v1/crontabs"]["get"].is_object());
        assert_eq!(
            patch["operationId"],
            "patchStableExampleComV1NamespacedCronTab"
        );
    }

    #[test]
    fn kinds_without_schema_are_permissive_and_core_paths_use_api() {
        let doc = v3_group_version("", "v1", &[configmap()]).unwrap();
        let s = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(s["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(s["type"], "object");
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
    }

    #[test]
    fn swagger_v2_uses_definitions() {
        let doc = v2(&[crontab(), configmap()]);
        assert_eq!(doc["swagger"], "2.0");
        let s = &doc["definitions"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            s["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(
            s["properties"]["spec"]["properties"]["note"]
                .get("nullable")
                .is_none()
        );
        assert!(doc["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object());
        let patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
            ["patch"];
        let params = patch["parameters"].as_array().unwrap();
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "body" && p["in"] == "body")
        );
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["type"] == "string")
        );
    }
}
