//! Structural-schema handling as the API server does it: validation (422 causes), pruning, defaulting.
//!
//! The input is a CRD version's `openAPIV3Schema` as plain JSON. Only the structural skeleton
//! (`type`, `properties`, `additionalProperties`, `items` and the `x-kubernetes-*` extensions)
//! decides which fields exist; `allOf`/`anyOf`/`oneOf`/`not` only add value validations, exactly
//! as in apiextensions-apiserver.
use serde_json::Value;

mod defaults;
mod gofmt;
pub mod jsonpath;
mod listtype;
mod node;
mod prune;
#[cfg(test)]
mod tests;
mod validate;

pub(crate) use gofmt::go_number;

/// Hostile inputs can nest objects arbitrarily deep; every walk stops here instead of
/// exhausting the stack. Real CRD schemas and objects stay far below this.
pub(crate) const MAX_DEPTH: usize = 128;

/// One field error (`Status.details.causes`): one definition, shared with the generator's CRD
/// validation.
pub use kube_codegen_crd::Cause;

/// Validates `obj` (a whole custom resource) against the version's `openAPIV3Schema`.
/// Run it on the pruned and defaulted object, as the server does.
pub fn validate(schema: &Value, obj: &Value) -> Vec<Cause> {
    let mut causes = validate::validate(schema, obj);
    listtype::check(node::Node(schema), obj, "", 0, &mut causes);
    causes
}

/// Removes fields the structural schema does not declare (keeps apiVersion/kind/metadata at the root,
/// everything under `x-kubernetes-preserve-unknown-fields`, and embedded resources' apiVersion/kind/metadata).
/// Also drops `null`s of non-nullable fields that have no default, and reduces an embedded resource's
/// metadata to what an `ObjectMeta` round trip keeps (the server's coercion steps).
pub fn prune(schema: &Value, obj: &mut Value) {
    prune::prune_object(schema, obj, None);
    prune::prune_nulls(Some(node::Node(schema)), obj, 0);
}

/// Like [`prune`], and returns the paths of the unknown fields it removed
/// (`spec.foo`, `spec.items[0].bar`), sorted, as `fieldValidation=Strict|Warn` reports them:
/// `unknown field "spec.foo"`.
pub fn prune_unknown_fields(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    prune::prune_object(schema, obj, Some(&mut unknown));
    prune::prune_nulls(Some(node::Node(schema)), obj, 0);
    unknown.sort();
    unknown
}

/// `fieldValidation=Warn` (the server's default): the text of one `Warning` header per unknown field,
/// `unknown field "spec.foo"`.
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {path:?}")
}

/// `fieldValidation=Strict` (kubectl's default): the message of the 400 BadRequest for a body with
/// unknown fields, e.g. `CronTab in version "v1" cannot be handled as a CronTab: strict decoding
/// error: unknown field "spec.foo"`.
pub fn strict_decoding_error(kind: &str, version: &str, unknown: &[String]) -> String {
    let fields: Vec<String> = unknown.iter().map(|p| unknown_field_warning(p)).collect();
    format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        fields.join(", ")
    )
}

/// Why [`prune_with_field_validation`] refused a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValidationError {
    /// `Strict` with unknown fields: the message of the 400 BadRequest.
    UnknownFields(String),
    /// A directive the server does not know: the cause message of the 422 on `fieldValidation`
    /// (`CreateOptions.meta.k8s.io "" is invalid: fieldValidation: <this>`).
    Unsupported(String),
}

/// Prunes `obj` under a `fieldValidation` directive (`Strict`, `Warn`, `Ignore`; empty means the
/// server default `Warn`). `Ok` carries the `Warning` header texts to send. With `Strict` and
/// unknown fields nothing is changed and the error carries the server's message; `kind` and
/// `version` name the resource in it.
pub fn prune_with_field_validation(
    schema: &Value,
    obj: &mut Value,
    directive: &str,
    kind: &str,
    version: &str,
) -> Result<Vec<String>, FieldValidationError> {
    match directive {
        "Ignore" => {
            prune(schema, obj);
            Ok(Vec::new())
        }
        "" | "Warn" => Ok(prune_unknown_fields(schema, obj)
            .iter()
            .map(|p| unknown_field_warning(p))
            .collect()),
        "Strict" => {
            let mut copy = obj.clone();
            let unknown = prune_unknown_fields(schema, &mut copy);
            if unknown.is_empty() {
                *obj = copy;
                Ok(Vec::new())
            } else {
                Err(FieldValidationError::UnknownFields(strict_decoding_error(
                    kind, version, &unknown,
                )))
            }
        }
        other => Err(FieldValidationError::Unsupported(format!(
            "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        ))),
    }
}

/// Rewrites numbers the way the server's JSON round trip does: integers within int64 stay exact,
/// every other number goes through float64, and integral float64 values print without a
/// fraction (`1.0` → `1`, `-0.0` → `0`, `18446744073709551615` → `18446744073709552000`).
/// Compare a sample with what a real server returns only after normalizing both.
pub fn normalize_numbers(obj: &mut Value) {
    gofmt::normalize_numbers(obj);
}

/// Fills `default`s from the schema, as the server does on create/update and on read.
/// A missing field gets its default; an explicit `null` gets it only when the field is not nullable.
/// Defaults are pruned against their own schema before they are inserted.
pub fn apply_defaults(schema: &Value, obj: &mut Value) {
    defaults::apply(schema, obj, 0);
}
