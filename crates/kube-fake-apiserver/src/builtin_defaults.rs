//! The few defaults the real server fills on built-in kinds that clients dereference without checking
//! (kubectl describe assumes `spec.replicas`, `strategy`, container pull policies, ...).
use serde_json::{Map, Value, json};

use crate::util::str_of;

fn obj(v: &mut Value, key: &str) -> Option<Map<String, Value>> {
    let m = v.as_object_mut()?;
    let e = m.entry(key.to_string()).or_insert_with(|| json!({}));
    if !e.is_object() {
        *e = json!({});
    }
    e.as_object().cloned()
}

fn default(m: &mut Value, key: &str, value: Value) {
    if let Some(o) = m.as_object_mut()
        && o.get(key).is_none_or(Value::is_null)
    {
        o.insert(key.into(), value);
    }
}

fn pod_spec(spec: &mut Value) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter(|c| c.is_object()) {
                let image = str_of(c.get("image")).to_string();
                let tag = image
                    .rsplit('/')
                    .next()
                    .and_then(|last| last.split_once(':'))
                    .map(|(_, t)| t.to_string());
                let latest = !image.contains('@') && tag.as_deref().is_none_or(|t| t == "latest");
                default(
                    c,
                    "imagePullPolicy",
                    json!(if latest { "Always" } else { "IfNotPresent" }),
                );
                default(c, "terminationMessagePath", json!("/dev/termination-log"));
                default(c, "terminationMessagePolicy", json!("File"));
                default(c, "resources", json!({}));
            }
        }
    }
}

/// Fills defaults for a built-in kind identified by group and plural.
pub fn apply(group: &str, plural: &str, o: &mut Value) {
    match (group, plural) {
        ("apps", "deployments") => {
            if obj(o, "spec").is_none() {
                return;
            }
            let spec = &mut o["spec"];
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            default(spec, "strategy", json!({}));
            let strategy = &mut spec["strategy"];
            default(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                default(strategy, "rollingUpdate", json!({}));
                default(
                    &mut strategy["rollingUpdate"],
                    "maxUnavailable",
                    json!("25%"),
                );
                default(&mut strategy["rollingUpdate"], "maxSurge", json!("25%"));
            }
            if let Some(ps) = spec.pointer_mut("/template/spec") {
                pod_spec(ps);
            }
        }
        ("", "pods") if obj(o, "spec").is_some() => {
            pod_spec(&mut o["spec"]);
            if obj(o, "status").is_some() {
                default(&mut o["status"], "phase", json!("Pending"));
            }
        }
        ("", "services") if obj(o, "spec").is_some() => {
            let spec = &mut o["spec"];
            default(spec, "type", json!("ClusterIP"));
            default(spec, "sessionAffinity", json!("None"));
        }
        ("", "secrets") => default(o, "type", json!("Opaque")),
        // `spec.finalizers` is no default: the namespace strategy sets it after the field
        // manager ran (`namespaces::prepare_for_create`).
        ("", "namespaces") if obj(o, "status").is_some() => {
            default(&mut o["status"], "phase", json!("Active"));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.2"}, {"image": "x"}]}}}});
        apply("apps", "deployments", &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][1]["imagePullPolicy"],
            "Always"
        );
        let mut keep = json!({"spec": {"replicas": 0}});
        apply("apps", "deployments", &mut keep);
        assert_eq!(keep["spec"]["replicas"], 0);
        let mut ns = json!({"metadata": {}});
        apply("", "namespaces", &mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
    }
}
