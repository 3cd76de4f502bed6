//! Structural-schema handling as the API server does it: validation (422 causes), pruning, defaulting.
//! (STUB: signatures fixed, bodies being written.)
use serde_json::Value;

/// One field error, rendered into a `Status.details.causes` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueTypeInvalid`, ...
    pub reason: String,
    pub message: String,
    /// Field path as the server prints it, e.g. `spec.replicas`.
    pub field: String,
}

/// Validates `obj` (a whole custom resource) against the version's `openAPIV3Schema`.
pub fn validate(_schema: &Value, _obj: &Value) -> Vec<Cause> {
    Vec::new()
}

/// Removes fields the structural schema does not declare (keeps apiVersion/kind/metadata at the root,
/// everything under `x-kubernetes-preserve-unknown-fields`, and embedded resources' apiVersion/kind/metadata).
pub fn prune(_schema: &Value, _obj: &mut Value) {}

/// Fills `default`s from the schema, as the server does on create/update and on read.
pub fn apply_defaults(_schema: &Value, _obj: &mut Value) {}
