//! A write's schema handling: the `fieldValidation` directives and their messages here; the
//! object checks themselves (pruning, defaulting, OpenAPI values, list types, CEL rules,
//! ratcheting) are `kube_codegen_crd::object`, the validator generated code calls too.
use serde_json::Value;

pub mod jsonpath;
#[cfg(test)]
mod tests;

pub use kube_codegen_crd::object::{
    MAX_DEPTH, ObjectSchema, apply_defaults, go_number, normalize_numbers, prune,
    prune_unknown_fields, validate,
};

/// One field error (`Status.details.causes`): one definition, shared with the generator's CRD
/// validation.
pub use kube_codegen_crd::Cause;

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
    if directive == "Ignore" {
        prune(schema, obj);
        return Ok(Vec::new());
    }
    field_validation(directive, kind, version, obj, |o| {
        prune_unknown_fields(schema, o)
    })
}

/// The `fieldValidation` directives over any pruner (`prune_unknown` removes the fields the type
/// does not declare and returns their paths, sorted): `Ignore` drops them, `Warn` (and none)
/// drops them with a warning each, `Strict` refuses the body.
pub fn field_validation(
    directive: &str,
    kind: &str,
    version: &str,
    obj: &mut Value,
    mut prune_unknown: impl FnMut(&mut Value) -> Vec<String>,
) -> Result<Vec<String>, FieldValidationError> {
    match directive {
        "Ignore" => {
            prune_unknown(obj);
            Ok(Vec::new())
        }
        "" | "Warn" => Ok(prune_unknown(obj)
            .iter()
            .map(|p| unknown_field_warning(p))
            .collect()),
        "Strict" => {
            let mut copy = obj.clone();
            let unknown = prune_unknown(&mut copy);
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
