//! The causes of failed rules, worded as kube-apiserver 1.35 words them (observed against a real
//! server: a scalar's value is printed, an object's or list's is not; the reason picks the
//! error type; evaluation errors name the schema type and the rule).
use kube_cel::cel::ExecutionError;
use serde_json::Value;

use super::{Rule, rule_error_string};
use crate::Cause;
use crate::gofmt::{go_error_value, go_quote};
use crate::object::node::Node;

/// The cause of a rule that evaluated to `false`.
pub(super) fn failed(
    path: Option<&str>,
    field_path: Option<&str>,
    x: &Value,
    detail: &str,
    reason: Option<&str>,
) -> Cause {
    let field = match field_path {
        Some(fp) => join(path, &normalize_field_path(fp)),
        None => path.unwrap_or("<nil>").to_string(),
    };
    // The value is shown for scalars only.
    let shown = match x {
        Value::Object(_) | Value::Array(_) => None,
        v => Some(go_error_value(v)),
    };
    let with_value = |kind: &str, detail: &str| match &shown {
        Some(v) if detail.is_empty() => format!("{kind}: {v}"),
        Some(v) => format!("{kind}: {v}: {detail}"),
        None if detail.is_empty() => kind.to_string(),
        None => format!("{kind}: {detail}"),
    };
    match reason.unwrap_or("FieldValueInvalid") {
        "FieldValueForbidden" => {
            Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
        }
        "FieldValueRequired" => Cause::new(
            "FieldValueRequired",
            field,
            format!("Required value: {detail}"),
        ),
        "FieldValueDuplicate" => Cause::new(
            "FieldValueDuplicate",
            field,
            with_value("Duplicate value", ""),
        ),
        _ => Cause::new(
            "FieldValueInvalid",
            field,
            with_value("Invalid value", detail),
        ),
    }
}

/// A rule whose result is not a boolean.
pub(super) fn not_bool(path: Option<&str>, s: Option<Node<'_>>, rule: &Rule) -> Cause {
    invalid_typed(
        path,
        s,
        &format!(
            "rule did not evaluate to a bool: {}",
            rule_error_string(rule)
        ),
    )
}

/// A rule whose evaluation failed (`no such key`, overflow, ...), as cel-go words the error.
pub(super) fn runtime_error(
    path: Option<&str>,
    s: Option<Node<'_>>,
    rule: &Rule,
    e: &ExecutionError,
) -> Cause {
    let rule_text = rule_error_string(rule);
    let detail = if no_such_overload(e) {
        format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
        )
    } else {
        format!("{} evaluating rule: {rule_text}", cel_go_error(e))
    };
    invalid_typed(path, s, &detail)
}

/// A rule whose evaluation went over the per-call cost limit: no further rule runs.
pub(super) fn call_cost_exceeded(path: Option<&str>, s: Option<Node<'_>>, rule: &Rule) -> Cause {
    invalid_typed(
        path,
        s,
        &format!(
            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule_error_string(rule)
        ),
    )
}

/// The object's rules together went over the runtime budget: no further rule runs.
pub(super) fn budget_exhausted(path: Option<&str>, s: Option<Node<'_>>) -> Cause {
    invalid_typed(
        path,
        s,
        "validation failed due to running out of cost budget, no further validation rules will be run",
    )
}

/// `field.Invalid(path, <schema type>, detail)`.
fn invalid_typed(path: Option<&str>, s: Option<Node<'_>>, detail: &str) -> Cause {
    let ty = s
        .and_then(|n| {
            if n.int_or_string() {
                Some("integer")
            } else {
                n.type_()
            }
        })
        .unwrap_or("object");
    Cause::new(
        "FieldValueInvalid",
        path.unwrap_or("<nil>"),
        format!("Invalid value: {}: {detail}", go_quote(ty)),
    )
}

/// A runtime error as cel-go's evaluation returns it to admission (`expression '...' resulted
/// in error: <this>`): the overload family is cel-go's `no such overload`.
pub fn cel_go_runtime_error(e: &ExecutionError) -> String {
    if no_such_overload(e) {
        "no such overload".into()
    } else {
        cel_go_error(e)
    }
}

/// The interpreter's errors cel-go reports as `no such overload` (operands or a target no
/// function takes).
fn no_such_overload(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::NoSuchOverload
            | ExecutionError::UnsupportedBinaryOperator(..)
            | ExecutionError::UnsupportedUnaryOperator(..)
            | ExecutionError::ValuesNotComparable(..)
            | ExecutionError::UnexpectedType { .. }
            | ExecutionError::UnsupportedTargetType { .. }
            | ExecutionError::NotSupportedAsMethod { .. }
    )
}

/// cel-go's wording of the common runtime errors.
fn cel_go_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
        // cel-go converts the string and fails with its generic conversion error.
        ExecutionError::FunctionError { function, .. } if function == "duration" => {
            "type conversion error from 'string' to 'google.protobuf.Duration'".into()
        }
        ExecutionError::FunctionError { function, .. } if function == "timestamp" => {
            "type conversion error from 'string' to 'google.protobuf.Timestamp'".into()
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn join(path: Option<&str>, rest: &str) -> String {
    match path {
        None => rest.to_string(),
        Some(p) if rest.starts_with('[') => format!("{p}{rest}"),
        Some(p) => format!("{p}.{rest}"),
    }
}

/// A rule's `fieldPath` (`.spec.foo`, `.ports['http']`) as a relative `field.Path` string
/// (`spec.foo`, `ports.http`).
fn normalize_field_path(fp: &str) -> String {
    let mut out = String::new();
    let mut rest = fp.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            push_child(&mut out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            let inner = &r[..end];
            let quoted = inner.len() >= 2
                && (inner.starts_with('\'') && inner.ends_with('\'')
                    || inner.starts_with('"') && inner.ends_with('"'));
            if quoted {
                push_child(&mut out, &inner[1..inner.len() - 1]);
            } else {
                out.push_str(&format!("[{inner}]"));
            }
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            push_child(&mut out, &rest[..end]);
            rest = &rest[end..];
        }
    }
    out
}

fn push_child(out: &mut String, name: &str) {
    if !out.is_empty() {
        out.push('.');
    }
    out.push_str(name);
}
