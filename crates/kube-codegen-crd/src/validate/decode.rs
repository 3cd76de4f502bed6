//! Reading the document into the internal model the way the apiserver decodes, defaults and
//! converts it: wrong JSON types are reported (the server would refuse to decode them), unknown
//! fields become warnings (the server's default field validation), `null` reads as unset, and
//! every recursion is bounded.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Violation;
use super::model::*;
use super::path::Path;
use super::render::{forbidden, go_json, type_invalid};

/// Schemas nested deeper than this are not read (a violation says so).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;
/// JSON values (`default`, `example`, `enum` entries) nested deeper than this are not read.
pub(crate) const MAX_VALUE_DEPTH: usize = 256;

const META_KEYS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const SPEC_V1: &[&str] = &[
    "group",
    "names",
    "scope",
    "versions",
    "conversion",
    "preserveUnknownFields",
];
const SPEC_V1BETA1: &[&str] = &[
    "group",
    "version",
    "names",
    "scope",
    "validation",
    "subresources",
    "versions",
    "additionalPrinterColumns",
    "conversion",
    "preserveUnknownFields",
];
const NAMES: &[&str] = &[
    "plural",
    "singular",
    "shortNames",
    "kind",
    "listKind",
    "categories",
];
const VERSION_V1: &[&str] = &[
    "name",
    "served",
    "storage",
    "deprecated",
    "deprecationWarning",
    "schema",
    "subresources",
    "additionalPrinterColumns",
    "selectableFields",
];
const VERSION_V1BETA1: &[&str] = &[
    "name",
    "served",
    "storage",
    "deprecated",
    "deprecationWarning",
    "schema",
    "subresources",
    "additionalPrinterColumns",
];
const SCHEMA_KEYS_COMMON: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

/// Reads a document; collects what cannot be read.
pub(crate) struct Decoder {
    pub flavor: Flavor,
    pub violations: Vec<Violation>,
    pub warnings: Vec<String>,
}

fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => format!("number {}", super::render::go_number(n)),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// True if `v` nests deeper than `limit` (iterative: the input may be arbitrarily deep).
pub(crate) fn deeper_than(v: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        if d > limit {
            return true;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    false
}

/// A short rendering of a value of the wrong type (scalars in full, containers elided).
fn short(v: &Value) -> String {
    match v {
        Value::Array(_) => "[]interface {}{...}".into(),
        Value::Object(_) => "map[string]interface {}{...}".into(),
        other => go_json(other),
    }
}

impl Decoder {
    pub(crate) fn new(flavor: Flavor) -> Decoder {
        Decoder {
            flavor,
            violations: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn type_error(&mut self, path: &Path, v: &Value, go_type: &str) {
        let detail = format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            json_kind(v)
        );
        self.violations.push(Violation {
            cause: type_invalid(path, &short(v), &detail),
            structural: false,
        });
    }

    fn warn_unknown(&mut self, m: &Map<String, Value>, path: &Path, known: &[&str]) {
        let mut unknown: Vec<&String> = m.keys().filter(|k| !known.contains(&k.as_str())).collect();
        unknown.sort();
        for k in unknown {
            self.warnings
                .push(format!("unknown field \"{}\"", path.child(k)));
        }
    }

    /// An object (struct) at `path`, unknown keys warned; `None` when null, absent or wrong.
    fn object<'a>(
        &mut self,
        v: Option<&'a Value>,
        path: &Path,
        go_type: &str,
        known: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        match v? {
            Value::Null => None,
            Value::Object(m) => {
                self.warn_unknown(m, path, known);
                Some(m)
            }
            other => {
                self.type_error(path, other, go_type);
                None
            }
        }
    }

    fn string(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> String {
        self.opt_string(m, key, path).unwrap_or_default()
    }

    fn opt_string(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> Option<String> {
        match m.get(key)? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => {
                self.type_error(&path.child(key), other, "string");
                None
            }
        }
    }

    fn boolean(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> bool {
        self.opt_bool(m, key, path).unwrap_or(false)
    }

    fn opt_bool(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> Option<bool> {
        match m.get(key)? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            other => {
                self.type_error(&path.child(key), other, "bool");
                None
            }
        }
    }

    fn int(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        path: &Path,
        go_type: &str,
    ) -> Option<i64> {
        match m.get(key)? {
            Value::Null => None,
            Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
            other => {
                self.type_error(&path.child(key), other, go_type);
                None
            }
        }
    }

    fn float(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> Option<f64> {
        match m.get(key)? {
            Value::Null => None,
            Value::Number(n) => n.as_f64(),
            other => {
                self.type_error(&path.child(key), other, "float64");
                None
            }
        }
    }

    fn strings(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> Vec<String> {
        let p = path.child(key);
        match m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match x {
                        Value::String(s) => out.push(s.clone()),
                        Value::Null => out.push(String::new()),
                        other => self.type_error(&p.index(i), other, "string"),
                    }
                }
                out
            }
            Some(other) => {
                self.type_error(&p, other, "[]string");
                Vec::new()
            }
        }
    }

    fn string_map(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        path: &Path,
    ) -> Vec<(String, String)> {
        let p = path.child(key);
        match m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(o)) => {
                let mut out = Vec::with_capacity(o.len());
                for (k, x) in o {
                    match x {
                        Value::String(s) => out.push((k.clone(), s.clone())),
                        Value::Null => out.push((k.clone(), String::new())),
                        other => self.type_error(&p.key(k), other, "string"),
                    }
                }
                out.sort();
                out
            }
            Some(other) => {
                self.type_error(&p, other, "map[string]string");
                Vec::new()
            }
        }
    }

    /// An arbitrary JSON value (`default`, `example`), `null` reads as unset.
    fn json(&mut self, m: &Map<String, Value>, key: &str, path: &Path) -> Option<Value> {
        let v = m.get(key)?;
        if v.is_null() {
            return None;
        }
        if deeper_than(v, MAX_VALUE_DEPTH) {
            self.too_deep(&path.child(key), MAX_VALUE_DEPTH);
            return None;
        }
        Some(v.clone())
    }

    fn too_deep(&mut self, path: &Path, limit: usize) {
        self.violations.push(Violation {
            cause: forbidden(
                path,
                &format!("must not be nested more than {limit} levels deep"),
            ),
            structural: false,
        });
    }

    /// The whole document (already known to be an object of a supported apiVersion).
    pub(crate) fn crd(&mut self, doc: &Map<String, Value>) -> Crd {
        let root = Path::new("");
        self.warn_unknown(
            doc,
            &root,
            &["apiVersion", "kind", "metadata", "spec", "status"],
        );
        let mut crd = Crd::default();
        let meta_path = Path::new("metadata");
        if let Some(meta) = self.object(doc.get("metadata"), &meta_path, "v1.ObjectMeta", META_KEYS)
        {
            crd.name = self.string(meta, "name", &meta_path);
            crd.generate_name = self.string(meta, "generateName", &meta_path);
            crd.labels = self.string_map(meta, "labels", &meta_path);
            crd.annotations = self.string_map(meta, "annotations", &meta_path);
        }
        let spec_path = Path::new("spec");
        let known = match self.flavor {
            Flavor::V1 => SPEC_V1,
            Flavor::V1beta1 => SPEC_V1BETA1,
        };
        if let Some(spec) = self.object(
            doc.get("spec"),
            &spec_path,
            "CustomResourceDefinitionSpec",
            known,
        ) {
            crd.spec = self.spec(spec, &spec_path);
        }
        crd
    }

    fn spec(&mut self, m: &Map<String, Value>, path: &Path) -> Spec {
        let mut spec = Spec {
            group: self.string(m, "group", path),
            scope: self.string(m, "scope", path),
            ..Spec::default()
        };
        let names_path = path.child("names");
        if let Some(n) = self.object(
            m.get("names"),
            &names_path,
            "CustomResourceDefinitionNames",
            NAMES,
        ) {
            spec.names = Names {
                plural: self.string(n, "plural", &names_path),
                singular: self.string(n, "singular", &names_path),
                short_names: self.strings(n, "shortNames", &names_path),
                kind: self.string(n, "kind", &names_path),
                list_kind: self.string(n, "listKind", &names_path),
                categories: self.strings(n, "categories", &names_path),
            };
        }
        // defaulting (both versions)
        if spec.names.singular.is_empty() {
            spec.names.singular = spec.names.kind.to_lowercase();
        }
        if spec.names.list_kind.is_empty() && !spec.names.kind.is_empty() {
            spec.names.list_kind = format!("{}List", spec.names.kind);
        }

        let versions_path = path.child("versions");
        match m.get("versions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                for (i, v) in a.iter().enumerate() {
                    let vp = versions_path.index(i);
                    let version = self.version(v, &vp);
                    spec.versions.push(version);
                }
            }
            Some(other) => {
                self.type_error(&versions_path, other, "[]CustomResourceDefinitionVersion")
            }
        }
        spec.conversion = self.conversion(m.get("conversion"), &path.child("conversion"));
        if spec.conversion.is_none() {
            spec.conversion = Some(Conversion {
                strategy: "None".into(),
                ..Conversion::default()
            });
        }

        match self.flavor {
            Flavor::V1 => {
                spec.preserve_unknown_fields = Some(self.boolean(m, "preserveUnknownFields", path));
                hoist_identical(&mut spec);
            }
            Flavor::V1beta1 => {
                // v1beta1's SetDefaults_CustomResourceDefinitionSpec (v1 has no such default:
                // there a missing scope is refused).
                if spec.scope.is_empty() {
                    spec.scope = "Namespaced".into();
                }
                spec.version = self.string(m, "version", path);
                spec.validation = self.validation(m.get("validation"), &path.child("validation"));
                spec.subresources =
                    self.subresources(m.get("subresources"), &path.child("subresources"));
                spec.columns = self.columns(
                    m.get("additionalPrinterColumns"),
                    &path.child("additionalPrinterColumns"),
                );
                spec.preserve_unknown_fields = Some(
                    self.opt_bool(m, "preserveUnknownFields", path)
                        .unwrap_or(true),
                );
                if spec.versions.is_empty() && !spec.version.is_empty() {
                    spec.versions.push(Version {
                        name: spec.version.clone(),
                        served: true,
                        storage: true,
                        ..Version::default()
                    });
                }
                if spec.version.is_empty()
                    && let Some(first) = spec.versions.first()
                {
                    spec.version = first.name.clone();
                }
                if let Some(c) = spec.conversion.as_mut()
                    && c.strategy == "Webhook"
                    && c.conversion_review_versions.is_empty()
                {
                    c.conversion_review_versions = vec!["v1beta1".into()];
                }
            }
        }
        spec
    }

    fn version(&mut self, v: &Value, path: &Path) -> Version {
        let known = match self.flavor {
            Flavor::V1 => VERSION_V1,
            Flavor::V1beta1 => VERSION_V1BETA1,
        };
        let Some(m) = self.object(Some(v), path, "CustomResourceDefinitionVersion", known) else {
            return Version::default();
        };
        let mut version = Version {
            name: self.string(m, "name", path),
            served: self.boolean(m, "served", path),
            storage: self.boolean(m, "storage", path),
            deprecated: self.boolean(m, "deprecated", path),
            deprecation_warning: self.opt_string(m, "deprecationWarning", path),
            ..Version::default()
        };
        version.schema = self.validation(m.get("schema"), &path.child("schema"));
        version.subresources =
            self.subresources(m.get("subresources"), &path.child("subresources"));
        version.columns = self.columns(
            m.get("additionalPrinterColumns"),
            &path.child("additionalPrinterColumns"),
        );
        if self.flavor == Flavor::V1 {
            let sp = path.child("selectableFields");
            match m.get("selectableFields") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) => {
                    for (i, f) in a.iter().enumerate() {
                        let fp = sp.index(i);
                        if let Some(fm) =
                            self.object(Some(f), &fp, "SelectableField", &["jsonPath"])
                        {
                            let json_path = self.string(fm, "jsonPath", &fp);
                            version
                                .selectable_fields
                                .push(SelectableField { json_path });
                        } else {
                            version.selectable_fields.push(SelectableField::default());
                        }
                    }
                }
                Some(other) => self.type_error(&sp, other, "[]SelectableField"),
            }
        }
        version
    }

    fn validation(&mut self, v: Option<&Value>, path: &Path) -> Option<Validation> {
        let m = self.object(v, path, "CustomResourceValidation", &["openAPIV3Schema"])?;
        let schema_path = path.child("openAPIV3Schema");
        let open_api_v3_schema = match m.get("openAPIV3Schema") {
            None | Some(Value::Null) => None,
            Some(s) => Some(Box::new(self.schema(s, &schema_path, 0))),
        };
        Some(Validation { open_api_v3_schema })
    }

    fn subresources(&mut self, v: Option<&Value>, path: &Path) -> Option<Subresources> {
        let m = self.object(v, path, "CustomResourceSubresources", &["status", "scale"])?;
        let mut sub = Subresources::default();
        let status_path = path.child("status");
        sub.status = self
            .object(
                m.get("status"),
                &status_path,
                "CustomResourceSubresourceStatus",
                &[],
            )
            .is_some();
        let scale_path = path.child("scale");
        if let Some(s) = self.object(
            m.get("scale"),
            &scale_path,
            "CustomResourceSubresourceScale",
            &[
                "specReplicasPath",
                "statusReplicasPath",
                "labelSelectorPath",
            ],
        ) {
            sub.scale = Some(Scale {
                spec_replicas_path: self.string(s, "specReplicasPath", &scale_path),
                status_replicas_path: self.string(s, "statusReplicasPath", &scale_path),
                label_selector_path: self.opt_string(s, "labelSelectorPath", &scale_path),
            });
        }
        Some(sub)
    }

    fn columns(&mut self, v: Option<&Value>, path: &Path) -> Vec<Column> {
        let json_path_key = match self.flavor {
            Flavor::V1 => "jsonPath",
            Flavor::V1beta1 => "JSONPath",
        };
        let known = [
            "name",
            "type",
            "format",
            "description",
            "priority",
            json_path_key,
        ];
        match v {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, c) in a.iter().enumerate() {
                    let cp = path.index(i);
                    let Some(m) =
                        self.object(Some(c), &cp, "CustomResourceColumnDefinition", &known)
                    else {
                        out.push(Column::default());
                        continue;
                    };
                    out.push(Column {
                        name: self.string(m, "name", &cp),
                        type_: self.string(m, "type", &cp),
                        format: self.string(m, "format", &cp),
                        description: self.string(m, "description", &cp),
                        priority: self.int(m, "priority", &cp, "int32").unwrap_or(0),
                        json_path: self.string(m, json_path_key, &cp),
                    });
                }
                out
            }
            Some(other) => {
                self.type_error(path, other, "[]CustomResourceColumnDefinition");
                Vec::new()
            }
        }
    }

    fn conversion(&mut self, v: Option<&Value>, path: &Path) -> Option<Conversion> {
        match self.flavor {
            Flavor::V1 => {
                let m = self.object(
                    v,
                    path,
                    "CustomResourceConversion",
                    &["strategy", "webhook"],
                )?;
                let mut c = Conversion {
                    strategy: self.string(m, "strategy", path),
                    ..Conversion::default()
                };
                let wp = path.child("webhook");
                if let Some(w) = self.object(
                    m.get("webhook"),
                    &wp,
                    "WebhookConversion",
                    &["clientConfig", "conversionReviewVersions"],
                ) {
                    c.conversion_review_versions = self.strings(w, "conversionReviewVersions", &wp);
                    c.webhook_client_config =
                        self.client_config(w.get("clientConfig"), &wp.child("clientConfig"));
                }
                Some(c)
            }
            Flavor::V1beta1 => {
                let m = self.object(
                    v,
                    path,
                    "CustomResourceConversion",
                    &[
                        "strategy",
                        "webhookClientConfig",
                        "conversionReviewVersions",
                    ],
                )?;
                Some(Conversion {
                    strategy: self.string(m, "strategy", path),
                    conversion_review_versions: self.strings(m, "conversionReviewVersions", path),
                    webhook_client_config: self.client_config(
                        m.get("webhookClientConfig"),
                        &path.child("webhookClientConfig"),
                    ),
                })
            }
        }
    }

    fn client_config(&mut self, v: Option<&Value>, path: &Path) -> Option<WebhookClientConfig> {
        let m = self.object(
            v,
            path,
            "WebhookClientConfig",
            &["url", "service", "caBundle"],
        )?;
        let mut cc = WebhookClientConfig {
            url: self.opt_string(m, "url", path),
            service: None,
        };
        let sp = path.child("service");
        if let Some(s) = self.object(
            m.get("service"),
            &sp,
            "ServiceReference",
            &["namespace", "name", "path", "port"],
        ) {
            cc.service = Some(ServiceReference {
                namespace: self.string(s, "namespace", &sp),
                name: self.string(s, "name", &sp),
                path: self.opt_string(s, "path", &sp),
                port: self.int(s, "port", &sp, "int32").unwrap_or(443),
            });
        }
        // caBundle: base64 bytes; only its JSON type is checked (an invalid bundle is allowed on create).
        let _ = self.opt_string(m, "caBundle", path);
        Some(cc)
    }

    /// One `JSONSchemaProps` node and everything below it, at most [`MAX_SCHEMA_DEPTH`] deep.
    pub(crate) fn schema(&mut self, v: &Value, path: &Path, depth: usize) -> Schema {
        let mut s = Schema::default();
        if depth > MAX_SCHEMA_DEPTH {
            self.too_deep(path, MAX_SCHEMA_DEPTH);
            s.unreadable = true;
            return s;
        }
        let Some(m) = (match v {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                self.type_error(path, other, "v1.JSONSchemaProps");
                None
            }
        }) else {
            s.unreadable = !v.is_null();
            return s;
        };
        let mut unknown: Vec<&String> = m
            .keys()
            .filter(|k| {
                !(SCHEMA_KEYS_COMMON.contains(&k.as_str())
                    || (self.flavor == Flavor::V1 && k.as_str() == "x-kubernetes-validations"))
            })
            .collect();
        unknown.sort();
        for k in unknown {
            self.warnings
                .push(format!("unknown field \"{}\"", path.child(k)));
        }

        s.id = self.string(m, "id", path);
        s.schema = self.string(m, "$schema", path);
        s.ref_ = self.opt_string(m, "$ref", path);
        s.description = self.string(m, "description", path);
        s.type_ = self.string(m, "type", path);
        s.nullable = self.boolean(m, "nullable", path);
        s.format = self.string(m, "format", path);
        s.title = self.string(m, "title", path);
        s.default = self.json(m, "default", path);
        s.maximum = self.float(m, "maximum", path);
        s.exclusive_maximum = self.boolean(m, "exclusiveMaximum", path);
        s.minimum = self.float(m, "minimum", path);
        s.exclusive_minimum = self.boolean(m, "exclusiveMinimum", path);
        s.max_length = self.int(m, "maxLength", path, "int64");
        s.min_length = self.int(m, "minLength", path, "int64");
        s.pattern = self.string(m, "pattern", path);
        s.max_items = self.int(m, "maxItems", path, "int64");
        s.min_items = self.int(m, "minItems", path, "int64");
        s.unique_items = self.boolean(m, "uniqueItems", path);
        s.multiple_of = self.float(m, "multipleOf", path);
        match m.get("enum") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                let ep = path.child("enum");
                for (i, x) in a.iter().enumerate() {
                    if deeper_than(x, MAX_VALUE_DEPTH) {
                        self.too_deep(&ep.index(i), MAX_VALUE_DEPTH);
                    } else {
                        s.enum_.push(x.clone());
                    }
                }
            }
            Some(other) => self.type_error(&path.child("enum"), other, "[]v1.JSON"),
        }
        s.max_properties = self.int(m, "maxProperties", path, "int64");
        s.min_properties = self.int(m, "minProperties", path, "int64");
        s.required = self.strings(m, "required", path);
        if let Some(items) = m.get("items") {
            let ip = path.child("items");
            match items {
                Value::Null => {}
                Value::Array(a) => {
                    let list = a
                        .iter()
                        .enumerate()
                        .map(|(i, x)| self.schema(x, &ip.index(i), depth + 1))
                        .collect();
                    s.items = Some(Items::Array(list));
                }
                other => {
                    s.items = Some(Items::Schema(Box::new(self.schema(other, &ip, depth + 1))))
                }
            }
        }
        s.all_of = self.schema_list(m, "allOf", path, depth);
        s.one_of = self.schema_list(m, "oneOf", path, depth);
        s.any_of = self.schema_list(m, "anyOf", path, depth);
        if let Some(not) = m.get("not").filter(|v| !v.is_null()) {
            s.not = Some(Box::new(self.schema(not, &path.child("not"), depth + 1)));
        }
        s.properties = self.schema_map(m, "properties", path, depth);
        s.additional_properties = self.schema_or_bool(m, "additionalProperties", path, depth);
        s.pattern_properties = self.schema_map(m, "patternProperties", path, depth);
        s.additional_items = self.schema_or_bool(m, "additionalItems", path, depth);
        s.definitions = self.schema_map(m, "definitions", path, depth);
        match m.get("dependencies") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                let dp = path.child("dependencies");
                for (k, d) in o {
                    let entry = match d {
                        Value::Array(_) => SchemaOrStringArray {
                            schema: None,
                            property: self.strings(o, k, &dp),
                        },
                        other => SchemaOrStringArray {
                            schema: Some(Box::new(self.schema(other, &dp.key(k), depth + 1))),
                            property: Vec::new(),
                        },
                    };
                    s.dependencies.insert(k.clone(), entry);
                }
            }
            Some(other) => self.type_error(
                &path.child("dependencies"),
                other,
                "v1.JSONSchemaDependencies",
            ),
        }
        let docs_path = path.child("externalDocs");
        if let Some(d) = self.object(
            m.get("externalDocs"),
            &docs_path,
            "v1.ExternalDocumentation",
            &["description", "url"],
        ) {
            s.external_docs = Some(ExternalDocs {
                description: self.string(d, "description", &docs_path),
                url: self.string(d, "url", &docs_path),
            });
        }
        s.example = self.json(m, "example", path);
        s.x_preserve_unknown_fields =
            self.opt_bool(m, "x-kubernetes-preserve-unknown-fields", path);
        s.x_embedded_resource = self.boolean(m, "x-kubernetes-embedded-resource", path);
        s.x_int_or_string = self.boolean(m, "x-kubernetes-int-or-string", path);
        s.x_list_map_keys = self.strings(m, "x-kubernetes-list-map-keys", path);
        s.x_list_type = self.opt_string(m, "x-kubernetes-list-type", path);
        s.x_map_type = self.opt_string(m, "x-kubernetes-map-type", path);
        if self.flavor == Flavor::V1 {
            s.x_validations = self.rules(
                m.get("x-kubernetes-validations"),
                &path.child("x-kubernetes-validations"),
            );
        }
        s
    }

    fn schema_list(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        path: &Path,
        depth: usize,
    ) -> Vec<Schema> {
        let p = path.child(key);
        match m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, x)| self.schema(x, &p.index(i), depth + 1))
                .collect(),
            Some(other) => {
                self.type_error(&p, other, "[]v1.JSONSchemaProps");
                Vec::new()
            }
        }
    }

    fn schema_map(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        path: &Path,
        depth: usize,
    ) -> BTreeMap<String, Schema> {
        let p = path.child(key);
        let mut out = BTreeMap::new();
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                for (k, x) in o {
                    let child = self.schema(x, &p.key(k), depth + 1);
                    out.insert(k.clone(), child);
                }
            }
            Some(other) => self.type_error(&p, other, "map[string]v1.JSONSchemaProps"),
        }
        out
    }

    fn schema_or_bool(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        path: &Path,
        depth: usize,
    ) -> Option<SchemaOrBool> {
        match m.get(key)? {
            Value::Null => None,
            Value::Bool(b) => Some(SchemaOrBool {
                allows: *b,
                schema: None,
            }),
            other => Some(SchemaOrBool {
                allows: true,
                schema: Some(Box::new(self.schema(other, &path.child(key), depth + 1))),
            }),
        }
    }

    fn rules(&mut self, v: Option<&Value>, path: &Path) -> Vec<ValidationRule> {
        let known = [
            "rule",
            "message",
            "messageExpression",
            "reason",
            "fieldPath",
            "optionalOldSelf",
        ];
        match v {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, r) in a.iter().enumerate() {
                    let rp = path.index(i);
                    let Some(m) = self.object(Some(r), &rp, "v1.ValidationRule", &known) else {
                        out.push(ValidationRule::default());
                        continue;
                    };
                    out.push(ValidationRule {
                        rule: self.string(m, "rule", &rp),
                        message: self.string(m, "message", &rp),
                        message_expression: self.string(m, "messageExpression", &rp),
                        reason: self.opt_string(m, "reason", &rp),
                        field_path: self.string(m, "fieldPath", &rp),
                        optional_old_self: self.opt_bool(m, "optionalOldSelf", &rp),
                    });
                }
                out
            }
            Some(other) => {
                self.type_error(path, other, "v1.ValidationRules");
                Vec::new()
            }
        }
    }
}

/// v1 → internal: `versions[0].name` becomes `spec.version`, and per-version schema,
/// subresources, printer columns (and selectable fields, with the schema) that are identical in
/// every version move to the top level (`Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_...`).
fn hoist_identical(spec: &mut Spec) {
    let Some(first) = spec.versions.first() else {
        return;
    };
    spec.version = first.name.clone();
    let subresources_identical = spec
        .versions
        .iter()
        .all(|v| v.subresources == first.subresources);
    let schema_identical = spec.versions.iter().all(|v| v.schema == first.schema);
    let columns_identical = spec.versions.iter().all(|v| v.columns == first.columns);
    let fields_identical = spec
        .versions
        .iter()
        .all(|v| v.selectable_fields == first.selectable_fields);
    if subresources_identical {
        spec.subresources = first.subresources.clone();
    }
    if schema_identical {
        spec.validation = first.schema.clone();
    }
    if columns_identical {
        spec.columns = first.columns.clone();
    }
    if schema_identical && fields_identical {
        spec.selectable_fields = first.selectable_fields.clone();
    }
    for v in &mut spec.versions {
        if subresources_identical {
            v.subresources = None;
        }
        if schema_identical {
            v.schema = None;
        }
        if columns_identical {
            v.columns = Vec::new();
        }
        if schema_identical && fields_identical {
            v.selectable_fields = Vec::new();
        }
    }
}
