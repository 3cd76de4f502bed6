//! Client-side validation (`--emit validation`): per kind version, a private `static` holding
//! the version's `openAPIV3Schema` as compact JSON (compiled by the runtime on first use, with
//! the scale subresource's paths when the version has one), and
//! `validate`, `validate_update` and `apply_defaults` methods on the root type, all thin calls
//! into `kube_codegen_runtime::validation`, and the root type's
//! `kube_codegen_runtime::validation::SchemaChecks` impl over them (what the runtime's admission
//! webhooks run before the user's hooks, with the schema itself so they can default the object
//! as sent before its one typed decode), whose `typed_schema_defaults` applies the schema's
//! defaults to the typed object by generated code (`defaults`) and whose `typed_patch` diffs
//! two values field by field (`typed_diff`).
//!
//! The new public names are methods of the root type, which has no other methods (only
//! `SCREAMING_CASE` constants), so they need no collision rule; the static's name,
//! `OPENAPI_V3_SCHEMA`, is private to the kind's module and has underscores, which no
//! generated type name has.

use std::fmt::Write as _;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use super::{allow_deprecated, ident};
use crate::model::Resource;

/// The static and the root type's validation methods.
pub fn kind_items(r: &Resource) -> TokenStream {
    let root = ident(&r.root);
    let allow = allow_deprecated(r);
    let json = schema_json(&r.schema);
    let literal = super::raw_literal(&json).unwrap_or_else(|| proc_macro2::Literal::string(&json));
    let (group, kind) = (&r.group, &r.kind);
    let rt = quote!(::kube_codegen_runtime::validation);
    let typed_defaults = super::defaults::typed_defaults_method(r);
    let typed_diff = super::typed_diff::impls(r);
    let static_doc = format!(
        " The `openAPIV3Schema` of `{}/{}` `{}` (without `description`s), compiled on first use.",
        r.group, r.version, r.kind
    );
    // The scale subresource's paths are checked on every write too.
    let constructor = match &r.scale {
        Some(s) => {
            let (spec, status) = (&s.spec_replicas_path, &s.status_replicas_path);
            let selector = match &s.label_selector_path {
                Some(p) => quote!(Some(#p)),
                None => quote!(None),
            };
            quote!(with_scale(#literal, #group, #kind, #spec, #status, #selector))
        }
        None => quote!(new(#literal, #group, #kind)),
    };
    quote! {
        #[doc = #static_doc]
        static OPENAPI_V3_SCHEMA: #rt::LazySchema = #rt::LazySchema::#constructor;

        #allow
        impl #root {
            /// Checks this object as the API server checks it on create, with the same
            /// validator as `kube-fake-apiserver`: the schema's value checks (types, formats,
            /// bounds, patterns, enums, required fields), list types and the
            /// `x-kubernetes-validations` CEL rules, on a pruned and defaulted copy.
            /// Transition rules (those using `oldSelf`) need [`Self::validate_update`].
            ///
            /// `Err` holds the causes of the server's 422 answer, in its words; `?` turns it
            /// into the `kube::Error` the write would have failed with.
            pub fn validate(&self) -> Result<(), #rt::ValidationErrors> {
                #rt::validate(self, &OPENAPI_V3_SCHEMA)
            }

            /// Checks an update from `old` to this object as the API server does: the checks
            /// of [`Self::validate`] plus the transition rules (`oldSelf`), with validation
            /// ratcheting: a value equal to its counterpart in `old` is not checked again, so
            /// an object stored before a rule tightened can still be updated elsewhere.
            pub fn validate_update(&self, old: &#root) -> Result<(), #rt::ValidationErrors> {
                #rt::validate_update(self, old, &OPENAPI_V3_SCHEMA)
            }

            /// Fills the schema's `default`s into fields that are missing (or `null` where
            /// not nullable), where the API server applies them when it writes or reads the
            /// object. Deserializing never applies them: a value read from JSON is what was
            /// sent. Left unchanged if a default does not fit the type.
            pub fn apply_defaults(&mut self) {
                #rt::apply_defaults(self, &OPENAPI_V3_SCHEMA)
            }
        }

        #allow
        impl #rt::SchemaChecks for #root {
            fn openapi_schema() -> ::std::option::Option<&'static #rt::LazySchema> {
                ::std::option::Option::Some(&OPENAPI_V3_SCHEMA)
            }

            fn schema_defaults(&mut self) {
                self.apply_defaults()
            }

            #typed_defaults

            fn typed_patch_base(&self) -> ::std::option::Option<Self> {
                ::std::option::Option::Some(::std::clone::Clone::clone(self))
            }

            fn typed_patch(
                before: &Self,
                after: &Self,
            ) -> ::std::option::Option<::std::vec::Vec<::kube_codegen_runtime::typed_patch::PatchOperation>> {
                ::kube_codegen_runtime::typed_patch::typed_patch(before, after)
            }

            fn schema_validate(&self) -> ::std::result::Result<(), #rt::ValidationErrors> {
                self.validate()
            }

            fn schema_validate_update(&self, old: &Self) -> ::std::result::Result<(), #rt::ValidationErrors> {
                self.validate_update(old)
            }
        }

        #typed_diff
    }
}

/// The schema as compact JSON with keys sorted (whatever `serde_json` features the build
/// unifies), without `description`s: the validator never reads them, rustdoc carries them, and
/// they are most of a real CRD's schema text (69% of the corpus's). A version without a schema
/// (old v1beta1 CRDs) gets what the generator maps it to: an object that keeps every field.
fn schema_json(schema: &Value) -> String {
    let mut out = String::new();
    if schema.is_null() {
        out.push_str(r#"{"type":"object","x-kubernetes-preserve-unknown-fields":true}"#);
    } else {
        write(schema, Pos::Schema, &mut out);
    }
    out
}

/// What a JSON value is inside a schema.
#[derive(Clone, Copy, PartialEq)]
enum Pos {
    /// A schema node: its `description` is left out.
    Schema,
    /// A map or list of schema nodes (`properties`, `allOf`, tuple `items`).
    Schemas,
    /// Data (`default`, `enum`, `example`, extensions): written whole.
    Data,
}

/// Where the value under `key` of a schema node sits.
fn child_pos(key: &str, v: &Value) -> Pos {
    match (key, v) {
        ("properties", Value::Object(_)) => Pos::Schemas,
        ("items" | "additionalProperties" | "not", Value::Object(_)) => Pos::Schema,
        ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(_)) => Pos::Schemas,
        _ => Pos::Data,
    }
}

/// `v` as compact JSON with keys sorted.
fn write(v: &Value, pos: Pos, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map
                .keys()
                .filter(|k| !(pos == Pos::Schema && *k == "description"))
                .collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                let child = match pos {
                    Pos::Schema => child_pos(k, &map[k]),
                    Pos::Schemas => Pos::Schema,
                    Pos::Data => Pos::Data,
                };
                write(&map[k], child, out);
            }
            out.push('}');
        }
        Value::Array(list) => {
            let child = if pos == Pos::Schemas {
                Pos::Schema
            } else {
                Pos::Data
            };
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, child, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            let _ = write!(out, "{v}");
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    let _ = write!(out, "{}", Value::String(s.to_owned()));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn descriptions_of_schema_nodes_go_and_data_stays() {
        let schema = json!({
            "type": "object",
            "description": "root",
            "properties": {
                "description": {"type": "string", "description": "a field named description"},
                "spec": {
                    "type": "object",
                    "default": {"description": "kept: a default is data"},
                    "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "m\n\"q\""}],
                    "properties": {
                        "list": {"type": "array", "items": {"type": "string", "description": "x"}},
                        "map": {"type": "object", "additionalProperties": {"description": "x", "type": "integer"}},
                        "alt": {"anyOf": [{"description": "x", "minimum": 1}], "not": {"description": "x"}},
                        "e": {"type": "string", "enum": ["b", "a"], "example": {"description": "kept"}},
                    },
                },
            },
        });
        let text = schema_json(&schema);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "spec": {
                        "type": "object",
                        "default": {"description": "kept: a default is data"},
                        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "m\n\"q\""}],
                        "properties": {
                            "list": {"type": "array", "items": {"type": "string"}},
                            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                            "alt": {"anyOf": [{"minimum": 1}], "not": {}},
                            "e": {"type": "string", "enum": ["b", "a"], "example": {"description": "kept"}},
                        },
                    },
                },
            })
        );
        // Compact, keys sorted, no raw line breaks (the text goes into a raw string literal).
        assert!(
            text.starts_with(
                r#"{"properties":{"description":{"type":"string"},"spec":{"default":"#
            )
        );
        assert!(!text.contains(['\n', '\r']));
        assert_eq!(
            schema_json(&Value::Null),
            r#"{"type":"object","x-kubernetes-preserve-unknown-fields":true}"#
        );
    }
}
