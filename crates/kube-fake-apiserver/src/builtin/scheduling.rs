//! `scheduling.k8s.io/v1` PriorityClasses and `autoscaling/v2` HorizontalPodAutoscalers: their
//! defaults (`pkg/apis/scheduling/v1/defaults.go`, `pkg/apis/autoscaling/v2/defaults.go`).
use serde_json::{Value, json};

use super::json::{default, obj_at};

pub fn default_priority_class(o: &mut Value) {
    default(o, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// `SetDefaults_HorizontalPodAutoscaler`: one replica at least, 80% CPU when no metric is set
/// (the behavior's rules are filled only when a behavior is given).
pub fn default_hpa(o: &mut Value) {
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    default(spec, "minReplicas", json!(1));
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
    if let Some(b) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        let up = obj_at(b, "scaleUp").expect("behavior is an object");
        default(up, "stabilizationWindowSeconds", json!(0));
        default(up, "selectPolicy", json!("Max"));
        default(
            up,
            "policies",
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
        let down = obj_at(b, "scaleDown").expect("behavior is an object");
        default(down, "selectPolicy", json!("Max"));
        default(
            down,
            "policies",
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}
