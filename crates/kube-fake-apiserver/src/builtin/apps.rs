//! `apps/v1`: Deployments, StatefulSets, DaemonSets, ReplicaSets (and ControllerRevisions'
//! names). Defaults from `pkg/apis/apps/v1/defaults.go`, validation from
//! `pkg/apis/apps/validation/validation.go`, selector immutability from the strategies.
use serde_json::{Value, json};

use super::core;
use super::field::{Path, forbidden, immutable, invalid, not_supported, q, required};
use super::json::{default_str, has, i, items_mut, obj_at, s};
use super::labelselector::{self as sel, go, go_int_or_string};
use super::podspec;
use crate::schema::Cause;

fn template(spec: &mut Value) {
    if let Some(t) = obj_at(spec, "template") {
        podspec::default_template(t);
    }
}

pub fn default(kind: &str, o: &mut Value) {
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    match kind {
        "Deployment" => {
            default_field(spec, "replicas", json!(1));
            let strategy = obj_at(spec, "strategy").expect("spec is an object");
            default_str(strategy, "type", "RollingUpdate");
            if s(strategy, "type") == "RollingUpdate" {
                let ru = obj_at(strategy, "rollingUpdate").expect("strategy is an object");
                default_field(ru, "maxUnavailable", json!("25%"));
                default_field(ru, "maxSurge", json!("25%"));
            }
            default_field(spec, "revisionHistoryLimit", json!(10));
            default_field(spec, "progressDeadlineSeconds", json!(600));
        }
        "StatefulSet" => {
            default_str(spec, "podManagementPolicy", "OrderedReady");
            let us = obj_at(spec, "updateStrategy").expect("spec is an object");
            if s(us, "type").is_empty() {
                us["type"] = json!("RollingUpdate");
                default_field(us, "rollingUpdate", json!({}));
            }
            if s(us, "type") == "RollingUpdate"
                && let Some(ru) = us.get_mut("rollingUpdate").filter(|r| r.is_object())
            {
                default_field(ru, "partition", json!(0));
                // MaxUnavailableStatefulSet is beta, on by default, in 1.35.
                default_field(ru, "maxUnavailable", json!(1));
            }
            let pvc = obj_at(spec, "persistentVolumeClaimRetentionPolicy").expect("object");
            default_str(pvc, "whenDeleted", "Retain");
            default_str(pvc, "whenScaled", "Retain");
            default_field(spec, "replicas", json!(1));
            default_field(spec, "revisionHistoryLimit", json!(10));
            // The claim templates are PersistentVolumeClaims: typed (the v1 conversion sets
            // their apiVersion and kind) and defaulted as claims.
            for t in items_mut(spec, "volumeClaimTemplates").filter(|t| t.is_object()) {
                t["apiVersion"] = json!("v1");
                t["kind"] = json!("PersistentVolumeClaim");
                default_field(t, "metadata", json!({}));
                core::default_pvc(t);
            }
        }
        "DaemonSet" => {
            let us = obj_at(spec, "updateStrategy").expect("spec is an object");
            default_str(us, "type", "RollingUpdate");
            if s(us, "type") == "RollingUpdate" {
                let ru = obj_at(us, "rollingUpdate").expect("object");
                default_field(ru, "maxUnavailable", json!(1));
                default_field(ru, "maxSurge", json!(0));
            }
            default_field(spec, "revisionHistoryLimit", json!(10));
        }
        "ReplicaSet" => default_field(spec, "replicas", json!(1)),
        _ => return,
    }
    template(spec);
}

fn default_field(o: &mut Value, key: &str, v: Value) {
    super::json::default(o, key, v);
}

/// Every workload starts with an empty status (a struct, encoded `{}`).
pub fn prepare_create(o: &mut Value) {
    o["status"] = json!({});
}

/// The status counters without `omitempty` in the Go types (`required` in the OpenAPI
/// definitions): Go's encoding writes them even at zero, so a fresh StatefulSet reads back with
/// `status: {replicas: 0}`. Clients whose models require them (the Python client's) fail on
/// an object without them.
pub fn encoded_status_counters(group: &str, kind: &str, o: &mut Value) {
    let counters: &[&str] = match (group, kind) {
        // StatefulSetStatus.availableReplicas is optional but has no `omitempty` either.
        ("apps", "StatefulSet") => &["replicas", "availableReplicas"],
        ("apps", "ReplicaSet") | ("", "ReplicationController") => &["replicas"],
        ("apps", "DaemonSet") => &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
        ],
        _ => return,
    };
    if let Some(st) = super::json::obj_at(o, "status") {
        for c in counters {
            default_field(st, c, json!(0));
        }
    }
}

fn nonnegative(spec: &Value, field: &str, path: &Path, out: &mut Vec<Cause>) {
    if let Some(n) = i(spec, field)
        && n < 0
    {
        out.push(invalid(
            &path.child(field),
            &n.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}

/// Selector present, valid, non-empty (`what` names the kind in the message, as the source does).
fn selector_rules(spec: &Value, sp: &Path, what: &str, out: &mut Vec<Cause>) {
    match spec.get("selector").filter(|v| v.is_object()) {
        None => out.push(required(&sp.child("selector"), "")),
        Some(selector) => {
            sel::validate(Some(selector), &sp.child("selector"), out);
            if sel::is_empty(selector) {
                out.push(invalid(
                    &sp.child("selector"),
                    &go(Some(selector)),
                    &format!("empty selector is invalid for {what}"),
                ));
            }
        }
    }
}

/// `selector` vs template labels (a missing selector matches nothing, an empty one everything).
fn selector_matches_template(spec: &Value, tp: &Path, out: &mut Vec<Cause>) {
    let selector = spec.get("selector").filter(|v| v.is_object());
    let labels = spec.pointer("/template/metadata/labels");
    let everything = selector.is_some_and(sel::is_empty);
    if !everything && !sel::matches(selector, labels) {
        out.push(invalid(
            &tp.at("metadata.labels"),
            &super::field::string_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` (Deployments and ReplicaSets).
fn template_for_replica_set(spec: &Value, tp: &Path, kind: &str, out: &mut Vec<Cause>) {
    selector_matches_template(spec, tp, out);
    let t = spec.get("template").cloned().unwrap_or(json!({}));
    podspec::validate_template(&t, tp, out);
    restart_always(&t, tp, out);
    if let Some(ads) = t.pointer("/spec/activeDeadlineSeconds") {
        out.push(invalid(
            &tp.at("spec.activeDeadlineSeconds"),
            &ads.to_string(),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

fn restart_always(t: &Value, tp: &Path, out: &mut Vec<Cause>) {
    let rp = t
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if rp != "Always" {
        out.push(not_supported(
            &tp.at("spec.restartPolicy"),
            &q(rp),
            &["Always"],
        ));
    }
}

fn int_or_percent(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    match v {
        Some(Value::String(t)) => {
            let ok = t
                .strip_suffix('%')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
            if !ok {
                out.push(invalid(
                    path,
                    &go_int_or_string(v),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                ));
            } else if t.trim_end_matches('%').parse::<i64>().unwrap_or(0) > 100 {
                out.push(invalid(
                    path,
                    &go_int_or_string(v),
                    "must not be greater than 100%",
                ));
            }
        }
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if n < 0 {
                out.push(invalid(
                    path,
                    &n.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
        }
        _ => {}
    }
}

fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(t)) => t.trim_end_matches('%').parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

pub fn validate(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    let tp = sp.child("template");
    match kind {
        "Deployment" => {
            nonnegative(&spec, "replicas", &sp, out);
            selector_rules(&spec, &sp, "deployment", out);
            template_for_replica_set(&spec, &tp, "ReplicaSet", out);
            let st = spec.get("strategy").cloned().unwrap_or(json!({}));
            let stp = sp.child("strategy");
            match s(&st, "type") {
                "Recreate" => {
                    if has(&st, "rollingUpdate") {
                        out.push(forbidden(
                            &stp.child("rollingUpdate"),
                            "may not be specified when strategy `type` is 'Recreate'",
                        ));
                    }
                }
                "RollingUpdate" => {
                    let rup = stp.child("rollingUpdate");
                    match st.get("rollingUpdate").filter(|r| r.is_object()) {
                        None => {
                            out.push(required(&rup, "this should be defaulted and never be nil"))
                        }
                        Some(ru) => {
                            int_or_percent(
                                ru.get("maxUnavailable"),
                                &rup.child("maxUnavailable"),
                                out,
                            );
                            int_or_percent(ru.get("maxSurge"), &rup.child("maxSurge"), out);
                            if int_or_percent_value(ru.get("maxUnavailable")) == 0
                                && int_or_percent_value(ru.get("maxSurge")) == 0
                            {
                                out.push(invalid(
                                    &rup.child("maxUnavailable"),
                                    &go_int_or_string(ru.get("maxUnavailable")),
                                    "may not be 0 when `maxSurge` is 0",
                                ));
                            }
                        }
                    }
                }
                // The value is the Go struct (a set `rollingUpdate` prints as an address there).
                other => out.push(not_supported(
                    &stp,
                    &format!(
                        "apps.DeploymentStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}}",
                        q(other)
                    ),
                    &["Recreate", "RollingUpdate"],
                )),
            }
            nonnegative(&spec, "minReadySeconds", &sp, out);
            nonnegative(&spec, "revisionHistoryLimit", &sp, out);
            if let Some(pd) = i(&spec, "progressDeadlineSeconds") {
                nonnegative(&spec, "progressDeadlineSeconds", &sp, out);
                if pd <= i(&spec, "minReadySeconds").unwrap_or(0) {
                    out.push(invalid(
                        &sp.child("progressDeadlineSeconds"),
                        &pd.to_string(),
                        "must be greater than minReadySeconds",
                    ));
                }
            }
        }
        "ReplicaSet" => {
            nonnegative(&spec, "replicas", &sp, out);
            nonnegative(&spec, "minReadySeconds", &sp, out);
            // The source's message says "deployment" for ReplicaSets too.
            selector_rules(&spec, &sp, "deployment", out);
            template_for_replica_set(&spec, &tp, "ReplicaSet", out);
        }
        "StatefulSet" => {
            let pmp = sp.child("podManagementPolicy");
            match s(&spec, "podManagementPolicy") {
                "OrderedReady" | "Parallel" => {}
                "" => out.push(required(&pmp, "")),
                other => out.push(invalid(
                    &pmp,
                    &q(other),
                    "must be 'OrderedReady' or 'Parallel'",
                )),
            }
            let us = spec.get("updateStrategy").cloned().unwrap_or(json!({}));
            let usp = sp.child("updateStrategy");
            match s(&us, "type") {
                "" => out.push(required(&usp, "")),
                "OnDelete" => {
                    if has(&us, "rollingUpdate") {
                        out.push(invalid(
                            &usp.child("rollingUpdate"),
                            "",
                            "only allowed for updateStrategy 'RollingUpdate'",
                        ));
                    }
                }
                "RollingUpdate" => {
                    if let Some(ru) = us.get("rollingUpdate") {
                        nonnegative(ru, "partition", &usp.child("rollingUpdate"), out);
                    }
                }
                _ => out.push(invalid(&usp, "", "must be 'RollingUpdate' or 'OnDelete'")),
            }
            let rp = spec
                .get("persistentVolumeClaimRetentionPolicy")
                .cloned()
                .unwrap_or(json!({}));
            for f in ["whenDeleted", "whenScaled"] {
                let v = s(&rp, f);
                if !matches!(v, "Retain" | "Delete") {
                    out.push(not_supported(
                        &sp.child("persistentVolumeClaimRetentionPolicy").child(f),
                        &q(v),
                        &["Retain", "Delete"],
                    ));
                }
            }
            nonnegative(&spec, "replicas", &sp, out);
            nonnegative(&spec, "minReadySeconds", &sp, out);
            selector_rules(&spec, &sp, "statefulset", out);
            // The StatefulSet template's pod spec is not validated (the source's TODO: its
            // mounts may name claim templates); its selector, labels and annotations are.
            selector_matches_template(&spec, &tp, out);
            let t = spec.get("template").cloned().unwrap_or(json!({}));
            let m = t.get("metadata");
            super::meta::labels(m.and_then(|m| m.get("labels")), &tp.child("labels"), out);
            super::meta::annotations(
                m.and_then(|m| m.get("annotations")),
                &tp.child("annotations"),
                out,
            );
            restart_always(&t, &tp, out);
            if t.pointer("/spec/activeDeadlineSeconds").is_some() {
                out.push(forbidden(
                    &tp.at("spec.activeDeadlineSeconds"),
                    "activeDeadlineSeconds in StatefulSet is not Supported",
                ));
            }
        }
        "DaemonSet" => {
            if spec.get("selector").is_none_or(Value::is_null) {
                out.push(required(&sp.child("selector"), ""));
            }
            sel::validate(spec.get("selector"), &sp.child("selector"), out);
            let selector = spec.get("selector").filter(|v| v.is_object());
            if selector.is_some_and(|x| !sel::is_empty(x))
                && !sel::matches(selector, spec.pointer("/template/metadata/labels"))
            {
                out.push(invalid(
                    &tp.at("metadata.labels"),
                    &super::field::string_map(spec.pointer("/template/metadata/labels")),
                    "`selector` does not match template `labels`",
                ));
            }
            if let Some(x) = selector.filter(|x| sel::is_empty(x)) {
                out.push(invalid(
                    &sp.child("selector"),
                    &go(Some(x)),
                    "empty selector is invalid for daemonset",
                ));
            }
            let t = spec.get("template").cloned().unwrap_or(json!({}));
            podspec::validate_template(&t, &tp, out);
            restart_always(&t, &tp, out);
            nonnegative(&spec, "minReadySeconds", &sp, out);
            let us = spec.get("updateStrategy").cloned().unwrap_or(json!({}));
            let usp = sp.child("updateStrategy");
            match s(&us, "type") {
                "OnDelete" => {}
                "RollingUpdate" => {
                    let rup = usp.child("rollingUpdate");
                    if let Some(ru) = us.get("rollingUpdate") {
                        int_or_percent(ru.get("maxUnavailable"), &rup.child("maxUnavailable"), out);
                        int_or_percent(ru.get("maxSurge"), &rup.child("maxSurge"), out);
                        if int_or_percent_value(ru.get("maxUnavailable")) == 0
                            && int_or_percent_value(ru.get("maxSurge")) == 0
                        {
                            out.push(invalid(
                                &rup.child("maxUnavailable"),
                                &go_int_or_string(ru.get("maxUnavailable")),
                                "may not be 0 when `maxSurge` is 0",
                            ));
                        }
                    }
                }
                other => out.push(not_supported(
                    &usp,
                    &format!(
                        "apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}}",
                        q(other)
                    ),
                    &["RollingUpdate", "OnDelete"],
                )),
            }
            nonnegative(&spec, "revisionHistoryLimit", &sp, out);
        }
        _ => {}
    }
}

/// Update rules: selectors are immutable (all four kinds, from the strategies); a StatefulSet's
/// spec may change only in its mutable fields.
pub fn validate_update(kind: &str, new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let sp = Path::new("spec");
    if kind == "StatefulSet" {
        let strip = |o: &Value| {
            let mut spec = o.get("spec").cloned().unwrap_or(json!({}));
            if let Some(m) = spec.as_object_mut() {
                for f in [
                    "replicas",
                    "template",
                    "updateStrategy",
                    "minReadySeconds",
                    "ordinals",
                    "revisionHistoryLimit",
                    "persistentVolumeClaimRetentionPolicy",
                ] {
                    m.remove(f);
                }
            }
            spec
        };
        if strip(new) != strip(old) {
            out.push(forbidden(
                &sp,
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
        return;
    }
    let a = new.pointer("/spec/selector");
    let b = old.pointer("/spec/selector");
    if a != b {
        out.push(immutable(&sp.child("selector"), &go(a)));
    }
}
