//! Custom resources checked against their CRD version's `openAPIV3Schema` as kube-apiserver 1.35
//! checks them on every write: pruning, defaulting, the OpenAPI value checks, list-type
//! uniqueness and the `x-kubernetes-validations` CEL rules, with ratcheting on update.
//!
//! This is the one object validator of the workspace: the in-memory API server admits writes
//! through it and generated code's `validate()` calls it, so both answer with the same causes.
//!
//! Only the structural skeleton (`type`, `properties`, `additionalProperties`, `items` and the
//! `x-kubernetes-*` extensions) decides which fields exist; `allOf`/`anyOf`/`oneOf`/`not` only
//! add value validations, exactly as in apiextensions-apiserver.
//!
//! Order of the checks, as `customResourceStrategy.Validate`: OpenAPI values (`openapi`), the
//! scale subresource's paths when the version has one (`scale`), list types (`listtype`), then
//! CEL (`cel`) — skipped, with one `<nil>` cause, when an earlier cause is of a blocking kind
//! (required, not supported, too long, too many, wrong type).

use serde_json::Value;

use crate::Cause;

pub(crate) mod cel;
#[cfg(test)]
mod cel_tests;
mod correlate;
mod defaults;
mod listtype;
mod node;
mod openapi;
mod prune;
pub mod scale;
#[cfg(test)]
mod tests;

pub use cel::check::typed::{Declared, type_check};
pub use cel::{RuleIssue, RuleIssueKind, cel_go_runtime_error};
pub use defaults::default_of;

/// Hostile inputs can nest objects arbitrarily deep; every walk stops here instead of
/// exhausting the stack. Real CRD schemas and objects stay far below this.
pub const MAX_DEPTH: usize = 128;

/// The cause the server adds when it skips the CEL rules of an invalid object.
pub const RULES_NOT_CHECKED: &str = "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// One CRD version's schema, with its CEL rules compiled once. Cheap to share (`Send + Sync`);
/// build it once per schema and validate many objects with it.
pub struct ObjectSchema {
    schema: Value,
    rules: cel::Rules,
    /// The version's scale subresource, whose paths every write checks too.
    scale: Option<crate::Scale>,
}

impl std::fmt::Debug for ObjectSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSchema")
            .field("rules", &self.rules.count())
            .finish_non_exhaustive()
    }
}

impl PartialEq for ObjectSchema {
    /// Two compiled schemas are equal when their sources are.
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema && self.scale == other.scale
    }
}

impl ObjectSchema {
    /// Compiles the CEL rules of `schema` (a CRD version's `openAPIV3Schema`). Never fails: a
    /// rule that cannot be evaluated here is listed by [`ObjectSchema::rule_issues`] and skipped.
    pub fn new(schema: Value) -> ObjectSchema {
        let rules = cel::Rules::compile(&schema);
        ObjectSchema {
            schema,
            rules,
            scale: None,
        }
    }

    /// The same schema for a version with a scale subresource: writes also check the values at
    /// its paths ([`scale`]).
    pub fn with_scale(mut self, scale: Option<crate::Scale>) -> ObjectSchema {
        self.scale = scale;
        self
    }

    /// The scale subresource given to [`ObjectSchema::with_scale`].
    pub fn scale(&self) -> Option<&crate::Scale> {
        self.scale.as_ref()
    }

    /// The schema this was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the schema carries any `x-kubernetes-validations` rule.
    pub fn has_rules(&self) -> bool {
        self.rules.count() > 0
    }

    /// Whether validation meters the rules' CEL cost: the schema's bounds allow a rule over the
    /// server's per-call limit or all rules of an object over its runtime budget. Otherwise no
    /// object that passes the OpenAPI checks can reach either, and nothing is counted.
    pub fn meters_cost(&self) -> bool {
        self.rules.charged()
    }

    /// Rules that do not compile, or use CEL this build cannot evaluate (skipped when
    /// validating), with their schema location.
    pub fn rule_issues(&self) -> &[RuleIssue] {
        self.rules.issues()
    }

    /// The causes of a 422 for creating `obj` (pruned and defaulted, as the server validates
    /// it); empty when the server would accept it.
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.check(obj, None, true)
    }

    /// The causes of a 422 for updating `old` to `obj`: transition rules see `oldSelf`, and
    /// values equal to their old counterpart are not checked again (validation ratcheting),
    /// except by what the server never ratchets: transition rules, list types, and `allOf`,
    /// `anyOf`, `oneOf`, `not`.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<Cause> {
        self.check(obj, Some(old), true)
    }

    /// [`ObjectSchema::validate_update`] for a write of the status subresource: of the scale
    /// paths only the status side (`statusReplicasPath`, `labelSelectorPath`) is checked.
    pub fn validate_status_update(&self, obj: &Value, old: &Value) -> Vec<Cause> {
        self.check(obj, Some(old), false)
    }

    fn check(&self, obj: &Value, old: Option<&Value>, spec: bool) -> Vec<Cause> {
        let mut causes = openapi::validate(&self.schema, obj, old);
        if let Some(s) = &self.scale {
            if spec {
                scale::spec_causes(s, obj, &mut causes);
            }
            scale::status_causes(s, obj, &mut causes);
        }
        listtype::check(node::Node(&self.schema), obj, "", 0, &mut causes);
        if self.has_rules() {
            if causes.iter().any(is_blocking) {
                causes.push(Cause::new("FieldValueInvalid", "<nil>", RULES_NOT_CHECKED));
            } else {
                self.rules.evaluate(&self.schema, obj, old, &mut causes);
            }
        }
        causes
    }

    /// Fills `default`s, as the server does on create, update and read.
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::apply(&self.schema, obj, 0);
    }

    /// Removes what the structural schema does not declare (see [`prune`]).
    pub fn prune(&self, obj: &mut Value) {
        prune(&self.schema, obj);
    }

    /// `obj` as the server validates and stores a write of it: numbers through its JSON round
    /// trip ([`normalize_numbers`]), pruned, defaulted. (The server's own write path prunes
    /// under a `fieldValidation` directive instead, to report unknown fields.)
    pub fn as_stored(&self, obj: &mut Value) {
        normalize_numbers(obj);
        self.prune(obj);
        self.apply_defaults(obj);
    }
}

/// The kinds of cause after which the server does not run CEL rules (`hasBlockingErr`).
fn is_blocking(c: &Cause) -> bool {
    matches!(
        c.reason.as_str(),
        "FieldValueNotSupported"
            | "FieldValueRequired"
            | "FieldValueTooLong"
            | "FieldValueTooMany"
            | "FieldValueTypeInvalid"
    )
}

/// Validates `obj` (a whole custom resource) against `schema`, compiling its rules for this one
/// call; use an [`ObjectSchema`] to validate many objects. Run it on the pruned and defaulted
/// object, as the server does.
pub fn validate(schema: &Value, obj: &Value) -> Vec<Cause> {
    ObjectSchema::new(schema.clone()).validate(obj)
}

/// Removes fields the structural schema does not declare (keeps apiVersion/kind/metadata at the
/// root, everything under `x-kubernetes-preserve-unknown-fields`, and embedded resources'
/// apiVersion/kind/metadata). Also drops `null`s of non-nullable fields that have no default, and
/// reduces an embedded resource's metadata to what an `ObjectMeta` round trip keeps.
pub fn prune(schema: &Value, obj: &mut Value) {
    prune::prune_object(schema, obj, None);
    prune::prune_nulls(Some(node::Node(schema)), obj, 0);
}

/// Like [`prune`], and returns the paths of the unknown fields it removed
/// (`spec.foo`, `spec.items[0].bar`), sorted, as `fieldValidation=Strict|Warn` reports them.
pub fn prune_unknown_fields(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    prune::prune_object(schema, obj, Some(&mut unknown));
    prune::prune_nulls(Some(node::Node(schema)), obj, 0);
    unknown.sort();
    unknown
}

/// Fills `default`s from the schema, as the server does on create/update and on read.
/// A missing field gets its default; an explicit `null` gets it only when the field is not nullable.
/// Defaults are pruned against their own schema before they are inserted.
pub fn apply_defaults(schema: &Value, obj: &mut Value) {
    defaults::apply(schema, obj, 0);
}

/// Rewrites numbers the way the server's JSON round trip does: integers within int64 stay exact,
/// every other number goes through float64, and integral float64 values print without a
/// fraction. Compare a sample with what a real server returns only after normalizing both.
pub fn normalize_numbers(obj: &mut Value) {
    crate::gofmt::normalize_numbers(obj, MAX_DEPTH);
}

/// A JSON value's number as Go prints the decoded value (`int64` exactly, `float64` with `%v`).
pub fn go_number(v: &Value) -> String {
    match v {
        Value::Number(n) => crate::gofmt::go_number(n),
        other => other.to_string(),
    }
}

/// `field.Path` children: `a.b` for a field, `a[key]` for a map key, `a[3]` for an index.
pub(crate) fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
