//! The schema of one version (or the top-level schema): `validateCustomResourceDefinitionValidation`
//! and `ValidateCustomResourceDefinitionOpenAPISchema` with its `specStandardValidatorV3`:
//! forbidden keywords, `properties` vs `additionalProperties`, list and map types, defaults where
//! they may not be, `x-kubernetes-validations` entries; the structural-schema and default checks
//! run first, as on the server.

use super::Violation;
use super::cel_check::{TotalCost, child_cardinality};
use super::defaults::validate_defaults;
use super::model::{Flavor, Items, Schema, Validation};
use super::path::Path;
use super::render::{forbidden, go_string_slice, invalid, not_supported, q, required};
use super::rules;
use super::structural::{new_structural_error, validate_structural};

/// What the request's API version allows (`validationOptions` on create).
pub(crate) struct Opts {
    pub flavor: Flavor,
    pub allow_defaults: bool,
    pub require_valid_property_type: bool,
    pub require_structural: bool,
    pub require_atomic_set_type: bool,
    pub require_map_list_keys_map_set: bool,
}

impl Opts {
    pub(crate) fn new(flavor: Flavor) -> Opts {
        let v1 = flavor == Flavor::V1;
        Opts {
            flavor,
            allow_defaults: v1,
            require_valid_property_type: v1,
            require_structural: v1,
            require_atomic_set_type: true,
            require_map_list_keys_map_set: true,
        }
    }
}

/// `specStandardValidatorV3` state while descending.
#[derive(Clone)]
pub(crate) struct Ssv {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
    require_valid_property_type: bool,
    /// The highest path whose data cannot be correlated across updates (oldSelf forbidden below).
    pub(crate) uncorrelatable: Option<Path>,
    /// How often this node can occur in one object (`MaxCardinality`; `None`: unbounded).
    cardinality: Option<u64>,
}

impl Ssv {
    fn with_forbidden_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_defaults_reason: reason.to_string(),
            ..self.clone()
        }
    }

    fn with_forbid_old_self(&self, path: &Path) -> Ssv {
        if self.uncorrelatable.is_some() {
            return self.clone();
        }
        Ssv {
            uncorrelatable: Some(path.clone()),
            ..self.clone()
        }
    }
}

/// Schema errors and CEL errors kept apart (`OpenAPISchemaErrorList`).
#[derive(Default)]
struct Errs {
    schema: Vec<Violation>,
    cel: Vec<Violation>,
    /// The estimated costs of the rules below (`TotalCost`).
    costs: TotalCost,
}

impl Errs {
    fn append(&mut self, other: Errs) {
        self.schema.extend(other.schema);
        self.cel.extend(other.cel);
        self.costs.append(other.costs);
    }
}

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// The first non-zero field of the internal `JSONSchemaProps`, in struct order.
fn root_fields(s: &Schema) -> Vec<&'static str> {
    let mut f = Vec::new();
    let mut add = |cond: bool, name: &'static str| {
        if cond {
            f.push(name);
        }
    };
    add(!s.id.is_empty(), "ID");
    add(!s.schema.is_empty(), "Schema");
    add(s.ref_.is_some(), "Ref");
    add(!s.description.is_empty(), "Description");
    add(!s.type_.is_empty(), "Type");
    add(s.nullable, "Nullable");
    add(!s.format.is_empty(), "Format");
    add(!s.title.is_empty(), "Title");
    add(s.default.is_some(), "Default");
    add(s.maximum.is_some(), "Maximum");
    add(s.exclusive_maximum, "ExclusiveMaximum");
    add(s.minimum.is_some(), "Minimum");
    add(s.exclusive_minimum, "ExclusiveMinimum");
    add(s.max_length.is_some(), "MaxLength");
    add(s.min_length.is_some(), "MinLength");
    add(!s.pattern.is_empty(), "Pattern");
    add(s.max_items.is_some(), "MaxItems");
    add(s.min_items.is_some(), "MinItems");
    add(s.unique_items, "UniqueItems");
    add(s.multiple_of.is_some(), "MultipleOf");
    add(!s.enum_.is_empty(), "Enum");
    add(s.max_properties.is_some(), "MaxProperties");
    add(s.min_properties.is_some(), "MinProperties");
    add(!s.required.is_empty(), "Required");
    add(s.items.is_some(), "Items");
    add(!s.all_of.is_empty(), "AllOf");
    add(!s.one_of.is_empty(), "OneOf");
    add(!s.any_of.is_empty(), "AnyOf");
    add(s.not.is_some(), "Not");
    add(!s.properties.is_empty(), "Properties");
    add(s.additional_properties.is_some(), "AdditionalProperties");
    add(!s.pattern_properties.is_empty(), "PatternProperties");
    add(!s.dependencies.is_empty(), "Dependencies");
    add(s.additional_items.is_some(), "AdditionalItems");
    add(!s.definitions.is_empty(), "Definitions");
    add(s.external_docs.is_some(), "ExternalDocs");
    add(s.example.is_some(), "Example");
    add(
        s.x_preserve_unknown_fields.is_some(),
        "XPreserveUnknownFields",
    );
    add(s.x_embedded_resource, "XEmbeddedResource");
    add(s.x_int_or_string, "XIntOrString");
    add(!s.x_list_map_keys.is_empty(), "XListMapKeys");
    add(s.x_list_type.is_some(), "XListType");
    add(s.x_map_type.is_some(), "XMapType");
    add(!s.x_validations.is_empty(), "XValidations");
    f
}

fn allowed_at_root(flavor: Flavor) -> Vec<&'static str> {
    let mut v = vec![
        "Description",
        "Type",
        "Format",
        "Title",
        "Maximum",
        "ExclusiveMaximum",
        "Minimum",
        "ExclusiveMinimum",
        "MaxLength",
        "MinLength",
        "Pattern",
        "MaxItems",
        "MinItems",
        "UniqueItems",
        "MultipleOf",
        "Required",
        "Items",
        "Properties",
        "ExternalDocs",
        "Example",
        "XPreserveUnknownFields",
    ];
    if flavor == Flavor::V1 {
        v.push("XValidations");
    }
    v
}

/// `validateCustomResourceDefinitionValidation`.
pub(crate) fn validate_custom_resource_validation(
    validation: Option<&Validation>,
    status_enabled: bool,
    opts: &Opts,
    path: &Path,
    out: &mut Vec<Violation>,
    warnings: &mut Vec<String>,
) {
    let Some(schema) = validation.and_then(|v| v.open_api_v3_schema.as_deref()) else {
        return;
    };
    if schema.unreadable {
        return;
    }
    let mut errs: Vec<Violation> = Vec::new();
    if status_enabled {
        let allowed = allowed_at_root(opts.flavor);
        for field in root_fields(schema) {
            if field == "Type" {
                if schema.type_ != "object" {
                    errs.push(Violation::new(invalid(
                        &path.child("openAPIV3Schema.type"),
                        &q(&schema.type_),
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    )));
                    break;
                }
                continue;
            }
            if !allowed.contains(&field) {
                errs.push(Violation::new(invalid(
                    &path.child("openAPIV3Schema"),
                    "apiextensions.JSONSchemaProps{...}",
                    &format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        allowed.join(" ")
                    ),
                )));
                break;
            }
        }
    }
    if schema.nullable {
        errs.push(Violation::new(forbidden(
            &path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        )));
    }
    let sp = path.child("openAPIV3Schema");
    let mut init_errs = Vec::new();
    let mut cel_ok = false;
    let init = new_structural_error(schema);
    if opts.require_structural {
        if let Some(e) = &init {
            init_errs.push(Violation::new(invalid(&sp, "\"\"", e)));
        } else {
            let structural = validate_structural(&sp, schema);
            if !structural.is_empty() {
                errs.extend(structural.into_iter().map(Violation::structural));
            } else {
                let defaults = validate_defaults(&sp, schema);
                if !defaults.is_empty() {
                    errs.extend(defaults);
                } else {
                    cel_ok = opts.flavor == Flavor::V1;
                }
            }
        }
    } else if init.is_none() {
        // v1beta1 with preserveUnknownFields: accepted, the NonStructuralSchema condition is set.
        for c in validate_structural(&sp, schema) {
            warnings.push(format!(
                "{c} (a non-structural schema: accepted by apiextensions.k8s.io/v1beta1, rejected by apiextensions.k8s.io/v1)"
            ));
        }
    }
    let ssv = Ssv {
        allow_defaults: opts.allow_defaults,
        disallow_defaults_reason: String::new(),
        inside_resource_meta: false,
        require_valid_property_type: opts.require_valid_property_type,
        uncorrelatable: None,
        cardinality: Some(1),
    };
    let r = openapi_schema(schema, &sp, &ssv, true, opts, cel_ok);
    errs.extend(r.schema);
    errs.extend(r.cel);
    if cel_ok {
        errs.extend(r.costs.violations(&sp));
    }
    if errs.is_empty() {
        errs.extend(init_errs);
    }
    out.extend(errs);
}

/// `specStandardValidatorV3.validate`.
fn standard(s: &Schema, path: &Path, ssv: &Ssv, out: &mut Vec<Violation>) {
    if ssv.require_valid_property_type
        && !s.type_.is_empty()
        && !OPENAPI_TYPES.contains(&s.type_.as_str())
    {
        out.push(Violation::new(not_supported(
            &path.child("type"),
            &q(&s.type_),
            OPENAPI_TYPES,
        )));
    }
    if s.default.is_some() && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ssv.disallow_defaults_reason);
        }
        out.push(Violation::new(forbidden(&path.child("default"), &detail)));
    }
    if !s.id.is_empty() {
        out.push(Violation::new(forbidden(
            &path.child("id"),
            "id is not supported",
        )));
    }
    if s.additional_items.is_some() {
        out.push(Violation::new(forbidden(
            &path.child("additionalItems"),
            "additionalItems is not supported",
        )));
    }
    if !s.pattern_properties.is_empty() {
        out.push(Violation::new(forbidden(
            &path.child("patternProperties"),
            "patternProperties is not supported",
        )));
    }
    if !s.definitions.is_empty() {
        out.push(Violation::new(forbidden(
            &path.child("definitions"),
            "definitions is not supported",
        )));
    }
    if !s.dependencies.is_empty() {
        out.push(Violation::new(forbidden(
            &path.child("dependencies"),
            "dependencies is not supported",
        )));
    }
    if s.ref_.is_some() {
        out.push(Violation::new(forbidden(
            &path.child("$ref"),
            "$ref is not supported",
        )));
    }
    if s.type_ == "null" {
        out.push(Violation::new(forbidden(
            &path.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        )));
    }
    if matches!(&s.items, Some(Items::Array(a)) if !a.is_empty()) {
        out.push(Violation::new(forbidden(
            &path.child("items"),
            "items must be a schema object and not an array",
        )));
    }
    if ssv.inside_resource_meta && s.x_embedded_resource {
        out.push(Violation::new(forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        )));
    }
}

/// `cel.MapIsCorrelatable`.
fn map_is_correlatable(map_type: Option<&str>) -> bool {
    matches!(map_type, None | Some("granular") | Some("atomic"))
}

/// `ValidateCustomResourceDefinitionOpenAPISchema`; `cel_ok` is the server's non-nil CEL context.
fn openapi_schema(
    s: &Schema,
    path: &Path,
    ssv: &Ssv,
    is_root: bool,
    opts: &Opts,
    cel_ok: bool,
) -> Errs {
    let mut errs = Errs::default();
    if s.unreadable {
        return errs;
    }
    standard(s, path, ssv, &mut errs.schema);
    if s.unique_items {
        errs.schema.push(Violation::new(forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        )));
    }
    if let Some(ap) = &s.additional_properties {
        if !s.properties.is_empty() && (!ap.allows || ap.schema.is_some()) {
            errs.schema.push(Violation::new(forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )));
        }
        let mut sub = if ssv.inside_resource_meta {
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        sub.cardinality = child_cardinality(ssv.cardinality, s);
        if let Some(child) = &ap.schema {
            errs.append(openapi_schema(
                child,
                &path.child("additionalProperties"),
                &sub,
                false,
                opts,
                cel_ok,
            ));
        }
    }
    for (name, prop) in &s.properties {
        let mut sub = ssv.clone();
        sub.cardinality = child_cardinality(ssv.cardinality, s);
        if !map_is_correlatable(s.x_map_type.as_deref()) {
            sub = sub.with_forbid_old_self(path);
        }
        if (is_root || s.x_embedded_resource)
            && matches!(name.as_str(), "metadata" | "kind" | "apiVersion")
        {
            sub.inside_resource_meta = true;
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {name}"));
            }
        }
        errs.append(openapi_schema(
            prop,
            &path.child("properties").key(name),
            &sub,
            false,
            opts,
            cel_ok,
        ));
    }
    if let Some(not) = &s.not {
        errs.append(openapi_schema(
            not,
            &path.child("not"),
            ssv,
            false,
            opts,
            false,
        ));
    }
    for (i, x) in s.all_of.iter().enumerate() {
        errs.append(openapi_schema(
            x,
            &path.child("allOf").index(i),
            ssv,
            false,
            opts,
            false,
        ));
    }
    for (i, x) in s.one_of.iter().enumerate() {
        errs.append(openapi_schema(
            x,
            &path.child("oneOf").index(i),
            ssv,
            false,
            opts,
            false,
        ));
    }
    for (i, x) in s.any_of.iter().enumerate() {
        errs.append(openapi_schema(
            x,
            &path.child("anyOf").index(i),
            ssv,
            false,
            opts,
            false,
        ));
    }
    for (k, x) in &s.definitions {
        errs.append(openapi_schema(
            x,
            &path.child("definitions").key(k),
            ssv,
            false,
            opts,
            false,
        ));
    }
    if let Some(items) = &s.items {
        let mut sub = if s.x_list_type.as_deref() != Some("map") {
            ssv.with_forbid_old_self(path)
        } else {
            ssv.clone()
        };
        sub.cardinality = child_cardinality(ssv.cardinality, s);
        match items {
            Items::Schema(x) => errs.append(openapi_schema(
                x,
                &path.child("items"),
                &sub,
                false,
                opts,
                cel_ok,
            )),
            Items::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    errs.append(openapi_schema(
                        x,
                        &path.child("items").index(i),
                        &sub,
                        false,
                        opts,
                        cel_ok,
                    ));
                }
            }
        }
    }
    for (k, d) in &s.dependencies {
        if let Some(x) = &d.schema {
            errs.append(openapi_schema(
                x,
                &path.child("dependencies").key(k),
                ssv,
                false,
                opts,
                false,
            ));
        }
    }
    if s.x_preserve_unknown_fields == Some(false) {
        errs.schema.push(Violation::new(invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        )));
    }
    list_and_map_types(s, path, opts, &mut errs.schema);
    if opts.require_map_list_keys_map_set {
        map_list_keys_map_set(s, path, &mut errs.schema);
    }
    if !s.x_validations.is_empty() {
        rules::validate_rule_fields(s, path, &mut errs.schema);
        if errs.schema.is_empty() && cel_ok {
            let uncorrelatable = ssv.uncorrelatable.as_ref();
            rules::compile_rules(
                s,
                path,
                is_root,
                uncorrelatable,
                ssv.cardinality,
                &mut errs.costs,
                &mut errs.cel,
            );
        }
    }
    errs
}

fn type_must_be(s: &Schema, path: &Path, ty: &str, detail: &str, out: &mut Vec<Violation>) {
    if s.type_.is_empty() {
        out.push(Violation::new(required(&path.child("type"), detail)));
    } else {
        let _ = ty;
        out.push(Violation::new(invalid(
            &path.child("type"),
            &q(&s.type_),
            detail,
        )));
    }
}

fn list_and_map_types(s: &Schema, path: &Path, opts: &Opts, out: &mut Vec<Violation>) {
    if let Some(map_type) = &s.x_map_type {
        if s.type_ != "object" {
            type_must_be(
                s,
                path,
                "object",
                "must be object if x-kubernetes-map-type is specified",
                out,
            );
        }
        if map_type != "atomic" && map_type != "granular" {
            out.push(Violation::new(not_supported(
                &path.child("x-kubernetes-map-type"),
                &q(map_type),
                &["atomic", "granular"],
            )));
        }
    }
    if let Some(list_type) = &s.x_list_type {
        if s.type_ != "array" {
            type_must_be(
                s,
                path,
                "array",
                "must be array if x-kubernetes-list-type is specified",
                out,
            );
        } else if opts.require_atomic_set_type
            && list_type == "set"
            && let Some(is) = s.items_schema()
        {
            let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match is.type_.as_str() {
                "array" => {
                    if let Some(lt) = is.x_list_type.as_deref().filter(|lt| *lt != "atomic") {
                        out.push(Violation::new(invalid(
                            &path.child("items").child("x-kubernetes-list-type"),
                            &q(lt),
                            detail,
                        )));
                    }
                }
                "object" if is.x_map_type.as_deref() != Some("atomic") => {
                    // the server reports the items' list type here
                    let value = q(is.x_list_type.as_deref().unwrap_or("null"));
                    out.push(Violation::new(invalid(
                        &path.child("items").child("x-kubernetes-map-type"),
                        &value,
                        detail,
                    )));
                }
                _ => {}
            }
        }
        if !matches!(list_type.as_str(), "atomic" | "set" | "map") {
            out.push(Violation::new(not_supported(
                &path.child("x-kubernetes-list-type"),
                &q(list_type),
                &["atomic", "set", "map"],
            )));
        }
    }
    if !s.x_list_map_keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match s.x_list_type.as_deref() {
            None => out.push(Violation::new(required(
                &path.child("x-kubernetes-list-type"),
                detail,
            ))),
            Some("map") => {}
            Some(other) => out.push(Violation::new(invalid(
                &path.child("x-kubernetes-list-type"),
                &q(other),
                detail,
            ))),
        }
    }
    if s.x_list_type.as_deref() == Some("map") {
        if s.x_list_map_keys.is_empty() {
            out.push(Violation::new(required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            )));
        }
        match &s.items {
            None => out.push(Violation::new(required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            ))),
            Some(Items::Array(_)) => out.push(Violation::new(invalid(
                &path.child("items"),
                "apiextensions.JSONSchemaPropsOrArray{Schema:(*apiextensions.JSONSchemaProps)(nil), JSONSchemas:[]apiextensions.JSONSchemaProps{...}}",
                "must only have a single schema if x-kubernetes-list-type is map",
            ))),
            Some(Items::Schema(is)) if is.type_ != "object" => out.push(Violation::new(invalid(
                &path.child("items").child("type"),
                &q(&is.type_),
                "must be object if parent array's x-kubernetes-list-type is map",
            ))),
            Some(Items::Schema(is)) => {
                let keys_path = path.child("x-kubernetes-list-map-keys");
                let mut seen = std::collections::HashSet::new();
                for k in &s.x_list_map_keys {
                    match is.properties.get(k) {
                        Some(p) => {
                            if p.type_ == "array" || p.type_ == "object" {
                                out.push(Violation::new(invalid(
                                    &path.child("items").child("properties").key(k).child("type"),
                                    &q(&is.type_),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                )));
                            }
                        }
                        None => out.push(Violation::new(invalid(
                            &keys_path,
                            &go_string_slice(&s.x_list_map_keys),
                            "entries must all be names of item properties",
                        ))),
                    }
                    if !seen.insert(k.as_str()) {
                        out.push(Violation::new(invalid(
                            &keys_path,
                            &go_string_slice(&s.x_list_map_keys),
                            "must not contain duplicate entries",
                        )));
                    }
                }
            }
        }
    }
}

/// `validateMapListKeysMapSet`.
fn map_list_keys_map_set(s: &Schema, path: &Path, out: &mut Vec<Violation>) {
    let Some(is) = s.items_schema() else {
        return;
    };
    let Some(list_type) = s
        .x_list_type
        .as_deref()
        .filter(|t| *t == "set" || *t == "map")
    else {
        return;
    };
    if is.nullable {
        out.push(Violation::new(forbidden(
            &path.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        )));
    }
    if list_type == "map" {
        for k in &s.x_list_map_keys {
            let Some(p) = is.properties.get(k) else {
                continue;
            };
            let pp = path.child("items").child("properties").key(k);
            if !is.required.contains(k) && p.default.is_none() {
                out.push(Violation::new(required(
                    &pp.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                )));
            }
            if p.nullable {
                out.push(Violation::new(forbidden(
                    &pp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                )));
            }
        }
    }
}
