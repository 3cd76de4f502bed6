//! Structural schemas: `NewStructural` (what cannot be converted at all) and `ValidateStructural`
//! (`validateStructuralInvariants` and `validateStructuralCompleteness`). A junctor (`allOf`,
//! `anyOf`, `oneOf`, `not`) may only restate value validations of what the structural part
//! already specifies.

use crate::Cause;

use super::go_regex::go_regexp_error;
use super::model::{Items, Schema};
use super::path::Path;
use super::render::{forbidden, invalid, q, required};

/// Why `NewStructural` fails, if it does (checked in its traversal order).
pub(crate) fn new_structural_error(s: &Schema) -> Option<String> {
    structural_node(s)
}

fn unsupported(s: &Schema) -> Option<String> {
    let field = if !s.id.is_empty() {
        "id"
    } else if !s.schema.is_empty() {
        "schema"
    } else if s.ref_.as_deref().is_some_and(|r| !r.is_empty()) {
        "$ref"
    } else if !s.pattern_properties.is_empty() {
        "patternProperties"
    } else if !s.dependencies.is_empty() {
        "dependencies"
    } else if s.additional_items.is_some() {
        "additionalItems"
    } else if !s.definitions.is_empty() {
        "definitions"
    } else {
        return None;
    };
    Some(format!("OpenAPIV3Schema '{field}' is not supported"))
}

/// `NewStructural` and `newNestedValueValidation` fail on the same things.
fn structural_node(s: &Schema) -> Option<String> {
    if s.unreadable {
        return None;
    }
    if let Some(e) = unsupported(s) {
        return Some(e);
    }
    // newValueValidation
    if let Some(not) = &s.not
        && let Some(e) = structural_node(not)
    {
        return Some(e);
    }
    for x in s.all_of.iter().chain(&s.any_of).chain(&s.one_of) {
        if let Some(e) = structural_node(x) {
            return Some(e);
        }
    }
    // newGenerics
    if let Some(ap) = s.additional_properties_schema()
        && let Some(e) = structural_node(ap)
    {
        return Some(e);
    }
    // newExtensions
    if s.x_preserve_unknown_fields == Some(false) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    match &s.items {
        Some(Items::Array(a)) if !a.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
        }
        Some(Items::Schema(i)) => {
            if let Some(e) = structural_node(i) {
                return Some(e);
            }
        }
        _ => {}
    }
    for p in s.properties.values() {
        if let Some(e) = structural_node(p) {
            return Some(e);
        }
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`, errors sorted by their text as the server sorts them. Call only when
/// [`new_structural_error`] found nothing.
pub(crate) fn validate_structural(path: &Path, s: &Schema) -> Vec<Cause> {
    let mut out = Vec::new();
    invariants(s, Level::Root, path, &mut out);
    completeness(s, path, &mut out);
    out.sort_by_key(|c| c.to_string());
    out
}

fn invariants(s: &Schema, lvl: Level, path: &Path, out: &mut Vec<Cause>) {
    if s.unreadable {
        return;
    }
    if s.type_ == "array" && s.items.is_none() {
        out.push(required(&path.child("items"), "must be specified"));
    }
    if let Some(Items::Schema(i)) = &s.items {
        invariants(i, Level::Item, &path.child("items"), out);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &path.child("properties").key(k), out);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            out.push(forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(x) = &ap.schema {
            invariants(x, Level::Field, &path.child("additionalProperties"), out);
        }
    }
    // validateExtensions
    if s.x_int_or_string && s.preserves_unknown() {
        out.push(invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        out.push(invalid(
            &path.child("x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|a| is_int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, path, out);

    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    if s.x_embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_.is_empty() {
            out.push(required(&path.child("type"), detail));
        } else {
            out.push(invalid(&path.child("type"), &q(&s.type_), detail));
        }
    } else if s.type_.is_empty() && !s.x_int_or_string && !s.preserves_unknown() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(required(&path.child("type"), detail));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        out.push(forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        out.push(invalid(
            &path.child("type"),
            &q(&s.type_),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(name)
                && p.type_ != "string"
            {
                out.push(invalid(
                    &path.child("properties").key(name).child("type"),
                    &q(&p.type_),
                    "must be string",
                ));
            }
        }
    }
    if let Some(metadata) = s.properties.get("metadata") {
        metadata_invariants(
            metadata,
            check_metadata,
            lvl,
            &path.child("properties").key("metadata"),
            out,
        );
    }
    if s.x_embedded_resource && !s.preserves_unknown() && s.properties.is_empty() {
        out.push(required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(
    s: &Schema,
    check_metadata: bool,
    lvl: Level,
    path: &Path,
    out: &mut Vec<Cause>,
) {
    if check_metadata && s.type_ != "object" {
        out.push(invalid(&path.child("type"), &q(&s.type_), "must be object"));
    }
    if lvl == Level::Root {
        let only_names = !s.properties.is_empty()
            && s.properties.len() <= 2
            && s.properties
                .keys()
                .all(|k| k == "name" || k == "generateName");
        // everything but type, default and (name, generateName) properties must be unset
        let mut rest = s.clone();
        rest.type_.clear();
        rest.default = None;
        // not kept by NewStructural
        rest.external_docs = None;
        rest.example = None;
        if only_names {
            rest.properties.clear();
        }
        if rest != Schema::default() {
            out.push(forbidden(
                path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

/// `anyOf: [{type: integer}, {type: string}]` exactly.
fn is_int_or_string_any_of(any_of: &[Schema]) -> bool {
    let only_type = |s: &Schema, t: &str| {
        let mut rest = s.clone();
        rest.type_.clear();
        s.type_ == t && rest == Schema::default()
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// `validateValueValidation` over the junctors and the pattern of `s`.
fn value_validation(
    s: &Schema,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &Path,
    out: &mut Vec<Cause>,
) {
    if !skip_any_of {
        for (i, x) in s.any_of.iter().enumerate() {
            nested(x, false, false, lvl, &path.child("anyOf").index(i), out);
        }
    }
    for (i, x) in s.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(x, skip, false, lvl, &path.child("allOf").index(i), out);
    }
    for (i, x) in s.one_of.iter().enumerate() {
        nested(x, false, false, lvl, &path.child("oneOf").index(i), out);
    }
    if let Some(not) = &s.not {
        nested(not, false, false, lvl, &path.child("not"), out);
    }
    if !s.pattern.is_empty()
        && let Some(e) = go_regexp_error(&s.pattern)
    {
        out.push(invalid(
            &path.child("pattern"),
            &q(&s.pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: a junctor may only hold value validations.
fn nested(
    v: &Schema,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    lvl: Level,
    path: &Path,
    out: &mut Vec<Cause>,
) {
    if v.unreadable {
        return;
    }
    value_validation(v, skip_any_of, skip_all_of_any_of, lvl, path, out);
    if let Some(Items::Schema(i)) = &v.items {
        nested(i, false, false, lvl, &path.child("items"), out);
    }
    for (k, p) in &v.properties {
        nested(
            p,
            false,
            false,
            Level::Field,
            &path.child("properties").key(k),
            out,
        );
    }
    if !v.type_.is_empty() {
        out.push(forbidden(
            &path.child("type"),
            "must be empty to be structural",
        ));
    }
    if v.additional_properties.is_some() {
        out.push(forbidden(
            &path.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.is_some() {
        out.push(forbidden(
            &path.child("default"),
            "must be undefined to be structural",
        ));
    }
    if !v.title.is_empty() {
        out.push(forbidden(
            &path.child("title"),
            "must be empty to be structural",
        ));
    }
    if !v.description.is_empty() {
        out.push(forbidden(
            &path.child("description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        out.push(forbidden(
            &path.child("nullable"),
            "must be false to be structural",
        ));
    }
    if v.preserves_unknown() {
        out.push(forbidden(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.x_embedded_resource {
        out.push(forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.x_int_or_string {
        out.push(forbidden(
            &path.child("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !v.x_list_map_keys.is_empty() {
        out.push(forbidden(
            &path.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.x_list_type.is_some() {
        out.push(forbidden(
            &path.child("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.x_map_type.is_some() {
        out.push(forbidden(
            &path.child("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !v.x_validations.is_empty() {
        out.push(forbidden(
            &path.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.properties.contains_key("metadata") {
        out.push(forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: fields and items named in the root's junctors must exist in
/// the structural part.
fn completeness(s: &Schema, path: &Path, out: &mut Vec<Cause>) {
    value_completeness(s, Some(s), path, path, out);
}

fn value_completeness(
    v: &Schema,
    s: Option<&Schema>,
    s_path: &Path,
    v_path: &Path,
    out: &mut Vec<Cause>,
) {
    let Some(s) = s else {
        out.push(required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_path, &v_path.child("not"), out);
    }
    for (i, x) in v.all_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("allOf").index(i), out);
    }
    for (i, x) in v.any_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("anyOf").index(i), out);
    }
    for (i, x) in v.one_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("oneOf").index(i), out);
    }
}

fn nested_completeness(
    v: &Schema,
    s: Option<&Schema>,
    s_path: &Path,
    v_path: &Path,
    out: &mut Vec<Cause>,
) {
    if v.unreadable {
        return;
    }
    let Some(s) = s else {
        out.push(required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    value_completeness(v, Some(s), s_path, v_path, out);
    if let Some(Items::Schema(vi)) = &v.items {
        nested_completeness(
            vi,
            s.items_schema(),
            &s_path.child("items"),
            &v_path.child("items"),
            out,
        );
    }
    for (k, vf) in &v.properties {
        match s.properties.get(k) {
            None => out.push(required(
                &s_path.child("properties").key(k),
                &format!(
                    "because it is defined in {}",
                    v_path.child("properties").key(k)
                ),
            )),
            Some(sf) => nested_completeness(
                vf,
                Some(sf),
                &s_path.child("properties").key(k),
                &v_path.child("properties").key(k),
                out,
            ),
        }
    }
}
