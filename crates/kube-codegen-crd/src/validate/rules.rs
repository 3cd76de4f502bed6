//! `x-kubernetes-validations`: the entry checks (`rule`, `message`, `messageExpression`,
//! `reason`, `fieldPath`) and, when the schema around them is valid, the compilation of `rule`
//! and `messageExpression` — here a CEL syntax check ([`super::cel_syntax`]) plus the `oldSelf`
//! rules; CEL type checking and cost estimation are not done.

use super::Violation;
use super::model::{Schema, ValidationRule};
use super::path::Path;
use super::render::{invalid, not_supported, q, required};
use super::schema_path::valid_field_path;
use super::structural::new_structural_error;
use super::{cel_fields, cel_syntax};

const SUPPORTED_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// `%#v` of the rule as the server prints it in compile errors.
fn render_rule(r: &ValidationRule) -> String {
    let reason = match &r.reason {
        Some(x) => q(x),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".into(),
    };
    let optional = match r.optional_old_self {
        Some(b) => b.to_string(),
        None => "(*bool)(nil)".into(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        q(&r.rule),
        q(&r.message),
        q(&r.message_expression),
        q(&r.field_path)
    )
}

/// The per-entry checks that do not need CEL (schema errors).
pub(crate) fn validate_rule_fields(s: &Schema, path: &Path, out: &mut Vec<Violation>) {
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = rule.message.trim();
        if trimmed_rule.is_empty() {
            out.push(Violation::new(required(
                &rp.child("rule"),
                "rule is not specified",
            )));
        } else if !rule.message.is_empty() && trimmed_msg.is_empty() {
            out.push(Violation::new(invalid(
                &rp.child("message"),
                &q(&rule.message),
                "message must be non-empty if specified",
            )));
        } else if has_newlines(trimmed_msg) {
            out.push(Violation::new(invalid(
                &rp.child("message"),
                &q(&rule.message),
                "message must not contain line breaks",
            )));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            out.push(Violation::new(required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            )));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            out.push(Violation::new(required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            )));
        }
        if let Some(reason) = &rule.reason
            && !SUPPORTED_REASONS.contains(&reason.as_str())
        {
            out.push(Violation::new(not_supported(
                &rp.child("reason"),
                &q(reason),
                SUPPORTED_REASONS,
            )));
        }
        let fp = &rule.field_path;
        if !fp.is_empty() && fp.trim().is_empty() {
            out.push(Violation::new(invalid(
                &rp.child("fieldPath"),
                &q(fp),
                "fieldPath must be non-empty if specified",
            )));
        }
        if has_newlines(fp) {
            out.push(Violation::new(invalid(
                &rp.child("fieldPath"),
                &q(fp),
                "fieldPath must not contain line breaks",
            )));
        }
        if !fp.is_empty() && !path_valid(s, fp) {
            out.push(Violation::new(invalid(
                &rp.child("fieldPath"),
                &q(fp),
                "fieldPath must be a valid path",
            )));
        }
    }
}

/// `pathValid`: checked only when the node converts to a structural schema.
fn path_valid(s: &Schema, fp: &str) -> bool {
    if new_structural_error(s).is_some() {
        return true;
    }
    valid_field_path(fp, s, true).is_ok()
}

/// The compilation step (CEL errors): syntax of `rule` and `messageExpression`, and `oldSelf`.
pub(crate) fn compile_rules(
    s: &Schema,
    path: &Path,
    is_root: bool,
    uncorrelatable: Option<&Path>,
    out: &mut Vec<Violation>,
) {
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let uses_old_self = match cel_syntax::parse(&rule.rule) {
            Ok(parsed) => {
                if let Some(e) = cel_fields::undefined_field(&rule.rule, s, is_root) {
                    out.push(Violation::new(invalid(
                        &rp.child("rule"),
                        &render_rule(rule),
                        &format!("compilation failed: {e}"),
                    )));
                }
                parsed.uses_old_self
            }
            Err(e) => {
                out.push(Violation::new(invalid(
                    &rp.child("rule"),
                    &render_rule(rule),
                    &format!("compilation failed: {e}"),
                )));
                false
            }
        };
        if !rule.message_expression.is_empty() {
            let error = match cel_syntax::parse(&rule.message_expression) {
                Err(e) => Some(e),
                Ok(_) => cel_fields::undefined_field(&rule.message_expression, s, is_root),
            };
            if let Some(e) = error {
                out.push(Violation::new(invalid(
                    &rp.child("messageExpression"),
                    &render_rule(rule),
                    &format!("messageExpression compilation failed: {e}"),
                )));
            }
        }
        if uses_old_self {
            if let Some(up) = uncorrelatable {
                out.push(Violation::new(invalid(
                    &rp.child("rule"),
                    &q(&rule.rule),
                    &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {up}"),
                )));
            }
        } else if let Some(b) = rule.optional_old_self {
            out.push(Violation::new(invalid(
                &rp.child("optionalOldSelf"),
                &b.to_string(),
                "may not be set if oldSelf is not used in rule",
            )));
        }
    }
}
