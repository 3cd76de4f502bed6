//! Schema -> IR for one CRD version: field presence, type mapping, path-derived type names.

use std::collections::BTreeSet;

use serde_json::Value;

use super::naming::{self, assign_unique};
use super::{Derives, Field, Presence, Resource, Ty, TypeBody, TypeDef};
use crate::docs;
use crate::{Error, Options};
use kube_codegen_crd::schema::{AdditionalProperties, Schema};
use kube_codegen_crd::{Crd, CrdVersion};

/// Name of the flattened catch-all field; a declared property of the same name wins.
const FLATTEN_FIELD: &str = "extra_fields";

struct Cx<'a> {
    crd: &'a Crd,
    version: &'a str,
    types: Vec<TypeDef>,
    docs: bool,
    known_types: bool,
    uses_nullable: bool,
}

impl Cx<'_> {
    fn schema_err(&self, pointer: &str, message: impl Into<String>) -> Error {
        Error::Schema {
            file: self.crd.source.clone(),
            crd: self.crd.name.clone(),
            version: self.version.to_string(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    fn push(&mut self, candidate: String, s: &Schema, body: TypeBody) -> Ty {
        let docs = if self.docs {
            docs::type_docs(s)
        } else {
            Vec::new()
        };
        self.types.push(TypeDef {
            name: candidate,
            pointer: s.pointer.clone(),
            docs,
            body,
            default: false,
            alias_of: None,
            extra_derives: Vec::new(),
            apply_name: None,
        });
        Ty::Named(self.types.len() - 1)
    }
}

pub fn resource(
    crd: &Crd,
    v: &CrdVersion,
    options: &Options,
    derives: &Derives,
) -> Result<Resource, Error> {
    let mut cx = Cx {
        crd,
        version: &v.name,
        types: Vec::new(),
        docs: !options.no_docs,
        known_types: !options.no_known_types,
        uses_nullable: false,
    };
    let schema = if v.raw_schema.is_null() {
        // No schema at all (old v1beta1 CRDs): everything is preserved.
        Schema {
            preserve_unknown_fields: true,
            ..Schema::default()
        }
    } else {
        Schema::parse(&v.raw_schema).map_err(|e| cx.schema_err(&e.pointer, e.message))?
    };
    let root = naming::type_name(&naming::pascal(&crd.kind));

    // Root: apiVersion/kind/metadata are fixed fields; every other property is kept.
    let mut props: Vec<(&str, &Schema)> = schema
        .properties
        .iter()
        .filter(|(k, _)| !matches!(*k, "apiVersion" | "kind" | "metadata"))
        .map(|(k, v)| (*k, v))
        .collect();
    props.sort_by(|a, b| a.0.cmp(b.0));
    let reserved: BTreeSet<String> = ["api_version", "kind", "metadata"].map(String::from).into();
    let (root_fields, root_flatten) = struct_fields(&mut cx, &root, &schema, &props, reserved)?;

    let mut types = std::mem::take(&mut cx.types);
    finalize_names(&mut types, &root);
    super::dedupe::dedupe(&mut types);
    let root_default = super::dedupe::compute_defaults(&mut types, &root_fields, &root_flatten);
    for t in &mut types {
        t.extra_derives = derives.for_type(&t.name);
    }
    let mut root_docs = Vec::new();
    if cx.docs {
        root_docs = docs::type_docs(&schema);
    }
    let deprecated = v.deprecated.then(|| {
        v.deprecation_warning
            .clone()
            .unwrap_or_else(|| format!("{}/{} {} is deprecated", crd.group, v.name, crd.kind))
    });
    Ok(Resource {
        crd_name: crd.name.clone(),
        source: crd.source.clone(),
        group: crd.group.clone(),
        version: v.name.clone(),
        kind: crd.kind.clone(),
        module: String::new(),
        root_extra_derives: derives.for_type(&root),
        root,
        plural: crd.plural.clone(),
        singular: crd
            .singular
            .clone()
            .unwrap_or_else(|| crd.kind.to_lowercase()),
        short_names: crd.short_names.clone(),
        list_kind: crd.list_kind.clone(),
        categories: crd.categories.clone(),
        namespaced: crd.namespaced,
        storage: v.storage,
        served: v.served,
        deprecated,
        status_subresource: v.status_subresource,
        scale: v.scale.clone(),
        printer_columns: v.printer_columns.clone(),
        root_docs,
        root_fields,
        root_flatten,
        root_default,
        types,
        uses_nullable: cx.uses_nullable,
        schema: std::sync::Arc::clone(&v.raw_schema),
        api: Default::default(),
    })
}

/// Resolves path-derived candidate names to unique names (see the crate docs for the rule).
fn finalize_names(types: &mut [TypeDef], root: &str) {
    let wanted: Vec<(String, String, bool)> = types
        .iter()
        .map(|t| (naming::type_name(&t.name), t.pointer.clone(), false))
        .collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    taken.insert(root.to_string());
    let names = assign_unique(&wanted, &mut taken, "");
    for (t, n) in types.iter_mut().zip(names) {
        t.name = n;
    }
}

/// The flattened catch-all: (field ident, map value type).
type Flatten = Option<(String, Ty)>;

/// Builds the fields of an object (and its flattened rest).
fn struct_fields(
    cx: &mut Cx<'_>,
    name: &str,
    s: &Schema,
    props: &[(&str, &Schema)],
    reserved: BTreeSet<String>,
) -> Result<(Vec<Field>, Flatten), Error> {
    let wanted: Vec<(String, String, bool)> = props
        .iter()
        .map(|(wire, _)| {
            let sn = naming::snake(wire);
            let exact = sn == *wire;
            (sn, wire.to_string(), exact)
        })
        .collect();
    let mut taken = reserved;
    let snakes = assign_unique(&wanted, &mut taken, "_");
    let mut fields = Vec::with_capacity(props.len());
    for ((wire, ps), sn) in props.iter().zip(snakes) {
        let child_name = format!("{name}{}", naming::pascal(wire));
        let ty = map_schema(cx, ps, &child_name)?;
        let required = s.required.iter().any(|r| r == wire);
        let presence = match (required, ps.nullable) {
            (true, false) => Presence::Required,
            (false, false) => Presence::Optional,
            (true, true) => Presence::RequiredNullable,
            (false, true) => {
                cx.uses_nullable = true;
                Presence::OptionalNullable
            }
        };
        fields.push(Field {
            ident: naming::field_ident(&sn),
            wire: wire.to_string(),
            docs: match &ty {
                // The type was just built from this very schema node: reuse its docs.
                Ty::Named(i) if cx.types[*i].pointer == ps.pointer => cx.types[*i].docs.clone(),
                _ if cx.docs => docs::field_docs(ps),
                _ => Vec::new(),
            },
            ty,
            presence,
        });
    }
    // Whatever the schema keeps beyond the declared properties is flattened into a map.
    let rest = if s.preserve_unknown_fields
        || matches!(
            s.additional_properties,
            Some(AdditionalProperties::Bool(true))
        ) {
        Some(Ty::Json)
    } else if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
        Some(value_ty(cx, ap, &format!("{name}Value"))?)
    } else {
        None
    };
    let flatten = rest.map(|ty| {
        let mut n = FLATTEN_FIELD.to_string();
        let mut i = 2;
        while fields.iter().any(|f| f.ident == n) || taken.contains(&n) {
            n = format!("{FLATTEN_FIELD}_{i}");
            i += 1;
        }
        (n, ty)
    });
    Ok((fields, flatten))
}

/// A type for an array item or map value: nullable elements become `Option<T>`.
fn value_ty(cx: &mut Cx<'_>, s: &Schema, name: &str) -> Result<Ty, Error> {
    let t = map_schema(cx, s, name)?;
    Ok(if s.nullable {
        Ty::Option(Box::new(t))
    } else {
        t
    })
}

/// The JSON type a oneOf/anyOf branch stands for, if it names exactly one.
fn branch_type<'s>(b: &'s Schema<'_>) -> Option<&'s str> {
    if b.int_or_string {
        return None;
    }
    b.effective_type()
}

/// An int-or-string node: k8s-openapi's `IntOrString` (`i32`) when the schema bounds every
/// integer it accepts to `i32`, otherwise the tree's own 64-bit one. A server accepts and stores
/// any int64 there (`9223372036854775807`), which k8s-openapi's type cannot read back, so an
/// informer would drop the whole object.
fn int_or_string(s: &Schema) -> Ty {
    if integers_fit_i32(s) {
        Ty::IntOrString
    } else {
        Ty::IntOrString64
    }
}

/// Whether `minimum` and `maximum` within `i32` hold for every integer `s` accepts: on the node
/// itself or an `allOf` branch, or on every `anyOf` (`oneOf`) branch not typed `string` (the
/// server checks bounds only on numbers, so an integer must pass one of the bounded branches).
fn integers_fit_i32(s: &Schema) -> bool {
    let bounded = |n: &Schema| {
        let bound = |key: &str| {
            n.constraints
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.as_f64())
        };
        matches!(
            (bound("minimum"), bound("maximum")),
            (Some(lo), Some(hi)) if lo >= f64::from(i32::MIN) && hi <= f64::from(i32::MAX)
        )
    };
    let every_integer_branch = |branches: &[Schema]| {
        !branches.is_empty()
            && branches
                .iter()
                .all(|b| b.type_ == Some("string") || bounded(b))
    };
    bounded(s)
        || s.all_of.iter().any(bounded)
        || every_integer_branch(&s.any_of)
        || every_integer_branch(&s.one_of)
}

fn map_schema(cx: &mut Cx<'_>, s: &Schema, name: &str) -> Result<Ty, Error> {
    if s.int_or_string {
        return Ok(int_or_string(s));
    }
    if s.effective_type().is_none() && (!s.any_of.is_empty() || !s.one_of.is_empty()) {
        let branches: Vec<&Schema> = s.any_of.iter().chain(&s.one_of).collect();
        let types: Vec<Option<&str>> = branches.iter().map(|b| branch_type(b)).collect();
        if types.iter().all(Option::is_none) {
            // Branches only constrain (`required` alternatives): no effect on the type.
            return untyped(s);
        }
        let distinct: BTreeSet<&str> = types.iter().flatten().copied().collect();
        if types.iter().any(Option::is_none) || distinct.len() != branches.len() {
            // Mixed or repeated types: the only faithful Rust type is a JSON value.
            return Ok(Ty::Json);
        }
        if distinct == BTreeSet::from(["integer", "string"]) {
            return Ok(int_or_string(s));
        }
        // Variant order matters for untagged deserialization: narrower JSON types first.
        let order = ["integer", "number", "boolean", "string", "array", "object"];
        let mut variants = Vec::new();
        for t in order {
            if let Some(b) = branches.iter().find(|b| branch_type(b) == Some(t)) {
                let vname = naming::pascal(t);
                let ty = map_schema(cx, b, &format!("{name}{vname}"))?;
                variants.push((vname, ty));
            }
        }
        return Ok(cx.push(name.to_string(), s, TypeBody::Untagged { variants }));
    }
    match s.effective_type() {
        Some("string") => {
            let mut variants: Vec<String> = Vec::new();
            for v in s.enum_values {
                if let Value::String(x) = v
                    && !variants.contains(x)
                {
                    variants.push(x.clone());
                }
            }
            if variants.is_empty() {
                return Ok(Ty::String);
            }
            let wanted: Vec<(String, String, bool)> = variants
                .iter()
                .enumerate()
                .map(|(i, w)| (naming::pascal(w), format!("{i:08}"), false))
                .collect();
            let mut taken = BTreeSet::new();
            let idents = assign_unique(&wanted, &mut taken, "");
            let mut other = "Other".to_string();
            let mut i = 2;
            while taken.contains(&other) {
                other = format!("Other{i}");
                i += 1;
            }
            let default = s
                .default
                .and_then(Value::as_str)
                .and_then(|d| variants.iter().position(|v| v == d));
            let body = TypeBody::StringEnum {
                variants: idents.into_iter().zip(variants).collect(),
                other,
                default,
            };
            Ok(cx.push(name.to_string(), s, body))
        }
        Some("integer") => {
            let mut values: Vec<i64> = Vec::new();
            for v in s.enum_values {
                if let Some(x) = v.as_i64()
                    && !values.contains(&x)
                {
                    values.push(x);
                }
            }
            if !values.is_empty() {
                let consts = values
                    .iter()
                    .map(|v| {
                        let n = if *v < 0 {
                            format!("V_MINUS_{}", v.unsigned_abs())
                        } else {
                            format!("V_{v}")
                        };
                        (n, *v)
                    })
                    .collect();
                let default = s.default.and_then(Value::as_i64);
                return Ok(cx.push(name.to_string(), s, TypeBody::IntEnum { consts, default }));
            }
            Ok(match s.format {
                Some("int32") => Ty::I32,
                _ => Ty::I64,
            })
        }
        Some("number") => Ok(Ty::Number),
        Some("boolean") => Ok(Ty::Bool),
        Some("array") => {
            let item = match &s.items {
                Some(items) => value_ty(cx, items, name)?,
                None => Ty::Json,
            };
            Ok(Ty::Vec(Box::new(item)))
        }
        Some("object") => object(cx, s, name),
        Some(other) => Err(cx.schema_err(&s.pointer, format!("unsupported type {other:?}"))),
        None => untyped(s),
    }
}

fn untyped(_s: &Schema) -> Result<Ty, Error> {
    // No type: anything may come back (preserve-unknown-fields or a schema without constraints).
    Ok(Ty::Json)
}

fn object(cx: &mut Cx<'_>, s: &Schema, name: &str) -> Result<Ty, Error> {
    let mut props: Vec<(&str, &Schema)> = s.properties.iter().map(|(k, v)| (*k, v)).collect();
    props.sort_by(|a, b| a.0.cmp(b.0));
    if s.embedded_resource {
        // apiVersion/kind/metadata are always kept by the server inside embedded resources, so
        // they are typed even when the schema doesn't list them; the rest follows the schema.
        let mut reserved = BTreeSet::new();
        let mut extra: Vec<Field> = Vec::new();
        for (wire, ident) in [("apiVersion", "api_version"), ("kind", "kind")] {
            if !s.has_property(wire) {
                reserved.insert(ident.to_string());
                extra.push(Field {
                    ident: ident.into(),
                    wire: wire.into(),
                    ty: Ty::String,
                    presence: Presence::Optional,
                    docs: Vec::new(),
                });
            }
        }
        if !s.has_property("metadata") {
            reserved.insert("metadata".into());
            extra.push(Field {
                ident: "metadata".into(),
                wire: "metadata".into(),
                ty: Ty::Map(Box::new(Ty::Json)),
                presence: Presence::Optional,
                docs: Vec::new(),
            });
        }
        let (mut fields, flatten) = struct_fields(cx, name, s, &props, reserved)?;
        fields.extend(extra);
        fields.sort_by(|a, b| a.wire.cmp(&b.wire));
        return Ok(cx.push(name.to_string(), s, TypeBody::Struct { fields, flatten }));
    }
    if cx.known_types
        && let Some(known) = super::known::match_known(s)
    {
        return Ok(Ty::Known(known));
    }
    if props.is_empty() {
        // Never an empty struct: a property-less object keeps whatever it holds.
        return Ok(match &s.additional_properties {
            Some(AdditionalProperties::Schema(ap)) => Ty::Map(Box::new(value_ty(cx, ap, name)?)),
            _ => Ty::Map(Box::new(Ty::Json)),
        });
    }
    let (fields, flatten) = struct_fields(cx, name, s, &props, BTreeSet::new())?;
    Ok(cx.push(name.to_string(), s, TypeBody::Struct { fields, flatten }))
}
