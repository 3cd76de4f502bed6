//! The pod spec every workload shares: `SetDefaults_PodSpec` and the generated nested defaults
//! (`pkg/apis/core/v1/defaults.go`, `zz_generated.defaults.go`), and `ValidatePodTemplateSpec` /
//! `ValidatePodSpec` (`pkg/apis/core/validation/validation.go`).
use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use super::field::{
    Path, duplicate, forbidden, invalid, invalid_str, not_found, not_supported, q, required,
};
use super::json::{default, default_nonzero, default_str, has, i, items, items_mut, obj_at, s};
use super::meta;
use super::names::{dns1123_label, env_var_name, port_name, port_num};
use super::quantity;
use crate::schema::Cause;

/// The volume sources a `Volume` may name (one of them).
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// `parsers.ParseImageName`'s tag: `latest` when there is neither tag nor digest.
fn image_tag(image: &str) -> String {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let last = rest.rsplit('/').next().unwrap_or(rest);
    match last.split_once(':') {
        Some((_, t)) => t.to_string(),
        None if digest.is_some() => String::new(),
        None => "latest".into(),
    }
}

fn pull_policy_for(image: &str) -> &'static str {
    if image_tag(image) == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn http_get(h: &mut Value) {
    if let Some(g) = h.get_mut("httpGet").filter(|g| g.is_object()) {
        default_str(g, "path", "/");
        default_str(g, "scheme", "HTTP");
    }
}

fn field_ref(holder: &mut Value) {
    if let Some(f) = holder.get_mut("fieldRef").filter(|f| f.is_object()) {
        default_str(f, "apiVersion", "v1");
    }
}

/// `SetDefaults_Container` plus its generated nested defaults.
fn default_container(c: &mut Value) {
    let image = s(c, "image").to_string();
    default_str(c, "imagePullPolicy", pull_policy_for(&image));
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    // `resources` is a struct (always encoded, `{}` when empty); its lists are rounded and
    // printed canonically (`SetDefaults_ResourceList`).
    default(c, "resources", json!({}));
    if let Some(r) = c.get_mut("resources") {
        quantity::canonical_list(r.get_mut("limits"));
        quantity::canonical_list(r.get_mut("requests"));
    }
    for p in items_mut(c, "ports") {
        default_str(p, "protocol", "TCP");
    }
    for e in items_mut(c, "env") {
        if let Some(vf) = e.get_mut("valueFrom").filter(|v| v.is_object()) {
            field_ref(vf);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
            default_nonzero(p, "timeoutSeconds", 1);
            default_nonzero(p, "periodSeconds", 10);
            default_nonzero(p, "successThreshold", 1);
            default_nonzero(p, "failureThreshold", 3);
            http_get(p);
        }
    }
    if let Some(l) = c.get_mut("lifecycle").filter(|l| l.is_object()) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get_mut(hook).filter(|h| h.is_object()) {
                http_get(h);
            }
        }
    }
}

/// `SetDefaults_Volume` and the defaults of its sources.
fn default_volume(v: &mut Value) {
    if !VOLUME_SOURCES.iter().any(|k| has(v, k)) {
        v["emptyDir"] = json!({});
    }
    if let Some(img) = v.get_mut("image").filter(|i| i.is_object()) {
        let reference = s(img, "reference").to_string();
        default_str(img, "pullPolicy", pull_policy_for(&reference));
    }
    if let Some(h) = v.get_mut("hostPath").filter(|h| h.is_object()) {
        default(h, "type", json!(""));
    }
    for src in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(x) = v.get_mut(src).filter(|x| x.is_object()) {
            default(x, "defaultMode", json!(420));
        }
    }
    if let Some(d) = v.get_mut("downwardAPI").filter(|x| x.is_object()) {
        for it in items_mut(d, "items") {
            field_ref(it);
        }
    }
    if let Some(p) = v.get_mut("projected").filter(|x| x.is_object()) {
        for src in items_mut(p, "sources") {
            if let Some(d) = src.get_mut("downwardAPI").filter(|x| x.is_object()) {
                for it in items_mut(d, "items") {
                    field_ref(it);
                }
            }
            if let Some(t) = src.get_mut("serviceAccountToken").filter(|x| x.is_object()) {
                default(t, "expirationSeconds", json!(3600));
            }
        }
    }
    if let Some(x) = v.get_mut("iscsi").filter(|x| x.is_object()) {
        default_str(x, "iscsiInterface", "default");
    }
    if let Some(x) = v.get_mut("rbd").filter(|x| x.is_object()) {
        default_str(x, "pool", "rbd");
        default_str(x, "user", "admin");
        default_str(x, "keyring", "/etc/ceph/keyring");
    }
    if let Some(x) = v.get_mut("azureDisk").filter(|x| x.is_object()) {
        default(x, "cachingMode", json!("ReadWrite"));
        default(x, "fsType", json!("ext4"));
        default(x, "readOnly", json!(false));
        default(x, "kind", json!("Shared"));
    }
    if let Some(x) = v.get_mut("scaleIO").filter(|x| x.is_object()) {
        default_str(x, "storageMode", "ThinProvisioned");
        default_str(x, "fsType", "xfs");
    }
    if let Some(t) = v.pointer_mut("/ephemeral/volumeClaimTemplate/spec")
        && t.is_object()
    {
        default(t, "volumeMode", json!("Filesystem"));
    }
}

/// `SetDefaults_PodSpec` and the generated defaults of everything in it.
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default(spec, "securityContext", json!({}));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    for v in items_mut(spec, "volumes") {
        default_volume(v);
    }
    quantity::canonical_list(spec.get_mut("overhead"));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in items_mut(spec, list).filter(|c| c.is_object()) {
            default_container(c);
        }
    }
}

/// A pod template: `metadata` is a struct (encoded `{}` when empty), then the pod spec.
pub fn default_template(t: &mut Value) {
    if !t.is_object() {
        return;
    }
    default(t, "metadata", json!({}));
    if let Some(spec) = obj_at(t, "spec") {
        default_pod_spec(spec);
    }
}

/// `SetDefaults_Pod` (only on Pods, not templates): requests from limits, `enableServiceLinks`,
/// host ports under host networking.
pub fn default_pod(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        for c in items_mut(spec, list) {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                continue;
            };
            let res = obj_at(c, "resources").expect("container is an object");
            let req = obj_at(res, "requests").expect("resources is an object");
            for (k, v) in limits {
                default(req, &k, v);
            }
        }
    }
    default(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&json!(true)) {
        for list in ["containers", "initContainers"] {
            for c in items_mut(spec, list) {
                for p in items_mut(c, "ports") {
                    if i(p, "hostPort").unwrap_or(0) == 0
                        && let Some(cp) = p.get("containerPort").cloned()
                    {
                        p["hostPort"] = cp;
                    }
                }
            }
        }
    }
}

/// `ValidatePodTemplateSpec` (labels are checked at `<path>.labels`, as the source does).
pub fn validate_template(t: &Value, path: &Path, out: &mut Vec<Cause>) {
    let m = t.get("metadata");
    meta::labels(m.and_then(|m| m.get("labels")), &path.child("labels"), out);
    meta::annotations(
        m.and_then(|m| m.get("annotations")),
        &path.child("annotations"),
        out,
    );
    let spec = t.get("spec").cloned().unwrap_or(json!({}));
    validate_pod_spec(&spec, &path.child("spec"), out);
    if items(&spec, "ephemeralContainers").next().is_some() {
        out.push(forbidden(
            &path.at("spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// `ValidatePodSpec`, the rules controllers trip on (see ARCHITECTURE.md for those left out).
pub fn validate_pod_spec(spec: &Value, path: &Path, out: &mut Vec<Cause>) {
    let volumes = validate_volumes(spec, &path.child("volumes"), out);
    let mut names = HashSet::new();
    validate_containers(spec, "containers", &volumes, &mut names, path, out);
    validate_containers(spec, "initContainers", &volumes, &mut names, path, out);
    let restart = s(spec, "restartPolicy");
    let rp = path.child("restartPolicy");
    match restart {
        "Always" | "OnFailure" | "Never" => {}
        "" => out.push(required(&rp, "")),
        other => out.push(not_supported(
            &rp,
            &q(other),
            &["Always", "OnFailure", "Never"],
        )),
    }
    let dns = s(spec, "dnsPolicy");
    let dp = path.child("dnsPolicy");
    match dns {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => out.push(required(&dp, "")),
        other => out.push(not_supported(
            &dp,
            &q(other),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    meta::labels(spec.get("nodeSelector"), &path.child("nodeSelector"), out);
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        for m in super::names::dns1123_subdomain(sa) {
            out.push(invalid_str(&path.child("serviceAccountName"), sa, &m));
        }
    }
    if let Some(ads) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        out.push(invalid(
            &path.child("activeDeadlineSeconds"),
            &ads.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for f in ["hostname", "subdomain"] {
        let v = s(spec, f);
        if !v.is_empty() {
            for m in dns1123_label(v) {
                out.push(invalid_str(&path.child(f), v, &m));
            }
        }
    }
    if let Some(g) = spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        && g < 0
    {
        out.push(invalid(
            &path.child("terminationGracePeriodSeconds"),
            &g.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}

/// `ValidateVolumes`: names (DNS-1123 labels, unique), exactly one source, the few source
/// fields that are required. Returns the valid volumes' names for the mounts.
fn validate_volumes(spec: &Value, path: &Path, out: &mut Vec<Cause>) -> HashSet<String> {
    let mut names = HashSet::new();
    for (idx, v) in items(spec, "volumes").enumerate() {
        let p = path.index(idx);
        let mut el = Vec::new();
        let sources: Vec<&&str> = VOLUME_SOURCES.iter().filter(|k| has(v, k)).collect();
        if sources.is_empty() {
            el.push(required(&p, "must specify a volume type"));
        }
        for extra in sources.iter().skip(1) {
            el.push(forbidden(
                &p.child(extra),
                "may not specify more than 1 volume type",
            ));
        }
        if let Some(src) = sources.first() {
            let sp = p.child(src);
            let body = &v[**src];
            let need = |field: &str, el: &mut Vec<Cause>| {
                if s(body, field).is_empty() {
                    el.push(required(&sp.child(field), ""));
                }
            };
            match **src {
                "configMap" => need("name", &mut el),
                "secret" => need("secretName", &mut el),
                "persistentVolumeClaim" => need("claimName", &mut el),
                "hostPath" => need("path", &mut el),
                "nfs" => {
                    need("server", &mut el);
                    need("path", &mut el);
                }
                "csi" => need("driver", &mut el),
                _ => {}
            }
            for src in ["configMap", "secret", "downwardAPI", "projected"] {
                if **sources[0] == *src
                    && let Some(mode) = body.get("defaultMode").and_then(Value::as_i64)
                    && !(0..=0o777).contains(&mode)
                {
                    el.push(invalid(
                        &sp.child("defaultMode"),
                        &mode.to_string(),
                        "must be a number between 0 and 0777 (octal), both inclusive",
                    ));
                }
            }
        }
        let name = s(v, "name");
        let np = p.child("name");
        if name.is_empty() {
            el.push(required(&np, ""));
        } else {
            for m in dns1123_label(name) {
                el.push(invalid_str(&np, name, &m));
            }
        }
        if names.contains(name) {
            el.push(duplicate(&np, &q(name)));
        }
        if el.is_empty() {
            names.insert(name.to_string());
        } else {
            out.extend(el);
        }
    }
    names
}

fn validate_containers(
    spec: &Value,
    list: &str,
    volumes: &HashSet<String>,
    names: &mut HashSet<String>,
    path: &Path,
    out: &mut Vec<Cause>,
) {
    let lp = path.child(list);
    let cs: Vec<&Value> = items(spec, list).collect();
    if list == "containers" && cs.is_empty() {
        out.push(required(&lp, ""));
        return;
    }
    for (idx, c) in cs.iter().enumerate() {
        let p = lp.index(idx);
        validate_container(c, volumes, &p, out);
        let init = list == "initContainers";
        // `validateInitContainerRestartPolicy`: a sidecar is an init container restarted
        // `Always`; no other value exists.
        let restart = c.get("restartPolicy").and_then(Value::as_str);
        if init && let Some(r) = restart.filter(|r| *r != "Always") {
            out.push(not_supported(&p.child("restartPolicy"), &q(r), &["Always"]));
        }
        let name = s(c, "name");
        if names.contains(name) {
            out.push(duplicate(&p.child("name"), &q(name)));
        } else {
            names.insert(name.to_string());
        }
        if !init || restart == Some("Always") {
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(pr) = c.get(probe).filter(|p| p.is_object()) {
                    validate_probe(probe, pr, &p.child(probe), out);
                }
            }
            // Per-container restart rules are behind an alpha gate in 1.35 (off).
            if !init && c.get("restartPolicy").is_some_and(|v| !v.is_null()) {
                out.push(forbidden(
                    &p.child("restartPolicy"),
                    "may not be set for non-init containers",
                ));
            }
        } else {
            // Only sidecars run alongside the pod, so only they may have these.
            for f in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if c.get(f).is_some_and(|v| !v.is_null()) {
                    out.push(forbidden(
                        &p.child(f),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
}

fn validate_probe(kind: &str, pr: &Value, path: &Path, out: &mut Vec<Cause>) {
    let handlers = ["exec", "httpGet", "tcpSocket", "grpc"];
    let set: Vec<&&str> = handlers.iter().filter(|h| has(pr, h)).collect();
    if set.is_empty() {
        out.push(required(path, "must specify a handler type"));
    }
    for extra in set.iter().skip(1) {
        out.push(forbidden(
            &path.child(extra),
            "may not specify more than 1 handler type",
        ));
    }
    for f in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        if let Some(n) = i(pr, f)
            && n < 0
        {
            out.push(invalid(
                &path.child(f),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    if kind != "readinessProbe"
        && let Some(n) = i(pr, "successThreshold")
        && n != 1
    {
        out.push(invalid(
            &path.child("successThreshold"),
            &n.to_string(),
            "must be 1",
        ));
    }
}

fn validate_container(c: &Value, volumes: &HashSet<String>, path: &Path, out: &mut Vec<Cause>) {
    let name = s(c, "name");
    let np = path.child("name");
    if name.is_empty() {
        out.push(required(&np, ""));
    } else {
        for m in dns1123_label(name) {
            out.push(invalid_str(&np, name, &m));
        }
    }
    if s(c, "image").is_empty() {
        out.push(required(&path.child("image"), ""));
    }
    let tmp = path.child("terminationMessagePolicy");
    match s(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => out.push(required(&tmp, "must be 'File' or 'FallbackToLogsOnError'")),
        other => out.push(not_supported(
            &tmp,
            &q(other),
            &["File", "FallbackToLogsOnError"],
        )),
    }
    validate_ports(c, &path.child("ports"), out);
    let ep = path.child("env");
    for (idx, e) in items(c, "env").enumerate() {
        let p = ep.index(idx).child("name");
        let n = s(e, "name");
        if n.is_empty() {
            out.push(required(&p, ""));
        }
        for m in env_var_name(n) {
            out.push(invalid_str(&p, n, &m));
        }
    }
    let mp = path.child("volumeMounts");
    let mut mount_paths = HashSet::new();
    for (idx, m) in items(c, "volumeMounts").enumerate() {
        let p = mp.index(idx);
        let n = s(m, "name");
        if n.is_empty() {
            out.push(required(&p.child("name"), ""));
        }
        if !volumes.contains(n) {
            out.push(not_found(&p.child("name"), &q(n)));
        }
        let at = s(m, "mountPath");
        if at.is_empty() {
            out.push(required(&p.child("mountPath"), ""));
        }
        if !mount_paths.insert(at.to_string()) {
            out.push(invalid_str(&p.child("mountPath"), at, "must be unique"));
        }
    }
    let pp = path.child("imagePullPolicy");
    match s(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => out.push(required(&pp, "")),
        other => out.push(not_supported(
            &pp,
            &q(other),
            &["Always", "IfNotPresent", "Never"],
        )),
    }
    validate_resources(c.get("resources"), &path.child("resources"), out);
}

fn validate_ports(c: &Value, path: &Path, out: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (idx, p) in items(c, "ports").enumerate() {
        let ip = path.index(idx);
        let n = s(p, "name");
        if !n.is_empty() {
            let errs = port_name(n);
            if !errs.is_empty() {
                for m in errs {
                    out.push(invalid_str(&ip.child("name"), n, &m));
                }
            } else if !names.insert(n.to_string()) {
                out.push(duplicate(&ip.child("name"), &q(n)));
            }
        }
        let cp = i(p, "containerPort").unwrap_or(0);
        if cp == 0 {
            out.push(required(&ip.child("containerPort"), ""));
        } else {
            for m in port_num(cp) {
                out.push(invalid(&ip.child("containerPort"), &cp.to_string(), &m));
            }
        }
        let hp = i(p, "hostPort").unwrap_or(0);
        if hp != 0 {
            for m in port_num(hp) {
                out.push(invalid(&ip.child("hostPort"), &hp.to_string(), &m));
            }
        }
        validate_protocol(p, &ip.child("protocol"), out);
    }
}

/// A port's `protocol`: required, one of `SCTP`, `TCP`, `UDP`.
pub fn validate_protocol(p: &Value, path: &Path, out: &mut Vec<Cause>) {
    match s(p, "protocol") {
        "TCP" | "UDP" | "SCTP" => {}
        "" => out.push(required(path, "")),
        other => out.push(not_supported(path, &q(other), &["SCTP", "TCP", "UDP"])),
    }
}

/// The resource names a container may ask for without a domain prefix.
fn standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `ValidateResourceRequirements`: names, non-negative quantities, requests ≤ limits.
pub fn validate_resources(r: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    let Some(r) = r else { return };
    let lim: BTreeMap<String, Value> = r
        .get("limits")
        .and_then(Value::as_object)
        .map(|m| m.clone().into_iter().collect())
        .unwrap_or_default();
    let req: BTreeMap<String, Value> = r
        .get("requests")
        .and_then(Value::as_object)
        .map(|m| m.clone().into_iter().collect())
        .unwrap_or_default();
    let check = |which: &str, name: &str, q: &Value, out: &mut Vec<Cause>| {
        let p = path.child(which).key(name);
        if !name.contains('/') && !standard_container_resource(name) {
            out.push(invalid_str(
                &p,
                name,
                "must be a standard resource for containers",
            ));
        }
        if let Some(v) = quantity::parse(q)
            && v < 0.0
        {
            out.push(invalid(
                &p,
                &q_text(q),
                "must be greater than or equal to 0",
            ));
        }
    };
    for (k, v) in &lim {
        check("limits", k, v, out);
    }
    for (k, v) in &req {
        check("requests", k, v, out);
        if let Some(l) = lim.get(k)
            && let (Some(a), Some(b)) = (quantity::parse(v), quantity::parse(l))
        {
            let overcommit = !k.starts_with("hugepages-") && (standard_container_resource(k));
            if !overcommit && a != b {
                out.push(invalid(
                    &path.child("requests"),
                    &q_text(v),
                    &format!("must be equal to {k} limit of {}", quantity::text(l)),
                ));
            } else if a > b {
                out.push(invalid(
                    &path.child("requests"),
                    &q_text(v),
                    &format!(
                        "must be less than or equal to {k} limit of {}",
                        quantity::text(l)
                    ),
                ));
            }
        }
    }
}

fn q_text(v: &Value) -> String {
    q(&quantity::text(v))
}

/// Quantities that do not parse anywhere under containers' resources (the decoder's 400).
pub fn bad_quantity(spec: &Value) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        items(spec, list).any(|c| {
            ["limits", "requests"].iter().any(|w| {
                c.pointer(&format!("/resources/{w}"))
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.values().any(|q| quantity::parse(q).is_none()))
            })
        })
    })
}
