//! Values printed the way Go's `fmt` prints them: the one implementation lives in
//! `kube-codegen-crd` (the CRD validator words its messages with it too).
use serde_json::Value;

pub(crate) use kube_codegen_crd::gofmt::{go_float, go_quote};

/// A JSON value's number as Go prints the decoded value (`int64` exactly, `float64` with `%v`).
pub(crate) fn go_number(v: &Value) -> String {
    match v {
        Value::Number(n) => kube_codegen_crd::gofmt::go_number(n),
        other => other.to_string(),
    }
}

/// A bad value as `field.Error.ErrorBody` prints it: strings quoted, numbers and booleans bare,
/// `null` as `"null"`, maps and slices as `%#v`.
pub(crate) fn go_bad_value(v: &Value) -> String {
    kube_codegen_crd::gofmt::go_json(v)
}

/// See [`super::normalize_numbers`].
pub(crate) fn normalize_numbers(v: &mut Value) {
    kube_codegen_crd::gofmt::normalize_numbers(v, super::MAX_DEPTH);
}
