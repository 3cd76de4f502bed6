//! `policy/v1` PodDisruptionBudgets: the strategy's reset status and
//! `ValidatePodDisruptionBudgetSpec` (`pkg/apis/policy/validation/validation.go`).
use serde_json::{Value, json};

use super::field::{Path, invalid, not_supported, q};
use super::json::{has, s};
use super::labelselector::{self as sel, go_int_or_string};
use crate::schema::Cause;

/// `podDisruptionBudgetStrategy.PrepareForCreate`: status reset (its counters are not
/// `omitempty`, so they are encoded as zeros).
pub fn prepare_create(o: &mut Value) {
    o["status"] = json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0});
}

fn int_or_percent(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    match v {
        Some(Value::String(t)) => {
            let n = t
                .strip_suffix('%')
                .filter(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
            match n {
                None => out.push(invalid(
                    path,
                    &go_int_or_string(v),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )),
                Some(n) if n.parse::<i64>().unwrap_or(0) > 100 => {
                    out.push(invalid(path, &go_int_or_string(v), "must not be greater than 100%"));
                }
                _ => {}
            }
        }
        Some(Value::Number(n)) if n.as_i64().unwrap_or(0) < 0 => {
            out.push(invalid(
                path,
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        _ => {}
    }
}

pub fn validate(o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    if has(&spec, "minAvailable") && has(&spec, "maxUnavailable") {
        out.push(invalid(
            &sp,
            "policy.PodDisruptionBudgetSpec{...}",
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    int_or_percent(spec.get("minAvailable"), &sp.child("minAvailable"), out);
    int_or_percent(spec.get("maxUnavailable"), &sp.child("maxUnavailable"), out);
    sel::validate(spec.get("selector"), &sp.child("selector"), out);
    if has(&spec, "unhealthyPodEvictionPolicy") {
        let p = s(&spec, "unhealthyPodEvictionPolicy");
        if !matches!(p, "AlwaysAllow" | "IfHealthyBudget") {
            out.push(not_supported(
                &sp.child("unhealthyPodEvictionPolicy"),
                &q(p),
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
}
