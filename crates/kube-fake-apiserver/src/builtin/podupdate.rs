//! What a Pod update may change (`ValidatePodUpdate` in kube-apiserver 1.35's
//! `pkg/apis/core/validation/validation.go`), and what the `Priority` admission plugin keeps
//! on an update. Everything but container images, `activeDeadlineSeconds` (lowered or set),
//! added tolerations, removed scheduling gates and a negative grace period set to 1 is fixed
//! once the Pod exists; kubelets and controllers change the rest through `status`.
use serde_json::{Map, Value};

use super::field::{Path, forbidden, invalid, invalid_str, required};
use super::json::{i, items, s};
use crate::schema::Cause;

/// The fields the refusal names, joined as the source joins them (`","`).
const UPDATABLE: &[&str] = &[
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

/// The `Priority` plugin on update: a priority (and preemption policy) the update leaves out
/// is the stored one, so clients that never set it may replace the Pod.
pub fn carry_over(new: &mut Value, old: &Value) {
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for f in ["priority", "preemptionPolicy"] {
        if spec.get(f).is_none_or(Value::is_null)
            && let Some(v) = old.pointer(&format!("/spec/{f}")).filter(|v| !v.is_null())
        {
            spec.insert(f.into(), v.clone());
        }
    }
}

/// `ValidatePodUpdate`'s rules on the spec, in its order (the metadata and the new spec itself
/// are validated as on create, before these).
pub fn validate(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let empty = Value::Object(Map::new());
    let (ns, os) = (
        new.get("spec").unwrap_or(&empty),
        old.get("spec").unwrap_or(&empty),
    );
    let sp = Path::new("spec");
    for list in ["containers", "initContainers"] {
        if container_updates(ns, os, list, &sp.child(list), out) {
            return;
        }
    }
    if !active_deadline(ns, os, &sp.child("activeDeadlineSeconds"), out) {
        return;
    }
    only_added_tolerations(ns, os, &sp.child("tolerations"), out);
    only_deleted_gates(ns, os, &sp.child("schedulingGates"), out);
    let munged = munge(ns, os);
    if !same(Some(&munged), Some(os)) {
        let detail = format!(
            "pod updates may not change fields other than {}\n{}",
            UPDATABLE.join(","),
            diff(os, &munged)
        );
        out.push(forbidden(&sp, &detail));
    }
}

/// `ValidateContainerUpdates`: the same number of containers, each with an image without
/// surrounding spaces. True when validation stops here.
fn container_updates(
    ns: &Value,
    os: &Value,
    list: &str,
    path: &Path,
    out: &mut Vec<Cause>,
) -> bool {
    if items(ns, list).count() != items(os, list).count() {
        out.push(forbidden(
            path,
            "pod updates may not add or remove containers",
        ));
        return true;
    }
    for (idx, c) in items(ns, list).enumerate() {
        let image = s(c, "image");
        let ip = path.index(idx).child("image");
        if image.is_empty() {
            out.push(required(&ip, ""));
        }
        if image.trim() != image {
            out.push(invalid_str(
                &ip,
                image,
                "must not have leading or trailing whitespace",
            ));
        }
    }
    false
}

/// `activeDeadlineSeconds` may be set, or lowered, never raised or removed. False when
/// validation stops here.
fn active_deadline(ns: &Value, os: &Value, path: &Path, out: &mut Vec<Cause>) -> bool {
    let old = i(os, "activeDeadlineSeconds");
    match i(ns, "activeDeadlineSeconds") {
        Some(n) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            out.push(invalid(
                path,
                &n.to_string(),
                "must be between 0 and 2147483647, inclusive",
            ));
            return false;
        }
        Some(n) if old.is_some_and(|o| o < n) => {
            out.push(invalid(
                path,
                &n.to_string(),
                "must be less than or equal to previous value",
            ));
            return false;
        }
        None if old.is_some() => out.push(invalid(
            path,
            "null",
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    true
}

/// `validateOnlyAddedTolerations`: every old toleration is still there, its
/// `tolerationSeconds` aside.
fn only_added_tolerations(ns: &Value, os: &Value, path: &Path, out: &mut Vec<Cause>) {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    for old in items(os, "tolerations") {
        let old = without_seconds(old);
        if !items(ns, "tolerations").any(|n| same(Some(&without_seconds(n)), Some(&old))) {
            out.push(forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            return;
        }
    }
}

/// `validateOnlyDeletedSchedulingGates`: no gate the old Pod lacked.
fn only_deleted_gates(ns: &Value, os: &Value, path: &Path, out: &mut Vec<Cause>) {
    for (idx, gate) in items(ns, "schedulingGates").enumerate() {
        let name = s(gate, "name");
        if !items(os, "schedulingGates").any(|g| s(g, "name") == name) {
            out.push(forbidden(
                &path.index(idx).child("name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            ));
        }
    }
}

/// The new spec with what may change put back to the old values (the source's `mungedPodSpec`).
fn munge(ns: &Value, os: &Value) -> Value {
    let mut m = ns.clone();
    let Some(spec) = m.as_object_mut() else {
        return m;
    };
    for list in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for (c, old) in cs.iter_mut().zip(items(os, list)) {
                if let Some(c) = c.as_object_mut() {
                    match old.get("image") {
                        Some(img) => c.insert("image".into(), img.clone()),
                        None => c.remove("image"),
                    };
                }
            }
        }
    }
    for f in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match os.get(f) {
            Some(v) => spec.insert(f.into(), v.clone()),
            None => spec.remove(f),
        };
    }
    let grace = "terminationGracePeriodSeconds";
    if i(os, grace).is_some_and(|g| g < 0) && spec.get(grace).and_then(Value::as_i64) == Some(1) {
        spec.insert(grace.into(), os[grace].clone());
    }
    m
}

/// Go's zero values and empty collections, which `Semantic.DeepEqual` on the internal types
/// does not tell from an absent field.
fn zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => !b,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
    }
}

/// Equal as the internal objects compare: zero values as absent ones, numbers by value.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    if zero(a) && zero(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.keys().chain(y.keys()).all(|k| same(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(Some(p), Some(q)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (x, y) => x == y,
    }
}

/// An approximation of the `cmp.Diff(oldPod.Spec, mungedPodSpec)` the message ends with:
/// go-cmp prints the internal Go structs (and randomises its spacing on purpose), so only its
/// frame is kept: `core.PodSpec{`, each differing top-level field as a `-` line (old) and a
/// `+` line (new) with its Go name and JSON value, and `}`.
fn diff(old: &Value, new: &Value) -> String {
    let empty = Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::from("  core.PodSpec{\n");
    let show = |v: Option<&Value>| v.map_or("nil".to_string(), Value::to_string);
    for k in keys {
        if same(o.get(k), n.get(k)) {
            continue;
        }
        let go = go_name(k);
        out.push_str(&format!("- \t{go}: {},\n", show(o.get(k))));
        out.push_str(&format!("+ \t{go}: {},\n", show(n.get(k))));
    }
    out.push_str("  }\n");
    out
}

/// The Go field name of a JSON field (`nodeName` → `NodeName`).
fn go_name(json: &str) -> String {
    let mut c = json.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn check(new: Value, old: Value) -> Vec<String> {
        let mut out = Vec::new();
        validate(&pod(new), &pod(old), &mut out);
        out.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn base() -> Value {
        json!({"containers": [{"name": "c", "image": "busybox:1"}], "nodeName": "",
               "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
               "terminationGracePeriodSeconds": 30})
    }

    #[test]
    fn images_deadlines_tolerations_and_gates_may_change() {
        let mut new = base();
        new["containers"][0]["image"] = json!("busybox:2");
        new["activeDeadlineSeconds"] = json!(60);
        new["tolerations"][0]["tolerationSeconds"] = json!(10);
        new["tolerations"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "x", "operator": "Exists"}));
        // Zero values read as absent ones, as the internal types compare.
        new["hostNetwork"] = json!(false);
        assert_eq!(check(new, base()), Vec::<String>::new());
    }

    #[test]
    fn anything_else_is_forbidden_with_the_fixed_message() {
        let mut new = base();
        new["nodeName"] = json!("n1");
        let got = check(new, base());
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0],
            "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n  core.PodSpec{\n- \tNodeName: \"\",\n+ \tNodeName: \"n1\",\n  }\n"
        );
    }

    #[test]
    fn container_counts_deadlines_tolerations_and_gates_have_their_own_causes() {
        let mut new = base();
        new["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "d", "image": "x"}));
        assert_eq!(
            check(new, base()),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
        let mut old = base();
        old["activeDeadlineSeconds"] = json!(30);
        let mut new = old.clone();
        new["activeDeadlineSeconds"] = json!(60);
        assert_eq!(
            check(new, old.clone()),
            [
                "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"
            ]
        );
        let mut new = old.clone();
        new.as_object_mut().unwrap().remove("activeDeadlineSeconds");
        assert_eq!(
            check(new, old),
            [
                "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"
            ]
        );
        let mut new = base();
        new["tolerations"][0]["key"] = json!("other");
        assert_eq!(
            check(new, base()),
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
        let mut new = base();
        new["schedulingGates"] = json!([{"name": "wait"}]);
        assert_eq!(
            check(new, base()),
            [
                "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'wait'"
            ]
        );
        let mut new = base();
        new["containers"][0]["image"] = json!(" busybox");
        assert_eq!(
            check(new, base()),
            [
                "spec.containers[0].image: Invalid value: \" busybox\": must not have leading or trailing whitespace"
            ]
        );
    }

    #[test]
    fn a_negative_grace_period_may_become_one_and_priority_is_kept() {
        let mut old = base();
        old["terminationGracePeriodSeconds"] = json!(-1);
        let mut new = old.clone();
        new["terminationGracePeriodSeconds"] = json!(1);
        assert_eq!(check(new, old), Vec::<String>::new());
        let old = pod(json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));
        let mut new = pod(json!({}));
        carry_over(&mut new, &old);
        assert_eq!(new, old);
    }
}
