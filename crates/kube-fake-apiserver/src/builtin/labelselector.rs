//! `metav1.LabelSelector`: `ValidateLabelSelector`, `LabelSelectorAsSelector(...).Matches`, and
//! the Go rendering (`%#v`) of a selector and an `IntOrString`, as immutable-field errors print them.
use serde_json::Value;

use super::field::{Path, forbidden, invalid_str, q, required, string_list, string_map};
use super::json::{items, s};
use super::meta;
use crate::schema::Cause;

/// `ValidateLabelSelector` (strict label values).
pub fn validate(sel: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    let Some(sel) = sel.filter(|v| v.is_object()) else {
        return;
    };
    for (idx, e) in items(sel, "matchExpressions").enumerate() {
        let p = path.child("matchExpressions").index(idx);
        let op = s(e, "operator");
        let values = e.get("values").and_then(Value::as_array);
        let n = values.map_or(0, Vec::len);
        match op {
            "In" | "NotIn" => {
                if n == 0 {
                    out.push(required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if n > 0 {
                    out.push(forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => out.push(invalid_str(
                &p.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = s(e, "key");
        for m in super::names::qualified_name_errors(key) {
            out.push(invalid_str(&p.child("key"), key, &m));
        }
        for (vi, v) in values.into_iter().flatten().enumerate() {
            let v = v.as_str().unwrap_or_default();
            for m in super::names::label_value_errors(v) {
                out.push(invalid_str(&p.child("values").index(vi), v, &m));
            }
        }
    }
    meta::labels(sel.get("matchLabels"), &path.child("matchLabels"), out);
}

/// Whether the selector has no requirement (it then selects everything).
pub fn is_empty(sel: &Value) -> bool {
    let n = |k: &str| {
        sel.get(k).map_or(0, |v| match v {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        })
    };
    n("matchLabels") + n("matchExpressions") == 0
}

/// `LabelSelectorAsSelector(sel).Matches(labels)`; a missing selector matches nothing.
pub fn matches(sel: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(sel) = sel.filter(|v| v.is_object()) else {
        return false;
    };
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object)
        && ml.iter().any(|(k, v)| get(k) != v.as_str())
    {
        return false;
    }
    items(sel, "matchExpressions").all(|e| {
        let have = get(s(e, "key"));
        let values: Vec<&str> = items(e, "values").filter_map(Value::as_str).collect();
        match s(e, "operator") {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => have.is_none_or(|h| !values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        }
    })
}

/// `%#v` of a `metav1.LabelSelector` (a pointer is dereferenced by `field.Error`).
pub fn go(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|v| v.is_object()) else {
        return "null".into();
    };
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(a) => {
            let parts: Vec<String> = a
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        q(s(e, "key")),
                        q(s(e, "operator")),
                        string_list(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", parts.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        string_map(sel.get("matchLabels")),
        exprs
    )
}

/// `%#v` of an `intstr.IntOrString`.
pub fn go_int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(t)) => {
            format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", q(t))
        }
        Some(Value::Number(n)) => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            n.as_i64().unwrap_or(0)
        ),
        _ => "null".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let sel = json!({"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "t", "operator": "Exists"}]});
        assert!(matches(Some(&sel), Some(&json!({"app": "x", "t": "1"}))));
        assert!(!matches(Some(&sel), Some(&json!({"app": "x"}))));
        assert!(!matches(None, Some(&json!({"app": "x"}))));
        assert_eq!(
            go(Some(&json!({"matchLabels": {"app": "y"}}))),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"y"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
    }
}
