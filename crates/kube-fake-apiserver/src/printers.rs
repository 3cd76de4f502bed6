//! kube-apiserver's Table printers (`pkg/printers/internalversion/printers.go`) for the common
//! built-in kinds: their columns (wide ones at priority 1) and cells, computed from the object
//! as the printer handlers compute them.
use serde_json::{Value, json};

use crate::table::{NAME_DESCRIPTION, human_duration, row, table};

/// The built-in kinds with a printer here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printer {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    ConfigMap,
    Secret,
    Namespace,
    Service,
    Pod,
    Job,
    CronJob,
    /// ValidatingAdmissionPolicy (`Validations`) and MutatingAdmissionPolicy (`Mutations`).
    AdmissionPolicy(&'static str),
    /// Their bindings.
    AdmissionPolicyBinding,
}

impl Printer {
    /// The printer of a built-in resource, if it has one here.
    pub fn of(group: &str, plural: &str) -> Option<Printer> {
        Some(match (group, plural) {
            ("apps", "deployments") => Printer::Deployment,
            ("apps", "replicasets") => Printer::ReplicaSet,
            ("apps", "statefulsets") => Printer::StatefulSet,
            ("apps", "daemonsets") => Printer::DaemonSet,
            ("", "configmaps") => Printer::ConfigMap,
            ("", "secrets") => Printer::Secret,
            ("", "namespaces") => Printer::Namespace,
            ("", "services") => Printer::Service,
            ("", "pods") => Printer::Pod,
            ("batch", "jobs") => Printer::Job,
            ("batch", "cronjobs") => Printer::CronJob,
            ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
                Printer::AdmissionPolicy("validations")
            }
            ("admissionregistration.k8s.io", "mutatingadmissionpolicies") => {
                Printer::AdmissionPolicy("mutations")
            }
            (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicybindings" | "mutatingadmissionpolicybindings",
            ) => Printer::AdmissionPolicyBinding,
            _ => return None,
        })
    }

    /// Column names, types and priorities after `Name` (`Age` where the printer puts it).
    fn columns(self) -> &'static [(&'static str, &'static str, i32)] {
        const S: &str = "string";
        const I: &str = "integer";
        match self {
            Printer::Deployment => &[
                ("Ready", S, 0),
                ("Up-to-date", S, 0),
                ("Available", S, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
                ("Selector", S, 1),
            ],
            Printer::ReplicaSet => &[
                ("Desired", I, 0),
                ("Current", I, 0),
                ("Ready", I, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
                ("Selector", S, 1),
            ],
            Printer::StatefulSet => &[
                ("Ready", S, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
            ],
            Printer::DaemonSet => &[
                ("Desired", I, 0),
                ("Current", I, 0),
                ("Ready", I, 0),
                ("Up-to-date", I, 0),
                ("Available", I, 0),
                ("Node Selector", S, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
                ("Selector", S, 1),
            ],
            Printer::ConfigMap => &[("Data", S, 0), ("Age", S, 0)],
            Printer::Secret => &[("Type", S, 0), ("Data", S, 0), ("Age", S, 0)],
            Printer::Namespace => &[("Status", S, 0), ("Age", S, 0)],
            Printer::Service => &[
                ("Type", S, 0),
                ("Cluster-IP", S, 0),
                ("External-IP", S, 0),
                ("Port(s)", S, 0),
                ("Age", S, 0),
                ("Selector", S, 1),
            ],
            Printer::Pod => &[
                ("Ready", S, 0),
                ("Status", S, 0),
                ("Restarts", S, 0),
                ("Age", S, 0),
                ("IP", S, 1),
                ("Node", S, 1),
                ("Nominated Node", S, 1),
                ("Readiness Gates", S, 1),
            ],
            Printer::Job => &[
                ("Status", S, 0),
                ("Completions", S, 0),
                ("Duration", S, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
                ("Selector", S, 1),
            ],
            Printer::CronJob => &[
                ("Schedule", S, 0),
                ("Timezone", S, 0),
                ("Suspend", "boolean", 0),
                ("Active", I, 0),
                ("Last Schedule", S, 0),
                ("Age", S, 0),
                ("Containers", S, 1),
                ("Images", S, 1),
                ("Selector", S, 1),
            ],
            Printer::AdmissionPolicy("mutations") => {
                &[("Mutations", I, 0), ("ParamKind", S, 0), ("Age", S, 0)]
            }
            Printer::AdmissionPolicy(_) => {
                &[("Validations", I, 0), ("ParamKind", S, 0), ("Age", S, 0)]
            }
            Printer::AdmissionPolicyBinding => {
                &[("PolicyName", S, 0), ("ParamRef", S, 0), ("Age", S, 0)]
            }
        }
    }

    fn cells(self, obj: &Value, now: jiff::Timestamp) -> Vec<Value> {
        let int = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let text = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let len = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_object)
                .map_or(0, |m| m.len() as i64)
        };
        let age = json!(age(obj, now));
        let (containers, images) = containers(obj, "/spec/template/spec/containers");
        let selector = json!(label_selector(obj.pointer("/spec/selector")));
        match self {
            Printer::Deployment => vec![
                json!(format!(
                    "{}/{}",
                    int("/status/readyReplicas"),
                    int("/spec/replicas")
                )),
                json!(int("/status/updatedReplicas")),
                json!(int("/status/availableReplicas")),
                age,
                containers,
                images,
                selector,
            ],
            Printer::ReplicaSet => vec![
                json!(int("/spec/replicas")),
                json!(int("/status/replicas")),
                json!(int("/status/readyReplicas")),
                age,
                containers,
                images,
                selector,
            ],
            Printer::StatefulSet => vec![
                json!(format!(
                    "{}/{}",
                    int("/status/readyReplicas"),
                    int("/spec/replicas")
                )),
                age,
                containers,
                images,
            ],
            Printer::DaemonSet => vec![
                json!(int("/status/desiredNumberScheduled")),
                json!(int("/status/currentNumberScheduled")),
                json!(int("/status/numberReady")),
                json!(int("/status/updatedNumberScheduled")),
                json!(int("/status/numberAvailable")),
                json!(labels(obj.pointer("/spec/template/spec/nodeSelector"))),
                age,
                containers,
                images,
                selector,
            ],
            Printer::ConfigMap => vec![json!(len("/data") + len("/binaryData")), age],
            Printer::Secret => vec![json!(text("/type")), json!(len("/data")), age],
            Printer::Namespace => vec![json!(text("/status/phase")), age],
            Printer::Service => vec![
                json!(text("/spec/type")),
                json!(
                    obj.pointer("/spec/clusterIPs/0")
                        .and_then(Value::as_str)
                        .unwrap_or("<none>")
                ),
                json!(external_ip(obj)),
                json!(ports(obj)),
                age,
                json!(labels(obj.pointer("/spec/selector"))),
            ],
            Printer::Pod => {
                let or_none = |p: &str| {
                    let t = text(p);
                    json!(if t.is_empty() {
                        "<none>".to_string()
                    } else {
                        t
                    })
                };
                let (ready, status, restarts) = pod_status(obj);
                let gates = obj
                    .pointer("/spec/readinessGates")
                    .and_then(Value::as_array)
                    .filter(|g| !g.is_empty());
                let gates = match gates {
                    None => "<none>".to_string(),
                    Some(gates) => {
                        let conditions =
                            obj.pointer("/status/conditions").and_then(Value::as_array);
                        let met = gates
                            .iter()
                            .filter(|g| {
                                conditions.into_iter().flatten().any(|c| {
                                    c.get("type") == g.get("conditionType")
                                        && c.get("status").and_then(Value::as_str) == Some("True")
                                })
                            })
                            .count();
                        format!("{met}/{}", gates.len())
                    }
                };
                vec![
                    json!(ready),
                    json!(status),
                    json!(restarts),
                    age,
                    or_none("/status/podIP"),
                    or_none("/spec/nodeName"),
                    or_none("/status/nominatedNodeName"),
                    json!(gates),
                ]
            }
            Printer::Job => {
                let succeeded = int("/status/succeeded");
                let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
                    Some(c) => format!("{succeeded}/{c}"),
                    None => match int("/spec/parallelism") {
                        p if p > 1 => format!("{succeeded}/1 of {p}"),
                        _ => format!("{succeeded}/1"),
                    },
                };
                let time = |p: &str| {
                    obj.pointer(p)
                        .and_then(Value::as_str)
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                };
                let duration = match (time("/status/startTime"), time("/status/completionTime")) {
                    (None, _) => String::new(),
                    (Some(start), None) => human_duration(now.as_second() - start.as_second()),
                    (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
                };
                let has = |t: &str| {
                    obj.pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .any(|c| {
                            c.get("type").and_then(Value::as_str) == Some(t)
                                && c.get("status").and_then(Value::as_str) == Some("True")
                        })
                };
                let deleting =
                    crate::util::meta(obj, "deletionTimestamp").is_some_and(|t| !t.is_null());
                let status = if has("Complete") {
                    "Complete"
                } else if has("Failed") {
                    "Failed"
                } else if deleting {
                    "Terminating"
                } else if has("Suspended") {
                    "Suspended"
                } else if has("FailureTarget") {
                    "FailureTarget"
                } else if has("SuccessCriteriaMet") {
                    "SuccessCriteriaMet"
                } else {
                    "Running"
                };
                vec![
                    json!(status),
                    json!(completions),
                    json!(duration),
                    age,
                    containers,
                    images,
                    selector,
                ]
            }
            Printer::CronJob => {
                let template = "/spec/jobTemplate/spec/template/spec/containers";
                let (containers, images) = crate::printers::containers(obj, template);
                let last = obj
                    .pointer("/status/lastScheduleTime")
                    .and_then(Value::as_str)
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .map_or_else(
                        || "<none>".to_string(),
                        |t| human_duration(now.as_second() - t.as_second()),
                    );
                let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
                    None => "<unset>",
                    Some(true) => "True",
                    Some(false) => "False",
                };
                let zone = text("/spec/timeZone");
                vec![
                    json!(text("/spec/schedule")),
                    json!(if zone.is_empty() {
                        "<none>".to_string()
                    } else {
                        zone
                    }),
                    json!(suspend),
                    json!(
                        obj.pointer("/status/active")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len)
                    ),
                    json!(last),
                    age,
                    containers,
                    images,
                    json!(label_selector(
                        obj.pointer("/spec/jobTemplate/spec/selector")
                    )),
                ]
            }
            Printer::AdmissionPolicy(list) => {
                let kind = match obj.pointer("/spec/paramKind").filter(|p| p.is_object()) {
                    Some(pk) => format!("{}/{}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
                    None => "<unset>".to_string(),
                };
                let count = obj
                    .pointer(&format!("/spec/{list}"))
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                vec![json!(count), json!(kind), age]
            }
            Printer::AdmissionPolicyBinding => {
                let param = match obj.pointer("/spec/paramRef").filter(|p| p.is_object()) {
                    None => "<unset>".to_string(),
                    Some(pr) if !str_at(pr, "/name").is_empty() => {
                        match str_at(pr, "/namespace") {
                            // A cluster-scoped param cannot be told apart here.
                            "" => format!("*/{}", str_at(pr, "/name")),
                            ns => format!("{ns}/{}", str_at(pr, "/name")),
                        }
                    }
                    Some(pr) => match pr.get("selector").filter(|s| !s.is_null()) {
                        Some(sel) => go_label_selector(sel),
                        None => "<unset>".to_string(),
                    },
                };
                vec![json!(text("/spec/policyName")), json!(param), age]
            }
        }
    }
}

fn str_at<'v>(v: &'v Value, p: &str) -> &'v str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// A `LabelSelector` as its generated Go `String()` prints it (what `printers.go` shows for a
/// binding's `paramRef.selector`): `&LabelSelector{MatchLabels:map[string]string{a: b,},
/// MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,
/// Values:[x y],},},}`, labels in key order.
fn go_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let exprs: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            let values: Vec<&str> = r
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(r, "/key"),
                str_at(r, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

/// `printPod`'s Ready (`ready/containers`), Status (the phase, or the pod's reason, or the last
/// container's waiting/terminated reason, `Terminating` while deleting) and Restarts (their sum).
/// Init containers' states are not looked at.
fn pod_status(pod: &Value) -> (String, String, String) {
    let total = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut reason = pod
        .pointer("/status/reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .or_else(|| pod.pointer("/status/phase").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let (mut ready, mut restarts, mut running) = (0, 0, false);
    for c in statuses.iter().rev() {
        restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        let state = c.get("state");
        let waiting = state.and_then(|s| s.get("waiting"));
        let terminated = state.and_then(|s| s.get("terminated"));
        let why = |s: Option<&Value>| {
            s.and_then(|s| s.get("reason"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_string)
        };
        if let Some(r) = why(waiting) {
            reason = r;
        } else if let Some(r) = why(terminated) {
            reason = r;
        } else if let Some(t) = terminated {
            let code = |k: &str| t.get(k).and_then(Value::as_i64).unwrap_or(0);
            reason = if code("signal") != 0 {
                format!("Signal:{}", code("signal"))
            } else {
                format!("ExitCode:{}", code("exitCode"))
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && state.and_then(|s| s.get("running")).is_some()
        {
            running = true;
            ready += 1;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    if crate::util::meta(pod, "deletionTimestamp").is_some_and(|t| !t.is_null()) {
        reason = if pod.pointer("/status/reason").and_then(Value::as_str) == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    (format!("{ready}/{total}"), reason, restarts.to_string())
}

/// `translateTimestampSince`: the age, `<unknown>` without a creation time.
fn age(obj: &Value, now: jiff::Timestamp) -> String {
    crate::util::meta(obj, "creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_string(),
            |t| human_duration(now.as_second() - t.as_second()),
        )
}

/// `getServiceExternalIP` (the server prints wide: load balancer addresses untruncated).
fn external_ip(svc: &Value) -> String {
    let strings = |p: &str| -> Vec<String> {
        svc.pointer(p)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let external = strings("/spec/externalIPs");
    match svc
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".into(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut all: Vec<String> = svc
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let ip = i.get("ip").and_then(Value::as_str).unwrap_or("");
                    let host = i.get("hostname").and_then(Value::as_str).unwrap_or("");
                    [ip, host]
                        .into_iter()
                        .find(|s| !s.is_empty())
                        .map(str::to_string)
                })
                .collect();
            all.extend(external);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => svc
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`: `port[:nodePort]/protocol`, comma-separated, `<none>` without ports.
fn ports(svc: &Value) -> String {
    let pieces: Vec<String> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n > 0) {
                Some(node) => format!("{port}:{node}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    if pieces.is_empty() {
        "<none>".into()
    } else {
        pieces.join(",")
    }
}

/// The container names and images at `pointer`, comma-separated (`layoutContainerCells`).
fn containers(obj: &Value, pointer: &str) -> (Value, Value) {
    let list = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let join = |k: &str| {
        list.iter()
            .map(|c| c.get(k).and_then(Value::as_str).unwrap_or(""))
            .collect::<Vec<_>>()
            .join(",")
    };
    (json!(join("name")), json!(join("image")))
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` when empty.
fn labels(m: Option<&Value>) -> String {
    let pairs: Vec<String> = m
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `metav1.FormatLabelSelector`: the selector's requirements, `<none>` when there are none.
fn label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(Value::Object(m)) = sel.get("matchLabels") {
        parts.extend(
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))),
        );
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                op => format!("{key} {op} ({})", values.join(",")),
            },
        );
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// The `Table` of `objects` with `printer`'s columns.
pub fn to_table(
    printer: Printer,
    objects: &[Value],
    include_object: &str,
    list_meta: Value,
) -> Value {
    let now = jiff::Timestamp::now();
    let mut definitions = vec![json!({"name": "Name", "type": "string", "format": "name",
                                      "description": NAME_DESCRIPTION, "priority": 0})];
    definitions.extend(printer.columns().iter().map(|(name, type_, priority)| {
        json!({"name": name, "type": type_, "format": "", "description": "", "priority": priority})
    }));
    let rows = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(crate::util::meta_str(obj, "name"))];
            cells.extend(printer.cells(obj, now));
            row(cells, obj, include_object)
        })
        .collect();
    table(list_meta, definitions, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_policy_rows_as_printers_go_prints_them() {
        let p = json!({"metadata": {"name": "p"}, "spec": {"mutations": [{}, {}],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        let t = to_table(
            Printer::AdmissionPolicy("mutations"),
            &[p],
            "None",
            json!({}),
        );
        assert_eq!(t["columnDefinitions"][1]["name"], "Mutations");
        assert_eq!(t["rows"][0]["cells"][1], 2);
        assert_eq!(t["rows"][0]["cells"][2], "v1/ConfigMap");
        let v = json!({"metadata": {"name": "v"}, "spec": {"validations": [{}]}});
        let t = to_table(
            Printer::AdmissionPolicy("validations"),
            &[v],
            "None",
            json!({}),
        );
        assert_eq!(t["columnDefinitions"][1]["name"], "Validations");
        assert_eq!(t["rows"][0]["cells"][2], "<unset>");
        let cell = |pr: Value| {
            let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": pr}});
            to_table(Printer::AdmissionPolicyBinding, &[b], "None", json!({}))["rows"][0]["cells"]
                [2]
            .clone()
        };
        assert_eq!(cell(json!({"name": "x"})), "*/x");
        assert_eq!(cell(json!({"name": "x", "namespace": "ns"})), "ns/x");
        assert_eq!(cell(Value::Null), "<unset>");
        assert_eq!(
            cell(
                json!({"selector": {"matchLabels": {"role": "param", "a": "b"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]}})
            ),
            "&LabelSelector{MatchLabels:map[string]string{a: b,role: param,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[x y],},},}"
        );
    }

    #[test]
    fn deployment_row_as_kubectl_prints_it() {
        let d = json!({"metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                "template": {"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "proxy", "image": "envoy"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let t = to_table(Printer::Deployment, &[d], "None", json!({}));
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "web");
        assert_eq!(cells[1], "2/3");
        assert_eq!(cells[2], 3);
        assert_eq!(cells[5], "app,proxy");
        assert_eq!(cells[6], "app:1,envoy");
        assert_eq!(cells[7], "app=web,tier in (a,b)");
        assert_eq!(t["columnDefinitions"][7]["priority"], 1);
        assert_eq!(Printer::of("", "configmaps"), Some(Printer::ConfigMap));
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": ""}});
        let t = to_table(Printer::ConfigMap, &[cm], "None", json!({}));
        assert_eq!(t["rows"][0]["cells"], json!(["c", 2, "<unknown>"]));
        let svc = json!({"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer",
            "clusterIPs": ["10.0.0.7"], "selector": {"app": "db"},
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}});
        let t = to_table(Printer::Service, &[svc], "None", json!({}));
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "s",
                "LoadBalancer",
                "10.0.0.7",
                "<pending>",
                "80:30080/TCP,53/UDP",
                "<unknown>",
                "app=db"
            ])
        );
    }
}
