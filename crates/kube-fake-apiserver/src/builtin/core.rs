//! Core (`v1`) kinds other than Services: Pods, ConfigMaps, Secrets, PersistentVolumeClaims,
//! ServiceAccounts, Namespaces. Defaults from `pkg/apis/core/v1/defaults.go`, strategies from
//! `pkg/registry/core/<kind>/strategy.go`, validation from `pkg/apis/core/validation/validation.go`.
use base64::Engine;
use serde_json::{Map, Value, json};

use super::field::{
    Path, forbidden, immutable, invalid, invalid_str, not_supported, q, required, too_long,
};
use super::json::{default, default_str, has, items, obj_at, s};
use super::names::{dns1123_subdomain, max_len};
use super::podspec;
use super::quantity;
use crate::schema::Cause;

/// `MaxSecretSize`: the data of a Secret or ConfigMap, 1 MiB.
const MAX_DATA: usize = 1024 * 1024;

// ---- Pods ----

pub fn default_pod(o: &mut Value) {
    if let Some(spec) = obj_at(o, "spec") {
        podspec::default_pod(spec);
        podspec::default_pod_spec(spec);
    }
}

/// The qualities of service `GetPodQOS` computes from requests and limits.
fn qos_class(spec: &Value) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for list in ["containers", "initContainers"] {
        for c in items(spec, list) {
            let req = c.pointer("/resources/requests").and_then(Value::as_object);
            let lim = c.pointer("/resources/limits").and_then(Value::as_object);
            let relevant = |m: Option<&Map<String, Value>>| {
                m.map(|m| {
                    m.iter()
                        .filter(|(k, v)| {
                            matches!(k.as_str(), "cpu" | "memory")
                                && quantity::parse(v).is_some_and(|x| x != 0.0)
                        })
                        .map(|(k, v)| (k.clone(), quantity::parse(v).unwrap_or(0.0)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
            };
            let (r, l) = (relevant(req), relevant(lim));
            any |= !r.is_empty() || !l.is_empty();
            if l.len() < 2
                || r.iter()
                    .any(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv != v))
            {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// `podStrategy.PrepareForCreate` (status `Pending` with its QoS class) and what the default
/// admission plugins add: `Priority` (priority 0, `PreemptLowerPriority`) and
/// `DefaultTolerationSeconds` (300s for not-ready and unreachable nodes).
pub fn prepare_pod_create(o: &mut Value) {
    let qos = qos_class(o.get("spec").unwrap_or(&Value::Null));
    o["status"] = json!({"phase": "Pending", "qosClass": qos});
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    if s(spec, "priorityClassName").is_empty() {
        default(spec, "priority", json!(0));
    }
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut added = tolerations.clone();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = tolerations.iter().any(|t| {
            let k = s(t, "key");
            let effect = s(t, "effect");
            (k == key || (k.is_empty() && s(t, "operator") == "Exists"))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            added.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    spec["tolerations"] = Value::Array(added);
}

pub fn validate_pod(o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    podspec::validate_pod_spec(&spec, &Path::new("spec"), out);
}

// ---- ConfigMaps and Secrets ----

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// `IsConfigMapKey`.
fn config_key(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push(max_len(253));
    }
    if k.is_empty()
        || !k
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(CONFIG_KEY_MSG.into());
    }
    if k == "." {
        errs.push("must not be '.'".into());
    } else if k == ".." {
        errs.push("must not be '..'".into());
    } else if k.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

fn keys_of(o: &Value, field: &str) -> Vec<(String, usize)> {
    o.get(field)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or(0, str::len)))
                .collect()
        })
        .unwrap_or_default()
}

pub fn validate_config_map(o: &Value, out: &mut Vec<Cause>) {
    let data = keys_of(o, "data");
    let binary = keys_of(o, "binaryData");
    let mut total = 0;
    for (k, len) in &data {
        let p = Path::new("data").key(k);
        for m in config_key(k) {
            out.push(invalid_str(&p, k, &m));
        }
        if binary.iter().any(|(b, _)| b == k) {
            out.push(invalid_str(&p, k, "duplicate of key present in binaryData"));
        }
        total += len;
    }
    for (k, len) in &binary {
        let p = Path::new("binaryData").key(k);
        for m in config_key(k) {
            out.push(invalid_str(&p, k, &m));
        }
        if data.iter().any(|(d, _)| d == k) {
            out.push(invalid_str(&p, k, "duplicate of key present in data"));
        }
        // base64 in JSON: the decoded size.
        total += len * 3 / 4;
    }
    if total > MAX_DATA {
        out.push(too_long(&Path::new(""), MAX_DATA));
    }
}

/// `immutable: true` freezes the data fields (ConfigMaps and Secrets).
fn validate_immutable_data(new: &Value, old: &Value, fields: &[&str], out: &mut Vec<Cause>) {
    if old.get("immutable") != Some(&json!(true)) {
        return;
    }
    if new.get("immutable") != Some(&json!(true)) {
        out.push(forbidden(
            &Path::new("immutable"),
            "field is immutable when `immutable` is set",
        ));
    }
    for f in fields {
        let a = new
            .get(*f)
            .filter(|v| !v.as_object().is_some_and(Map::is_empty));
        let b = old
            .get(*f)
            .filter(|v| !v.as_object().is_some_and(Map::is_empty));
        if a != b {
            out.push(forbidden(
                &Path::new(f),
                "field is immutable when `immutable` is set",
            ));
        }
    }
}

pub fn validate_config_map_update(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    validate_immutable_data(new, old, &["data", "binaryData"], out);
}

/// `SetDefaults_Secret`, and the v1 conversion that folds `stringData` into `data`.
pub fn default_secret(o: &mut Value) {
    default_str(o, "type", "Opaque");
    if let Some(sd) = o
        .as_object_mut()
        .and_then(|m| m.remove("stringData"))
        .and_then(|v| v.as_object().cloned())
        && let Some(data) = obj_at(o, "data").and_then(Value::as_object_mut)
    {
        for (k, v) in sd {
            let text = v.as_str().unwrap_or_default();
            data.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

pub fn validate_secret(o: &Value, out: &mut Vec<Cause>) {
    let data_path = Path::new("data");
    let data = keys_of(o, "data");
    let mut total = 0;
    for (k, len) in &data {
        for m in config_key(k) {
            out.push(invalid_str(&data_path.key(k), k, &m));
        }
        total += len * 3 / 4;
    }
    if total > MAX_DATA {
        out.push(too_long(&data_path, MAX_DATA));
    }
    let has_key = |k: &str| data.iter().any(|(d, _)| d == k);
    match s(o, "type") {
        "kubernetes.io/service-account-token" => {
            let ann = o.pointer("/metadata/annotations/kubernetes.io~1service-account.name");
            if ann.and_then(Value::as_str).unwrap_or_default().is_empty() {
                out.push(required(
                    &Path::new("metadata.annotations").key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" if !has_key(".dockercfg") => {
            out.push(required(&data_path.key(".dockercfg"), ""));
        }
        "kubernetes.io/dockerconfigjson" if !has_key(".dockerconfigjson") => {
            out.push(required(&data_path.key(".dockerconfigjson"), ""));
        }
        "kubernetes.io/basic-auth" if !has_key("username") && !has_key("password") => {
            out.push(required(&data_path.key("username"), ""));
            out.push(required(&data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if !has_key("ssh-privatekey") => {
            out.push(required(&data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.key", "tls.crt"] {
                if !has_key(k) {
                    out.push(required(&data_path.key(k), ""));
                }
            }
        }
        _ => {}
    }
}

pub fn validate_secret_update(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    if s(new, "type") != s(old, "type") {
        out.push(immutable(&Path::new("type"), &q(s(new, "type"))));
    }
    validate_immutable_data(new, old, &["data"], out);
}

/// Secret data must be base64 (the decoder's 400 otherwise).
pub fn bad_base64(o: &Value, field: &str) -> Option<String> {
    let m = o.get(field)?.as_object()?;
    for v in m.values() {
        let text = v.as_str().unwrap_or_default();
        if base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_err()
        {
            return Some("illegal base64 data at input byte 0".into());
        }
    }
    None
}

// ---- PersistentVolumeClaims ----

/// `SetDefaults_PersistentVolumeClaimSpec` (and the claim's `Pending` phase).
pub fn default_pvc_spec(spec: &mut Value) {
    if spec.is_object() {
        default(spec, "volumeMode", json!("Filesystem"));
        default(spec, "resources", json!({}));
        if let Some(r) = spec.get_mut("resources") {
            quantity::canonical_list(r.get_mut("limits"));
            quantity::canonical_list(r.get_mut("requests"));
        }
    }
}

pub fn default_pvc(o: &mut Value) {
    if let Some(spec) = obj_at(o, "spec") {
        default_pvc_spec(spec);
    }
    if let Some(st) = obj_at(o, "status") {
        default_str(st, "phase", "Pending");
    }
}

/// `ValidatePersistentVolumeClaimSpec`, its common rules.
pub fn validate_pvc_spec(spec: &Value, path: &Path, out: &mut Vec<Cause>) {
    let modes: Vec<&Value> = items(spec, "accessModes").collect();
    if modes.is_empty() {
        out.push(required(
            &path.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    for m in modes {
        let m = m.as_str().unwrap_or_default();
        if !matches!(
            m,
            "ReadOnlyMany" | "ReadWriteMany" | "ReadWriteOnce" | "ReadWriteOncePod"
        ) {
            out.push(not_supported(
                &path.child("accessModes"),
                &q(m),
                &[
                    "ReadOnlyMany",
                    "ReadWriteMany",
                    "ReadWriteOnce",
                    "ReadWriteOncePod",
                ],
            ));
        }
    }
    let rp = path.child("resources").key("storage");
    match spec.pointer("/resources/requests/storage") {
        None => out.push(required(&rp, "")),
        Some(v) => {
            if quantity::parse(v).is_some_and(|x| x <= 0.0) {
                out.push(invalid(
                    &rp,
                    &q(&quantity::text(v)),
                    "must be greater than zero",
                ));
            }
        }
    }
    let sc = s(spec, "storageClassName");
    if !sc.is_empty() {
        for m in dns1123_subdomain(sc) {
            out.push(invalid_str(&path.child("storageClassName"), sc, &m));
        }
    }
    if has(spec, "volumeMode") {
        let vm = s(spec, "volumeMode");
        if !matches!(vm, "Block" | "Filesystem") {
            out.push(not_supported(
                &path.child("volumeMode"),
                &q(vm),
                &["Block", "Filesystem"],
            ));
        }
    }
}

pub fn validate_pvc(o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    validate_pvc_spec(&spec, &Path::new("spec"), out);
}

/// A claim's spec is immutable but for its requests (and only when bound; a claim here is never
/// bound, so every change is refused). The real message ends with a `cmp.Diff` of the specs,
/// which is left out.
pub fn validate_pvc_update(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let strip = |o: &Value| {
        let mut spec = o.get("spec").cloned().unwrap_or(json!({}));
        if let Some(m) = spec.as_object_mut() {
            m.remove("volumeAttributesClassName");
        }
        spec
    };
    if strip(new) != strip(old) {
        out.push(forbidden(
            &Path::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
}
