//! Well-known Kubernetes shapes: where a schema node is exactly one of apimachinery's or
//! core/v1's reference types, the field uses `k8s-openapi`'s type instead of a new struct, as
//! a Go CRD would use `metav1.Condition` (prost-build's `extern_path`, applied by shape).
//!
//! "Exactly" is strict, because round trip is the contract: the node is a plain object (not
//! nullable, no preserved unknown fields, no additional properties) whose properties are the
//! type's properties, each with the type's JSON type; and every field `k8s-openapi` holds
//! without an `Option` is `required` or defaulted in the schema (its deserializer fills a
//! missing one with `""`, which would re-serialize a field that was never sent). `--no-known-types`
//! turns the substitution off.

use super::KnownType;
use kube_codegen_crd::schema::Schema;

/// One property of a known type: wire name, JSON type (`"string-date-time"` for a
/// `metav1.Time`), and whether `k8s-openapi` holds it without an `Option`.
type Prop = (&'static str, &'static str, bool);

const SHAPES: &[(KnownType, &[Prop])] = &[
    (
        KnownType::Condition,
        &[
            ("lastTransitionTime", "string-date-time", true),
            ("message", "string", true),
            ("observedGeneration", "integer", false),
            ("reason", "string", true),
            ("status", "string", true),
            ("type", "string", true),
        ],
    ),
    (
        KnownType::LabelSelector,
        &[
            ("matchExpressions", "array-requirements", false),
            ("matchLabels", "map-string", false),
        ],
    ),
    (
        KnownType::ObjectReference,
        &[
            ("apiVersion", "string", false),
            ("fieldPath", "string", false),
            ("kind", "string", false),
            ("name", "string", false),
            ("namespace", "string", false),
            ("resourceVersion", "string", false),
            ("uid", "string", false),
        ],
    ),
    (
        KnownType::OwnerReference,
        &[
            ("apiVersion", "string", true),
            ("blockOwnerDeletion", "boolean", false),
            ("controller", "boolean", false),
            ("kind", "string", true),
            ("name", "string", true),
            ("uid", "string", true),
        ],
    ),
    (KnownType::LocalObjectReference, &[("name", "string", true)]),
    (
        KnownType::SecretKeySelector,
        &[
            ("key", "string", true),
            ("name", "string", true),
            ("optional", "boolean", false),
        ],
    ),
    (
        KnownType::ConfigMapKeySelector,
        &[
            ("key", "string", true),
            ("name", "string", true),
            ("optional", "boolean", false),
        ],
    ),
];

/// `metav1.LabelSelectorRequirement`, the items of `matchExpressions`.
const REQUIREMENT: &[Prop] = &[
    ("key", "string", true),
    ("operator", "string", true),
    ("values", "array-string", false),
];

/// The known type `s` is exactly, if any.
pub fn match_known(s: &Schema) -> Option<KnownType> {
    SHAPES
        .iter()
        .find(|(_, props)| is_object_of(s, props))
        .map(|(k, _)| *k)
}

/// A plain object with exactly `props`, each of its type, the non-`Option` ones required or
/// defaulted.
fn is_object_of(s: &Schema, props: &[Prop]) -> bool {
    if s.effective_type() != Some("object")
        || s.nullable
        || s.preserve_unknown_fields
        || s.embedded_resource
        || s.int_or_string
        || s.additional_properties.is_some()
        || !s.any_of.is_empty()
        || !s.one_of.is_empty()
        || !s.all_of.is_empty()
        || s.properties.len() != props.len()
    {
        return false;
    }
    props.iter().all(|(name, ty, held)| {
        let Some((_, p)) = s.properties.iter().find(|(k, _)| k == name) else {
            return false;
        };
        let present = s.required.contains(name) || p.default.is_some();
        (!held || present) && !p.nullable && is_of(p, ty)
    })
}

fn plain(s: &Schema, ty: &str) -> bool {
    s.type_ == Some(ty)
        && !s.nullable
        && !s.preserve_unknown_fields
        && !s.int_or_string
        && s.any_of.is_empty()
        && s.one_of.is_empty()
        && s.properties.is_empty()
        && s.items.is_none()
        && s.additional_properties.is_none()
}

fn is_of(s: &Schema, ty: &str) -> bool {
    match ty {
        // `metav1.Time` is RFC 3339 at second precision on the wire; `format` says so.
        "string-date-time" => plain(s, "string") && s.format == Some("date-time"),
        "string" | "boolean" | "integer" => plain(s, ty),
        "array-string" => {
            s.type_ == Some("array")
                && !s.nullable
                && s.items.as_deref().is_some_and(|i| plain(i, "string"))
        }
        "array-requirements" => {
            s.type_ == Some("array")
                && !s.nullable
                && s.items
                    .as_deref()
                    .is_some_and(|i| is_object_of(i, REQUIREMENT))
        }
        "map-string" => {
            s.type_ == Some("object")
                && !s.nullable
                && !s.preserve_unknown_fields
                && s.properties.is_empty()
                && matches!(
                    &s.additional_properties,
                    Some(kube_codegen_crd::schema::AdditionalProperties::Schema(v)) if plain(v, "string")
                )
        }
        _ => false,
    }
}
