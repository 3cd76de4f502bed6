//! `ValidateObjectMeta` for built-in kinds: the name by the kind's rule, labels and annotations.
use serde_json::Value;

use super::field::{Path, invalid_str, too_long};
use super::names::{NameRule, label_value_errors, qualified_name_errors};
use crate::schema::Cause;
use crate::util::meta_str;

/// `TotalAnnotationSizeLimitB`: 256 KiB of keys and values together.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// `ValidateObjectMeta(meta, namespaced, nameFn, "metadata")` minus what the write pipeline
/// already checks (name required, namespace match).
pub fn object_meta(obj: &Value, rule: NameRule, out: &mut Vec<Cause>) {
    let path = Path::new("metadata");
    let generate = meta_str(obj, "generateName");
    if !generate.is_empty() {
        for m in rule.check(generate, true) {
            out.push(invalid_str(&path.child("generateName"), generate, &m));
        }
    }
    let name = meta_str(obj, "name");
    if !name.is_empty() {
        for m in rule.check(name, false) {
            out.push(invalid_str(&path.child("name"), name, &m));
        }
    }
    let meta = obj.get("metadata");
    labels(
        meta.and_then(|m| m.get("labels")),
        &path.child("labels"),
        out,
    );
    annotations(
        meta.and_then(|m| m.get("annotations")),
        &path.child("annotations"),
        out,
    );
}

/// `ValidateLabels`: qualified-name keys, label values.
pub fn labels(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    let Some(m) = v.and_then(Value::as_object) else {
        return;
    };
    for (k, v) in m {
        for msg in qualified_name_errors(k) {
            out.push(invalid_str(path, k, &msg));
        }
        let v = v.as_str().unwrap_or_default();
        for msg in label_value_errors(v) {
            out.push(invalid_str(path, v, &msg));
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names (checked lowercased), 256 KiB in total.
pub fn annotations(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    let Some(m) = v.and_then(Value::as_object) else {
        return;
    };
    let mut size = 0;
    for (k, v) in m {
        for msg in qualified_name_errors(&k.to_lowercase()) {
            out.push(invalid_str(path, k, &msg));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_LIMIT {
        out.push(too_long(path, ANNOTATIONS_LIMIT));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_and_names() {
        let mut out = Vec::new();
        let o = json!({"metadata": {"name": "Bad", "labels": {"a/b/c": "x", "ok": "-bad"}}});
        object_meta(&o, NameRule::Dns1035Label, &mut out);
        let fields: Vec<&str> = out.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            ["metadata.name", "metadata.labels", "metadata.labels"]
        );
        let mut out = Vec::new();
        let big = "x".repeat(ANNOTATIONS_LIMIT);
        annotations(
            Some(&json!({"k": big})),
            &Path::new("metadata.annotations"),
            &mut out,
        );
        assert_eq!(
            out[0].message,
            "Too long: may not be more than 262144 bytes"
        );
    }
}
