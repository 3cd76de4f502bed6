//! `/openapi/v3` and `/openapi/v2` documents built from the registered resources' schemas.
//!
//! Shaped like the real server's so that kubectl works against them: `kubectl explain` finds the
//! schema by its `x-kubernetes-group-version-kind`, and kubectl's "does the server validate
//! fields?" check finds the `fieldValidation` query parameter on the PATCH operation of the kind
//! (then it leaves validation to the server instead of downloading swagger 2.0 protobuf).
use serde_json::{Map, Value, json};

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
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
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
        if let Some(doc) = v3_group_version(g, v, resources) {
            let key = gv_key(g, v);
            let url = format!("/openapi/v3/{key}?hash={}", hash_of(&doc));
            paths.insert(key, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/apis/<group>/<version>` (or `api/v1` for the core group, `group == ""`).
/// Returns `None` when no resource is served in that group/version.
pub fn v3_group_version(group: &str, version: &str, resources: &[ResourceSchema]) -> Option<Value> {
    let served: Vec<&ResourceSchema> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let (paths, schemas) = build(&served, Format::V3);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// `GET /openapi/v2`: one swagger 2.0 document for everything.
pub fn v2(resources: &[ResourceSchema]) -> Value {
    let all: Vec<&ResourceSchema> = resources.iter().collect();
    let (paths, definitions) = build(&all, Format::V2);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "definitions": definitions,
    })
}

fn build(resources: &[&ResourceSchema], f: Format) -> (Map<String, Value>, Map<String, Value>) {
    let mut paths = Map::new();
    let mut schemas = meta_schemas(f);
    for r in resources {
        let name = definition_name(&r.group, &r.version, &r.kind);
        let list_name = definition_name(&r.group, &r.version, &r.list_kind);
        schemas.insert(name.clone(), object_schema(r, f));
        schemas.insert(list_name.clone(), list_schema(r, &name, f));
        resource_paths(r, &name, &list_name, f, &mut paths);
    }
    (paths, schemas)
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

fn meta_schemas(f: Format) -> Map<String, Value> {
    let string = |d: &str| json!({"description": d, "type": "string"});
    let string_map = |d: &str| json!({"description": d, "type": "object", "additionalProperties": {"type": "string", "default": ""}});
    let time = |d: &str| json!({"description": d, "type": "string", "format": "date-time"});
    let object_meta = json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "annotations": string_map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata."),
            "creationTimestamp": time("CreationTimestamp is a timestamp representing the server time when this object was created."),
            "deletionGracePeriodSeconds": {"description": "Number of seconds allowed for this object to gracefully terminate before it will be removed from the system.", "type": "integer", "format": "int64"},
            "deletionTimestamp": time("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
            "finalizers": {"description": "Must be empty before the object is deleted from the registry.", "type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "generateName": string("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
            "generation": {"description": "A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.", "type": "integer", "format": "int64"},
            "labels": string_map("Map of string keys and values that can be used to organize and categorize (scope and select) objects."),
            "managedFields": {"description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.", "type": "array", "items": f.reference(MANAGED_FIELDS)},
            "name": string("Name must be unique within a namespace. Is required when creating resources. Cannot be updated."),
            "namespace": string("Namespace defines the space within which each name must be unique. Cannot be updated."),
            "ownerReferences": {"description": "List of objects depended by this object.", "type": "array", "items": f.reference(OWNER_REFERENCE), "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
            "resourceVersion": string("An opaque value that represents the internal version of this object. Populated by the system. Read-only."),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
            "uid": string("UID is the unique in time and space value for this object. Populated by the system. Read-only."),
        },
    });
    let owner_reference = json!({
        "description": "OwnerReference contains enough information to let you identify an owning object.",
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": string("API version of the referent."),
            "blockOwnerDeletion": {"description": "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.", "type": "boolean"},
            "controller": {"description": "If true, this reference points to the managing controller.", "type": "boolean"},
            "kind": string("Kind of the referent."),
            "name": string("Name of the referent."),
            "uid": string("UID of the referent."),
        },
    });
    let managed_fields = json!({
        "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
        "type": "object",
        "properties": {
            "apiVersion": string("APIVersion defines the version of this resource that this field set applies to."),
            "fieldsType": string("FieldsType is the discriminator for the different fields format and version."),
            "fieldsV1": {"description": "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type.", "type": "object"},
            "manager": string("Manager is an identifier of the workflow managing these fields."),
            "operation": string("Operation is the type of operation which lead to this ManagedFieldsEntry being created."),
            "subresource": string("Subresource is the name of the subresource used to update that object."),
            "time": time("Time is the timestamp of when the ManagedFields entry was added."),
        },
    });
    let list_meta = json!({
        "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.",
        "type": "object",
        "properties": {
            "continue": string("continue may be set if the user set a limit on the number of items returned."),
            "remainingItemCount": {"description": "remainingItemCount is the number of subsequent items in the list which are not included in this list response.", "type": "integer", "format": "int64"},
            "resourceVersion": string("String that identifies the server's internal version of this object."),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
        },
    });
    let status = json!({
        "description": "Status is a return value for calls that don't return other objects.",
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "code": {"description": "Suggested HTTP return code for this status, 0 if not set.", "type": "integer", "format": "int32"},
            "details": {"description": "Extended data associated with the reason.", "type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "kind": {"description": KIND_DOC, "type": "string"},
            "message": string("A human-readable description of the status of this operation."),
            "metadata": f.described_ref(LIST_META, LIST_METADATA_DOC),
            "reason": string("A machine-readable description of why this operation is in the \"Failure\" status."),
            "status": string("Status of the operation. One of: \"Success\" or \"Failure\"."),
        },
        "x-kubernetes-group-version-kind": gvk_list("", "v1", "Status"),
    });
    let delete_options = json!({
        "description": "DeleteOptions may be provided when deleting an API object.",
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "dryRun": {"description": "When present, indicates that modifications should not be persisted.", "type": "array", "items": {"type": "string", "default": ""}},
            "gracePeriodSeconds": {"description": "The duration in seconds before the object should be deleted.", "type": "integer", "format": "int64"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "propagationPolicy": string("Whether and how garbage collection will be performed."),
        },
    });
    let patch = json!({
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        "type": "object",
    });
    let mut m = Map::new();
    m.insert(OBJECT_META.into(), object_meta);
    m.insert(OWNER_REFERENCE.into(), owner_reference);
    m.insert(MANAGED_FIELDS.into(), managed_fields);
    m.insert(LIST_META.into(), list_meta);
    m.insert(STATUS.into(), status);
    m.insert(DELETE_OPTIONS.into(), delete_options);
    m.insert(PATCH.into(), patch);
    m
}

/// Query parameter of an operation.
fn query_param(f: Format, name: &str, description: &str, type_: &str) -> Value {
    match f {
        Format::V3 => {
            json!({"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": true}})
        }
        Format::V2 => {
            json!({"name": name, "in": "query", "description": description, "type": type_, "uniqueItems": true})
        }
    }
}

fn path_param(f: Format, name: &str, description: &str) -> Value {
    match f {
        Format::V3 => {
            json!({"name": name, "in": "path", "description": description, "required": true, "schema": {"type": "string", "uniqueItems": true}})
        }
        Format::V2 => {
            json!({"name": name, "in": "path", "description": description, "required": true, "type": "string", "uniqueItems": true})
        }
    }
}

const DRY_RUN_DOC: &str = "When present, indicates that modifications should not be persisted. An invalid or \
unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values \
are: - All: all dry run stages will be processed";
const FIELD_MANAGER_DOC: &str =
    "fieldManager is a name associated with the actor or entity that is making these changes.";
const FIELD_VALIDATION_DOC: &str = "fieldValidation instructs the server on how to handle objects in the request \
(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown \
fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder \
encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is \
dropped from the object, and for each duplicate field that is encountered. - Strict: This will fail the request with a \
BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present.";

fn write_params(f: Format) -> Vec<Value> {
    vec![
        query_param(f, "dryRun", DRY_RUN_DOC, "string"),
        query_param(f, "fieldManager", FIELD_MANAGER_DOC, "string"),
        query_param(f, "fieldValidation", FIELD_VALIDATION_DOC, "string"),
    ]
}

fn list_params(f: Format) -> Vec<Value> {
    [
        ("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".", "boolean"),
        ("continue", "The continue option should be set when retrieving more results from the server.", "string"),
        ("fieldSelector", "A selector to restrict the list of returned objects by their fields.", "string"),
        ("labelSelector", "A selector to restrict the list of returned objects by their labels.", "string"),
        ("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
        ("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from.", "string"),
        ("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls.", "string"),
        ("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`.", "boolean"),
        ("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
        ("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.", "boolean"),
    ]
    .into_iter()
    .map(|(n, d, t)| query_param(f, n, d, t))
    .collect()
}

/// The operationId suffix the real server uses, e.g. `StableExampleComV1NamespacedCronTab`.
fn op_suffix(r: &ResourceSchema, namespaced: bool) -> String {
    let camel = |s: &str| -> String {
        s.split(['.', '-'])
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut c = p.chars();
                c.next()
                    .map(|h| h.to_uppercase().chain(c).collect::<String>())
                    .unwrap_or_default()
            })
            .collect()
    };
    let group = if r.group.is_empty() {
        "Core".to_string()
    } else {
        camel(&r.group)
    };
    let scope = if namespaced { "Namespaced" } else { "" };
    format!("{group}{}{scope}{}", camel(&r.version), r.kind)
}

struct OpSpec<'a> {
    verb: &'a str,
    action: &'a str,
    description: String,
    params: Vec<Value>,
    body: Option<(&'a str, Vec<&'a str>)>,
    response: &'a str,
    kind: &'a str,
}

fn operation(r: &ResourceSchema, f: Format, op: OpSpec<'_>) -> Value {
    let response_schema = f.reference(op.response);
    let mut o = json!({
        "description": op.description,
        "operationId": op.verb,
        "tags": [if r.group.is_empty() { format!("core_{}", r.version) } else { format!("{}_{}", r.group.replace('.', ""), r.version) }],
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": {"group": r.group, "kind": op.kind, "version": r.version},
    });
    let mut params = op.params;
    match f {
        Format::V3 => {
            if let Some((schema, types)) = &op.body {
                let content: Map<String, Value> = types
                    .iter()
                    .map(|t| (t.to_string(), json!({"schema": f.reference(schema)})))
                    .collect();
                o["requestBody"] = json!({"content": content, "required": true});
            }
            o["responses"] = json!({
                "200": {"description": "OK", "content": {"application/json": {"schema": response_schema.clone()}, "application/yaml": {"schema": response_schema}}},
                "401": {"description": "Unauthorized"},
            });
        }
        Format::V2 => {
            if let Some((schema, types)) = &op.body {
                params.push(json!({"name": "body", "in": "body", "required": true, "schema": f.reference(schema)}));
                o["consumes"] = json!(types);
            }
            o["produces"] = json!(["application/json", "application/yaml"]);
            o["schemes"] = json!(["https"]);
            o["responses"] = json!({"200": {"description": "OK", "schema": response_schema}, "401": {"description": "Unauthorized"}});
        }
    }
    o["parameters"] = Value::Array(params);
    o
}

fn resource_paths(
    r: &ResourceSchema,
    name: &str,
    list_name: &str,
    f: Format,
    paths: &mut Map<String, Value>,
) {
    let root = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    let collection = if r.namespaced {
        format!("{root}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{root}/{}", r.plural)
    };
    let suffix = op_suffix(r, r.namespaced);
    let mut scope_params = Vec::new();
    if r.namespaced {
        scope_params.push(path_param(
            f,
            "namespace",
            "object name and auth scope, such as for teams and projects",
        ));
    }
    let mut patch_types = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if r.schema.is_none() {
        // Built-in kinds also take strategic merge patches (custom resources answer 415).
        patch_types.push("application/strategic-merge-patch+json");
    }
    let json_types = vec!["application/json", "application/yaml"];

    let mut coll = Map::new();
    coll.insert(
        "get".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("list{suffix}"),
                action: "list",
                description: format!("list or watch objects of kind {}", r.kind),
                params: list_params(f),
                body: None,
                response: list_name,
                kind: &r.kind,
            },
        ),
    );
    coll.insert(
        "post".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("create{suffix}"),
                action: "post",
                description: format!("create a {}", r.kind),
                params: write_params(f),
                body: Some((name, json_types.clone())),
                response: name,
                kind: &r.kind,
            },
        ),
    );
    coll.insert(
        "delete".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("deletecollection{suffix}"),
                action: "deletecollection",
                description: format!("delete collection of {}", r.kind),
                params: list_params(f),
                body: Some((DELETE_OPTIONS, json_types.clone())),
                response: STATUS,
                kind: &r.kind,
            },
        ),
    );
    coll.insert("parameters".into(), Value::Array(scope_params.clone()));
    paths.insert(collection.clone(), Value::Object(coll));

    let mut item_params = vec![path_param(f, "name", &format!("name of the {}", r.kind))];
    item_params.extend(scope_params);
    let mut item = Map::new();
    item.insert(
        "get".into(),
        operation(r, f, OpSpec {
            verb: &format!("read{suffix}"),
            action: "get",
            description: format!("read the specified {}", r.kind),
            params: vec![query_param(f, "resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from.", "string")],
            body: None,
            response: name,
            kind: &r.kind,
        }),
    );
    item.insert(
        "put".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("replace{suffix}"),
                action: "put",
                description: format!("replace the specified {}", r.kind),
                params: write_params(f),
                body: Some((name, json_types.clone())),
                response: name,
                kind: &r.kind,
            },
        ),
    );
    let mut patch_params = write_params(f);
    patch_params.push(query_param(
        f,
        "force",
        "Force is going to \"force\" Apply requests.",
        "boolean",
    ));
    item.insert(
        "patch".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("patch{suffix}"),
                action: "patch",
                description: format!("partially update the specified {}", r.kind),
                params: patch_params,
                body: Some((PATCH, patch_types)),
                response: name,
                kind: &r.kind,
            },
        ),
    );
    item.insert(
        "delete".into(),
        operation(
            r,
            f,
            OpSpec {
                verb: &format!("delete{suffix}"),
                action: "delete",
                description: format!("delete a {}", r.kind),
                params: vec![query_param(f, "dryRun", DRY_RUN_DOC, "string")],
                body: Some((DELETE_OPTIONS, json_types)),
                response: STATUS,
                kind: &r.kind,
            },
        ),
    );
    item.insert("parameters".into(), Value::Array(item_params));
    paths.insert(format!("{collection}/{{name}}"), Value::Object(item));

    if r.namespaced {
        let mut all = Map::new();
        all.insert(
            "get".into(),
            operation(
                r,
                f,
                OpSpec {
                    verb: &format!("list{}", op_suffix(r, false)),
                    action: "list",
                    description: format!("list or watch objects of kind {}", r.kind),
                    params: list_params(f),
                    body: None,
                    response: list_name,
                    kind: &r.kind,
                },
            ),
        );
        paths.insert(format!("{root}/{}", r.plural), Value::Object(all));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crontab() -> ResourceSchema {
        ResourceSchema {
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "CronTab".into(),
            list_kind: "CronTabList".into(),
            plural: "crontabs".into(),
            namespaced: true,
            schema: Some(json!({
                "type": "object",
                "description": "A cron job.",
                "properties": {"spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string", "description": "The schedule."},
                    "note": {"type": "string", "nullable": true}
                }}}
            })),
        }
    }

    fn configmap() -> ResourceSchema {
        ResourceSchema {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            plural: "configmaps".into(),
            namespaced: true,
            schema: None,
        }
    }

    #[test]
    fn names_follow_the_real_server() {
        assert_eq!(
            definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(
            definition_name("", "v1", "ConfigMap"),
            "io.k8s.api.core.v1.ConfigMap"
        );
        assert_eq!(
            definition_name("apps", "v1", "Deployment"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            definition_name("events.k8s.io", "v1", "Event"),
            "io.k8s.api.events.v1.Event"
        );
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
