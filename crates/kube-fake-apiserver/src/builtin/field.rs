//! `field.Path` and `field.Error` as apimachinery renders them into a 422's causes: the reason,
//! the `<Type>: <value>: <detail>` body and the Go rendering of the bad value.
use serde_json::Value;

use crate::schema::Cause;

/// A field path, printed as `spec.template.spec.containers[0].name` (`Key` as `[k]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    pub fn new(root: &str) -> Path {
        Path(root.to_string())
    }
    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }
    /// `a.b.c` as successive children.
    pub fn at(&self, names: &str) -> Path {
        names.split('.').fold(self.clone(), |p, n| p.child(n))
    }
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
    pub fn key(&self, k: &str) -> Path {
        Path(format!("{}[{k}]", self.0))
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Go's `%q` of a string (what `field.Invalid` prints for string values).
pub use kube_codegen_crd::gofmt::go_quote as q;

/// The bad value of a JSON string/number/bool field as `field.Error` prints it (`%q` for
/// strings, `%v` for numbers and booleans, `null` for nothing).
pub fn scalar(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".into(),
        Some(Value::String(s)) => q(s),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(other) => other.to_string(),
    }
}

/// `%#v` of a `map[string]string` (sorted keys, as Go prints maps).
pub fn string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "map[string]string(nil)".into(),
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", q(k), q(m[*k].as_str().unwrap_or_default())))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    }
}

/// `%#v` of a `[]string`.
pub fn string_list(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".into(),
        Some(a) => {
            let parts: Vec<String> = a
                .iter()
                .map(|s| q(s.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", parts.join(", "))
        }
    }
}

fn cause(reason: &str, path: &Path, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        field: path.0.clone(),
        message,
    }
}

/// `field.Invalid(path, value, detail)`; `value` already rendered.
pub fn invalid(path: &Path, value: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        format!("Invalid value: {value}")
    } else {
        format!("Invalid value: {value}: {detail}")
    };
    cause("FieldValueInvalid", path, message)
}

/// `field.Invalid` of a string value.
pub fn invalid_str(path: &Path, value: &str, detail: &str) -> Cause {
    invalid(path, &q(value), detail)
}

/// `field.Required(path, detail)`.
pub fn required(path: &Path, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    cause("FieldValueRequired", path, message)
}

/// `field.Forbidden(path, detail)`.
pub fn forbidden(path: &Path, detail: &str) -> Cause {
    cause("FieldValueForbidden", path, format!("Forbidden: {detail}"))
}

/// `field.Duplicate(path, value)`; `value` already rendered.
pub fn duplicate(path: &Path, value: &str) -> Cause {
    cause(
        "FieldValueDuplicate",
        path,
        format!("Duplicate value: {value}"),
    )
}

/// `field.NotFound(path, value)`; `value` already rendered.
pub fn not_found(path: &Path, value: &str) -> Cause {
    cause("FieldValueNotFound", path, format!("Not found: {value}"))
}

/// `field.NotSupported(path, value, valid)`; `value` already rendered, `valid` in the order
/// the source lists them.
pub fn not_supported(path: &Path, value: &str, valid: &[&str]) -> Cause {
    let mut message = format!("Unsupported value: {value}");
    if !valid.is_empty() {
        let quoted: Vec<String> = valid.iter().map(|v| q(v)).collect();
        message.push_str(&format!(": supported values: {}", quoted.join(", ")));
    }
    cause("FieldValueNotSupported", path, message)
}

/// `field.TooLong(path, value, max)` (the value is omitted).
pub fn too_long(path: &Path, max: usize) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    cause(
        "FieldValueTooLong",
        path,
        format!("Too long: may not be more than {max} {unit}"),
    )
}

/// `ValidateImmutableField`: `field is immutable` on the path, with the new value.
pub fn immutable(path: &Path, value: &str) -> Cause {
    invalid(path, value, "field is immutable")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_go_values() {
        assert_eq!(
            string_map(Some(&json!({"b": "2", "a": "1"}))),
            r#"map[string]string{"a":"1", "b":"2"}"#
        );
        assert_eq!(string_map(None), "map[string]string(nil)");
        assert_eq!(string_list(Some(&json!(["x"]))), r#"[]string{"x"}"#);
        assert_eq!(q("a\"b"), r#""a\"b""#);
        let p = Path::new("spec").child("ports").index(0).key("cpu");
        assert_eq!(p.to_string(), "spec.ports[0][cpu]");
        assert_eq!(
            not_supported(&p, "\"X\"", &["A", "B"]).message,
            r#"Unsupported value: "X": supported values: "A", "B""#
        );
        assert_eq!(required(&p, "").message, "Required value");
        assert_eq!(
            too_long(&p, 1).message,
            "Too long: may not be more than 1 byte"
        );
    }
}
