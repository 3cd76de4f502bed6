//! Causes in apimachinery's words (`field/errors.go`): `Required value`, `Invalid value: "x": ...`,
//! `Forbidden: ...`, `Unsupported value: "x": supported values: "a", "b"`, `Duplicate value: ...`,
//! with bad values printed as Go's `fmt` prints them (`%q` for strings, `%v` for numbers and
//! booleans, `%#v` for the rest).

use crate::Cause;

use super::path::Path;

/// `Required value[: detail]`.
pub(crate) fn required(path: &Path, detail: &str) -> Cause {
    Cause::new(
        "FieldValueRequired",
        path.as_str(),
        with_detail("Required value", detail),
    )
}

/// `Forbidden[: detail]`.
pub(crate) fn forbidden(path: &Path, detail: &str) -> Cause {
    Cause::new(
        "FieldValueForbidden",
        path.as_str(),
        with_detail("Forbidden", detail),
    )
}

/// `Invalid value: <value>[: detail]`; `value` is already rendered (see [`q`], [`go_json`]).
pub(crate) fn invalid(path: &Path, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path.as_str(),
        with_detail(&format!("Invalid value: {value}"), detail),
    )
}

/// `Invalid value: <value>[: detail]` with reason `FieldValueTypeInvalid`.
pub(crate) fn type_invalid(path: &Path, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueTypeInvalid",
        path.as_str(),
        with_detail(&format!("Invalid value: {value}"), detail),
    )
}

/// `Unsupported value: <value>: supported values: "a", "b"`.
pub(crate) fn not_supported(path: &Path, value: &str, supported: &[&str]) -> Cause {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    Cause::new(
        "FieldValueNotSupported",
        path.as_str(),
        with_detail(&format!("Unsupported value: {value}"), &detail),
    )
}

/// `Duplicate value: <value>`.
pub(crate) fn duplicate(path: &Path, value: &str) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        path.as_str(),
        format!("Duplicate value: {value}"),
    )
}

/// `Too many: <n>: must have at most <max> items`.
pub(crate) fn too_many(path: &Path, actual: usize, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooMany",
        path.as_str(),
        format!("Too many: {actual}: must have at most {max} items"),
    )
}

fn with_detail(head: &str, detail: &str) -> String {
    if detail.is_empty() {
        head.to_string()
    } else {
        format!("{head}: {detail}")
    }
}

/// A string bad value as Go's `%q` prints it.
pub(crate) fn q(s: &str) -> String {
    go_quote(s)
}

pub(crate) use crate::gofmt::{go_json, go_number, go_quote, go_string_slice};
