//! `batch/v1`: Jobs and CronJobs. Defaults from `pkg/apis/batch/v1/defaults.go`, the Job
//! strategy's generated selector (`pkg/registry/batch/job/strategy.go`), validation from
//! `pkg/apis/batch/validation/validation.go`.
use serde_json::{Value, json};

use super::field::{Path, immutable, invalid, invalid_str, not_supported, q, required, scalar};
use super::json::{default, default_str, has, i, obj_at, s};
use super::labelselector::{self as sel, go};
use super::podspec;
use crate::schema::Cause;
use crate::util::meta_str;

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_JOB_NAME: &str = "job-name";

/// `SetDefaults_Job`: also run again when the stored object is decoded, which is how a created
/// Job gets its template's (generated) labels as its own.
pub fn default_job(o: &mut Value) {
    let template_labels = o.pointer("/spec/template/metadata/labels").cloned();
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    if !has(spec, "completions") && !has(spec, "parallelism") {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    if !has(spec, "backoffLimit") {
        let limit = if has(spec, "backoffLimitPerIndex") {
            i64::from(i32::MAX)
        } else {
            6
        };
        spec["backoffLimit"] = json!(limit);
    }
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    if let Some(rules) = spec
        .pointer_mut("/podFailurePolicy/rules")
        .and_then(Value::as_array_mut)
    {
        for r in rules {
            if let Some(conds) = r.get_mut("onPodConditions").and_then(Value::as_array_mut) {
                for c in conds {
                    default_str(c, "status", "True");
                }
            }
        }
    }
    if !has(spec, "podReplacementPolicy") {
        let p = if has(spec, "podFailurePolicy") {
            "Failed"
        } else {
            "TerminatingOrFailed"
        };
        spec["podReplacementPolicy"] = json!(p);
    }
    default(spec, "manualSelector", json!(false));
    if let Some(t) = obj_at(spec, "template") {
        podspec::default_template(t);
    }
    if let Some(labels) = template_labels.filter(|l| l.is_object())
        && o.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
        && let Some(m) = obj_at(o, "metadata")
    {
        m["labels"] = labels;
    }
}

/// `jobStrategy.PrepareForCreate`: the generated selector (unless `manualSelector`), an empty
/// status.
pub fn prepare_job_create(o: &mut Value) {
    let uid = meta_str(o, "uid").to_string();
    let name = meta_str(o, "name").to_string();
    o["status"] = json!({});
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let labels = spec
        .pointer_mut("/template")
        .and_then(|t| obj_at(t, "metadata"))
        .and_then(|m| obj_at(m, "labels"));
    if let Some(labels) = labels {
        for k in [LEGACY_JOB_NAME, JOB_NAME] {
            default(labels, k, json!(name));
        }
        for k in [LEGACY_CONTROLLER_UID, CONTROLLER_UID] {
            default(labels, k, json!(uid));
        }
    }
    let selector = obj_at(spec, "selector").expect("spec is an object");
    let ml = obj_at(selector, "matchLabels").expect("selector is an object");
    default(ml, CONTROLLER_UID, json!(uid));
}

/// `validateJobSpec` (shared by Jobs and CronJobs' job templates).
fn job_spec_common(spec: &Value, sp: &Path, out: &mut Vec<Cause>) {
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        if let Some(n) = i(spec, f)
            && n < 0
        {
            out.push(invalid(
                &sp.child(f),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    if has(spec, "completionMode") {
        let m = s(spec, "completionMode");
        if !matches!(m, "NonIndexed" | "Indexed") {
            out.push(not_supported(
                &sp.child("completionMode"),
                &q(m),
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" && !has(spec, "completions") {
            out.push(required(
                &sp.child("completions"),
                "when completion mode is Indexed",
            ));
        }
    }
    let tp = sp.child("template");
    let t = spec.get("template").cloned().unwrap_or(json!({}));
    podspec::validate_template(&t, &tp, out);
    let rp = t
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rpp = tp.at("spec.restartPolicy");
    if rp == "Always" || rp.is_empty() {
        out.push(required(&rpp, "valid values: \"OnFailure\", \"Never\""));
    } else if rp != "OnFailure" && rp != "Never" {
        out.push(not_supported(&rpp, &q(rp), &["OnFailure", "Never"]));
    } else if has(spec, "podFailurePolicy") && rp != "Never" {
        // A pod failure policy judges failed pods; OnFailure restarts containers instead.
        out.push(invalid(
            &rpp,
            &q(rp),
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
}

/// `ValidateJobSpec`: the common rules, then the selector and its match with the template.
fn job_spec(spec: &Value, sp: &Path, out: &mut Vec<Cause>) {
    job_spec_common(spec, sp, out);
    let selector = spec.get("selector").filter(|v| v.is_object());
    match selector {
        None => out.push(required(&sp.child("selector"), "")),
        Some(x) => sel::validate(Some(x), &sp.child("selector"), out),
    }
    let labels = spec.pointer("/template/metadata/labels");
    let everything = selector.is_some_and(sel::is_empty);
    if !everything && !sel::matches(selector, labels) {
        out.push(invalid(
            &sp.at("template.metadata.labels"),
            &super::field::string_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

/// `validateGeneratedSelector`: with a generated selector the template carries this Job's uid.
fn generated_selector(o: &Value, out: &mut Vec<Cause>) {
    if o.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = meta_str(o, "uid");
    if uid.is_empty() {
        return;
    }
    let lp = Path::new("spec.template.metadata.labels");
    let labels = o.pointer("/spec/template/metadata/labels");
    for k in [LEGACY_CONTROLLER_UID, CONTROLLER_UID] {
        let v = labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        if v != Some(uid) {
            out.push(invalid(
                &lp.key(k),
                &scalar(labels.and_then(|l| l.get(k))),
                &format!("must be '{uid}'"),
            ));
        }
    }
    let sv = o.pointer(&format!(
        "/spec/selector/matchLabels/{}",
        CONTROLLER_UID.replace('/', "~1")
    ));
    if sv.and_then(Value::as_str) != Some(uid) {
        out.push(invalid(
            &Path::new("spec.selector")
                .child("matchLabels")
                .key(CONTROLLER_UID),
            &scalar(sv),
            &format!("must be '{uid}'"),
        ));
    }
}

pub fn validate_job(o: &Value, out: &mut Vec<Cause>) {
    generated_selector(o, out);
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    job_spec(&spec, &Path::new("spec"), out);
}

/// `ValidateJobSpecUpdate`'s immutable fields. The template's rendering in the real message is
/// the Go struct (`core.PodTemplateSpec{...}`); it is abbreviated here.
pub fn validate_job_update(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let sp = Path::new("spec");
    let (ns, os) = (
        new.get("spec").cloned().unwrap_or(json!({})),
        old.get("spec").cloned().unwrap_or(json!({})),
    );
    if ns.get("completions") != os.get("completions") {
        out.push(immutable(
            &sp.child("completions"),
            &scalar(ns.get("completions")),
        ));
    }
    if ns.get("selector") != os.get("selector") {
        out.push(immutable(&sp.child("selector"), &go(ns.get("selector"))));
    }
    let suspended_unstarted =
        ns.get("suspend") == Some(&json!(true)) && old.pointer("/status/startTime").is_none();
    let mut a = ns.get("template").cloned().unwrap_or(json!({}));
    let mut b = os.get("template").cloned().unwrap_or(json!({}));
    if suspended_unstarted {
        // Scheduling directives of a suspended Job that never started may change.
        for t in [&mut a, &mut b] {
            for p in ["/metadata/labels", "/metadata/annotations"] {
                if let Some(v) = t.pointer_mut(p) {
                    *v = Value::Null;
                }
            }
            if let Some(spec) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for f in ["nodeSelector", "tolerations", "affinity", "schedulingGates"] {
                    spec.remove(f);
                }
            }
        }
    }
    if a != b {
        out.push(immutable(
            &sp.child("template"),
            "core.PodTemplateSpec{...}",
        ));
    }
    if ns.get("completionMode") != os.get("completionMode") {
        out.push(immutable(
            &sp.child("completionMode"),
            &scalar(ns.get("completionMode")),
        ));
    }
    if ns.get("podReplacementPolicy") != os.get("podReplacementPolicy") {
        out.push(immutable(
            &sp.child("podReplacementPolicy"),
            &scalar(ns.get("podReplacementPolicy")),
        ));
    }
}

/// `SetDefaults_CronJob` plus the job template's pod spec (not the Job defaults: a
/// `JobTemplateSpec` is not a Job).
pub fn default_cron_job(o: &mut Value) {
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    default_str(spec, "concurrencyPolicy", "Allow");
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    let jt = obj_at(spec, "jobTemplate").expect("spec is an object");
    default(jt, "metadata", json!({}));
    let js = obj_at(jt, "spec").expect("object");
    if let Some(t) = obj_at(js, "template") {
        podspec::default_template(t);
    }
}

/// The cron parser's (robfig/cron `ParseStandard`) field check: five fields or a descriptor,
/// numbers within each field's range.
fn cron_error(schedule: &str) -> Option<String> {
    let spec = schedule.trim();
    let spec = if let Some(rest) = spec
        .strip_prefix("TZ=")
        .or_else(|| spec.strip_prefix("CRON_TZ="))
    {
        rest.split_once(' ').map(|(_, r)| r.trim()).unwrap_or("")
    } else {
        spec
    };
    if let Some(d) = spec.strip_prefix('@') {
        return match d {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => None,
            d if d.starts_with("every ") => None,
            _ => Some(format!("unrecognized descriptor: {spec}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];
    for (f, (min, max)) in fields.iter().zip(ranges) {
        for part in f.split(',') {
            let range = part.split('/').next().unwrap_or(part);
            if range == "*" || range == "?" {
                continue;
            }
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            for (n, which) in [(lo, "beginning"), (hi, "end")] {
                let Ok(v) = n.parse::<i64>() else {
                    // Month and weekday names parse too.
                    if n.chars().all(|c| c.is_ascii_alphabetic()) {
                        continue;
                    }
                    return Some(format!(
                        "failed to parse int from {n}: strconv.Atoi: parsing {}: invalid syntax",
                        q(n)
                    ));
                };
                if which == "beginning" && v < min {
                    return Some(format!(
                        "beginning of range ({v}) below minimum ({min}): {part}"
                    ));
                }
                if which == "end" && v > max {
                    return Some(format!("end of range ({v}) above maximum ({max}): {part}"));
                }
            }
        }
    }
    None
}

pub fn validate_cron_job(o: &Value, create: bool, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    let schedule = s(&spec, "schedule");
    if schedule.is_empty() {
        out.push(required(&sp.child("schedule"), ""));
    } else if let Some(e) = cron_error(schedule) {
        out.push(invalid_str(&sp.child("schedule"), schedule, &e));
    }
    if let Some(n) = i(&spec, "startingDeadlineSeconds")
        && n < 0
    {
        out.push(invalid(
            &sp.child("startingDeadlineSeconds"),
            &n.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let cp = sp.child("concurrencyPolicy");
    match s(&spec, "concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => out.push(required(&cp, "")),
        other => out.push(not_supported(
            &cp,
            &q(other),
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jt = spec.get("jobTemplate").cloned().unwrap_or(json!({}));
    let jsp = sp.at("jobTemplate.spec");
    let js = jt.get("spec").cloned().unwrap_or(json!({}));
    job_spec_common(&js, &jsp, out);
    if let Some(x) = js.get("selector").filter(|v| !v.is_null()) {
        out.push(invalid(
            &jsp.child("selector"),
            &go(Some(x)),
            "`selector` will be auto-generated",
        ));
    }
    if js.get("manualSelector") == Some(&json!(true)) {
        out.push(not_supported(
            &jsp.child("manualSelector"),
            "true",
            &["nil", "false"],
        ));
    }
    for f in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(n) = i(&spec, f)
            && n < 0
        {
            out.push(invalid(
                &sp.child(f),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    let name = meta_str(o, "name");
    if create && name.len() > 52 {
        out.push(invalid_str(
            &Path::new("metadata.name"),
            name,
            "must be no more than 52 characters",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron() {
        assert_eq!(cron_error("*/5 * * * *"), None);
        assert_eq!(cron_error("@hourly"), None);
        assert_eq!(
            cron_error("bad"),
            Some("expected exactly 5 fields, found 1: [bad]".into())
        );
        assert_eq!(
            cron_error("61 * * * *"),
            Some("end of range (61) above maximum (59): 61".into())
        );
    }
}
