//! `x-kubernetes-validations`: the entry checks (`rule`, `message`, `messageExpression`,
//! `reason`, `fieldPath`) and, when the schema around them is valid, the compilation of `rule`
//! and `messageExpression`: syntax ([`super::cel_syntax`]), types and estimated cost
//! ([`super::cel_check`]), and the `oldSelf` rules.

use super::Violation;
use super::cel_check::{self, TotalCost, expression_cost};
use super::cel_syntax;
use super::model::{Schema, ValidationRule};
use super::path::Path;
use super::render::{forbidden, invalid, not_supported, q, required};
use super::schema_path::valid_field_path;
use super::structural::new_structural_error;
use crate::object::cel::check::{self, OldSelf};

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

/// The compilation step (CEL errors), per rule in the server's order: the rule's estimated
/// cost, its compile errors, then its `messageExpression`'s, then the `oldSelf` rules.
/// `cardinality` is how often the node can occur in one object (`None`: unbounded).
pub(crate) fn compile_rules(
    s: &Schema,
    path: &Path,
    is_root: bool,
    uncorrelatable: Option<&Path>,
    cardinality: Option<u64>,
    costs: &mut TotalCost,
    out: &mut Vec<Violation>,
) {
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let old = if rule.optional_old_self == Some(true) {
            OldSelf::Optional
        } else {
            OldSelf::Plain
        };
        let parsed = cel_syntax::parse(&rule.rule);
        let compiled = parsed
            .as_ref()
            .ok()
            .and_then(|_| cel_check::compile(&rule.rule, s, is_root, old, false));
        let rule_error = match (&parsed, &compiled) {
            (Err(e), _) => Some(format!("compilation failed: {e}")),
            (Ok(_), Some(c)) => match &c.errors {
                Some(e) => Some(format!("compilation failed: {e}")),
                None if c.wrong_result => Some("cel expression must evaluate to a bool".into()),
                None => None,
            },
            (Ok(_), None) => None,
        };
        let cost = match (&rule_error, &compiled) {
            (None, Some(c)) => expression_cost(c.cost, s, cardinality),
            _ => 0,
        };
        if cost > check::STATIC_RULE_LIMIT {
            out.push(Violation::new(forbidden(
                &rp.child("rule"),
                &check::over_budget("estimated rule cost", cost, check::STATIC_RULE_LIMIT),
            )));
        }
        costs.observe(rp.child("rule"), cost);
        if let Some(e) = &rule_error {
            out.push(Violation::new(invalid(
                &rp.child("rule"),
                &render_rule(rule),
                e,
            )));
        }
        // The server compiles messageExpression only once the rule compiled.
        if rule_error.is_none() && !rule.message_expression.is_empty() {
            let mp = rp.child("messageExpression");
            let expr = &rule.message_expression;
            let compiled = match cel_syntax::parse(expr) {
                Err(e) => Err(format!("messageExpression compilation failed: {e}")),
                Ok(_) => match cel_check::compile(expr, s, is_root, old, true) {
                    Some(c) => match &c.errors {
                        Some(e) => Err(format!("messageExpression compilation failed: {e}")),
                        None if c.wrong_result => {
                            Err("messageExpression must evaluate to a string".into())
                        }
                        None => Ok(c.cost),
                    },
                    None => Ok(0),
                },
            };
            match compiled {
                Err(e) => out.push(Violation::new(invalid(&mp, &render_rule(rule), &e))),
                Ok(cost) => {
                    if cost > check::STATIC_RULE_LIMIT {
                        out.push(Violation::new(forbidden(
                            &mp,
                            &check::over_budget(
                                "estimated messageExpression cost",
                                cost,
                                check::STATIC_RULE_LIMIT,
                            ),
                        )));
                    }
                    costs.observe(mp, cost);
                }
            }
        }
        let uses_old_self = parsed.as_ref().is_ok_and(|p| p.uses_old_self);
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
