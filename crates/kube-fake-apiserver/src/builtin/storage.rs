//! `storage.k8s.io/v1`: StorageClasses and CSIDrivers (`pkg/apis/storage/v1/defaults.go`,
//! `pkg/apis/storage/validation/validation.go`).
use serde_json::{Value, json};

use super::field::{Path, forbidden, not_supported, q, required};
use super::json::{default, has, obj_at, s};
use crate::schema::Cause;

pub fn default_kind(kind: &str, o: &mut Value) {
    match kind {
        "StorageClass" => {
            default(o, "reclaimPolicy", json!("Delete"));
            default(o, "volumeBindingMode", json!("Immediate"));
        }
        "CSIDriver" => {
            let Some(spec) = obj_at(o, "spec") else {
                return;
            };
            default(spec, "attachRequired", json!(true));
            default(spec, "podInfoOnMount", json!(false));
            default(spec, "storageCapacity", json!(false));
            default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            if spec
                .get("volumeLifecycleModes")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                spec["volumeLifecycleModes"] = json!(["Persistent"]);
            }
            default(spec, "requiresRepublish", json!(false));
            // SELinuxMountReadWriteOncePod is on by default.
            default(spec, "seLinuxMount", json!(false));
        }
        _ => {}
    }
}

pub fn validate(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    if kind != "StorageClass" {
        return;
    }
    if s(o, "provisioner").is_empty() {
        out.push(required(&Path::new("provisioner"), ""));
    }
    if has(o, "reclaimPolicy") {
        let r = s(o, "reclaimPolicy");
        if !matches!(r, "Delete" | "Retain") {
            out.push(not_supported(
                &Path::new("reclaimPolicy"),
                &q(r),
                &["Delete", "Retain"],
            ));
        }
    }
    if has(o, "volumeBindingMode") {
        let m = s(o, "volumeBindingMode");
        if !matches!(m, "Immediate" | "WaitForFirstConsumer") {
            out.push(not_supported(
                &Path::new("volumeBindingMode"),
                &q(m),
                &["Immediate", "WaitForFirstConsumer"],
            ));
        }
    }
}

/// A StorageClass's parameters, provisioner and reclaim policy cannot change.
pub fn validate_update(kind: &str, new: &Value, old: &Value, out: &mut Vec<Cause>) {
    if kind != "StorageClass" {
        return;
    }
    let empty = |v: Option<&Value>| {
        v.cloned()
            .filter(|x| !x.as_object().is_some_and(|m| m.is_empty()))
    };
    if empty(new.get("parameters")) != empty(old.get("parameters")) {
        out.push(forbidden(
            &Path::new("parameters"),
            "updates to parameters are forbidden.",
        ));
    }
    if new.get("provisioner") != old.get("provisioner") {
        out.push(forbidden(
            &Path::new("provisioner"),
            "updates to provisioner are forbidden.",
        ));
    }
    if new.get("reclaimPolicy") != old.get("reclaimPolicy") {
        out.push(forbidden(
            &Path::new("reclaimPolicy"),
            "updates to reclaimPolicy are forbidden.",
        ));
    }
}
