//! Defaults, server-allocated fields and validation of built-in kinds, as kube-apiserver 1.35
//! applies them on create and update: the `SetDefaults_*` functions of `pkg/apis/<group>/v1*`,
//! the REST strategies' `PrepareForCreate`/`PrepareForUpdate` (`pkg/registry/...`), the Service
//! allocator, and `pkg/apis/<group>/validation`. One entry point, [`admit`], dispatches on
//! (group, kind), so a kind the served table adds gets its group's rules (or, unknown, the
//! object-meta checks) without change here. Custom resources and CRDs do not come here.
mod admissionregistration;
mod apps;
mod batch;
mod core;
pub(crate) mod field;
mod json;
pub(crate) mod labelselector;
mod meta;
pub(crate) mod names;
mod networking;
mod podspec;
mod podupdate;
mod policy;
mod quantity;
mod rbac;
mod scheduling;
mod service;
mod storage;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::schema::Cause;
use crate::ssa::Mode;
use crate::state::Db;
use crate::status::ApiError;
use names::NameRule;

pub use service::Allocated;

/// The write being admitted.
#[derive(Debug, Clone, Copy)]
pub enum Write<'a> {
    Create,
    /// An update of the main resource (or its scale) over the stored `old`.
    Update(&'a Value),
    /// An update through `/status`.
    Status,
}

/// The rule `ValidateObjectMeta` checks this kind's names with.
pub fn name_rule(group: &str, kind: &str) -> NameRule {
    match (group, kind) {
        ("", "Service") => NameRule::Dns1035Label,
        ("", "Namespace") => NameRule::Dns1123Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// The pod spec a kind carries (for the decoder's quantity check).
fn pod_spec<'a>(group: &str, kind: &str, o: &'a Value) -> Option<&'a Value> {
    let ptr = match (group, kind) {
        ("", "Pod") => "/spec",
        ("", "PodTemplate") => "/template/spec",
        ("", "ReplicationController") | ("apps", _) | ("batch", "Job") => "/spec/template/spec",
        ("batch", "CronJob") => "/spec/jobTemplate/spec/template/spec",
        _ => return None,
    };
    o.pointer(ptr)
}

/// What the decoder refuses before anything else runs (a 400): quantities that do not parse,
/// Secret data that is not base64.
fn decode_errors(group: &str, kind: &str, version: &str, o: &Value) -> Result<(), ApiError> {
    let fail = |why: &str| {
        Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}"
        )))
    };
    if let Some(spec) = pod_spec(group, kind, o)
        && podspec::bad_quantity(spec)
    {
        return fail(quantity::PARSE_ERROR);
    }
    if (group, kind) == ("", "PersistentVolumeClaim")
        && o.pointer("/spec/resources/requests")
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(|q| quantity::parse(q).is_none()))
    {
        return fail(quantity::PARSE_ERROR);
    }
    if (group, kind) == ("", "Secret")
        && let Some(e) = core::bad_base64(o, "data")
    {
        return fail(&e);
    }
    if (group, kind) == ("", "ConfigMap")
        && let Some(e) = core::bad_base64(o, "binaryData")
    {
        return fail(&e);
    }
    Ok(())
}

/// The `SetDefaults_*` of the kind and the generated defaults of what it holds.
pub fn default(group: &str, kind: &str, o: &mut Value) {
    match (group, kind) {
        ("", "Pod") => core::default_pod(o),
        ("", "PodTemplate") => {
            if let Some(t) = json::obj_at(o, "template") {
                podspec::default_template(t);
            }
        }
        ("", "ReplicationController") => {
            let labels = o.pointer("/spec/template/metadata/labels").cloned();
            if let Some(spec) = json::obj_at(o, "spec") {
                json::default(spec, "replicas", serde_json::json!(1));
                if let Some(l) = labels.clone().filter(|l| l.is_object()) {
                    json::default(spec, "selector", l);
                }
                if let Some(t) = spec.get_mut("template").filter(|t| t.is_object()) {
                    podspec::default_template(t);
                }
            }
            if let Some(l) = labels.filter(|l| l.is_object())
                && o.pointer("/metadata/labels").is_none()
                && let Some(m) = json::obj_at(o, "metadata")
            {
                m["labels"] = l;
            }
        }
        ("", "Service") => service::default_service(o),
        ("", "ResourceQuota") => quantity::canonical_list(o.pointer_mut("/spec/hard")),
        ("", "Secret") => core::default_secret(o),
        ("", "PersistentVolumeClaim") => core::default_pvc(o),
        ("", "PersistentVolume") => {
            if let Some(spec) = json::obj_at(o, "spec") {
                json::default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
                json::default(spec, "volumeMode", serde_json::json!("Filesystem"));
            }
            if let Some(st) = json::obj_at(o, "status") {
                json::default_str(st, "phase", "Pending");
            }
        }
        ("", "Namespace") => {
            if let Some(st) = json::obj_at(o, "status") {
                json::default_str(st, "phase", "Active");
            }
        }
        ("", "Endpoints") => {
            for ss in json::items_mut(o, "subsets") {
                for p in json::items_mut(ss, "ports") {
                    json::default_str(p, "protocol", "TCP");
                }
            }
        }
        ("apps", k) => apps::default(k, o),
        ("batch", "Job") => batch::default_job(o),
        ("batch", "CronJob") => batch::default_cron_job(o),
        ("rbac.authorization.k8s.io", k) => rbac::default(k, o),
        ("admissionregistration.k8s.io", k) => admissionregistration::default_kind(k, o),
        ("networking.k8s.io", k) => networking::default_kind(k, o),
        ("storage.k8s.io", k) => storage::default_kind(k, o),
        ("scheduling.k8s.io", "PriorityClass") => scheduling::default_priority_class(o),
        ("autoscaling", "HorizontalPodAutoscaler") => scheduling::default_hpa(o),
        _ => {}
    }
}

/// The strategies' `PrepareForCreate` beyond what the write pipeline does (status resets,
/// generated selectors, admission plugins' additions).
fn prepare_create(group: &str, kind: &str, o: &mut Value) {
    match (group, kind) {
        ("", "Pod") => core::prepare_pod_create(o),
        ("", "Service") => service::prepare_create(o),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            apps::prepare_create(o)
        }
        ("", "ReplicationController") => apps::prepare_create(o),
        ("batch", "Job") => batch::prepare_job_create(o),
        ("batch", "CronJob") => apps::prepare_create(o),
        ("policy", "PodDisruptionBudget") => policy::prepare_create(o),
        ("admissionregistration.k8s.io", k) => admissionregistration::prepare_create(k, o),
        ("networking.k8s.io", k) => networking::prepare_create(k, o),
        _ => {}
    }
}

/// `Validate` of the kind (after `ValidateObjectMeta`).
pub fn validate(group: &str, kind: &str, o: &Value, create: bool, out: &mut Vec<Cause>) {
    meta::object_meta(o, name_rule(group, kind), out);
    match (group, kind) {
        ("", "Pod") => core::validate_pod(o, out),
        ("", "Service") => service::validate(o, out),
        ("", "ConfigMap") => core::validate_config_map(o, out),
        ("", "Secret") => core::validate_secret(o, out),
        ("", "PersistentVolumeClaim") => core::validate_pvc(o, out),
        ("apps", k) => apps::validate(k, o, out),
        ("batch", "Job") => batch::validate_job(o, out),
        ("batch", "CronJob") => batch::validate_cron_job(o, create, out),
        ("rbac.authorization.k8s.io", k) => rbac::validate(k, o, out),
        ("policy", "PodDisruptionBudget") => policy::validate(o, out),
        ("admissionregistration.k8s.io", k) => admissionregistration::validate(k, o, out),
        ("networking.k8s.io", k) => networking::validate(k, o, out),
        ("storage.k8s.io", k) => storage::validate(k, o, out),
        _ => {}
    }
}

/// `ValidateUpdate`'s rules on what may not change.
fn validate_update(group: &str, kind: &str, new: &Value, old: &Value, out: &mut Vec<Cause>) {
    match (group, kind) {
        ("", "Service") => service::validate_update(new, old, out),
        ("", "Pod") => podupdate::validate(new, old, out),
        ("", "ConfigMap") => core::validate_config_map_update(new, old, out),
        ("", "Secret") => core::validate_secret_update(new, old, out),
        ("", "PersistentVolumeClaim") => core::validate_pvc_update(new, old, out),
        ("apps", k) => apps::validate_update(k, new, old, out),
        ("batch", "Job") => batch::validate_job_update(new, old, out),
        ("rbac.authorization.k8s.io", k) => rbac::validate_update(k, new, old, out),
        ("storage.k8s.io", k) => storage::validate_update(k, new, old, out),
        _ => {}
    }
}

/// Status updates of workloads: the counters are non-negative (`ValidateDeploymentStatus` and
/// its siblings).
fn validate_status(group: &str, kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let counters: &[&str] = match (group, kind) {
        ("apps", "Deployment") => &[
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
        ],
        ("apps", "ReplicaSet" | "StatefulSet") => &[
            "observedGeneration",
            "replicas",
            "readyReplicas",
            "availableReplicas",
        ],
        ("apps", "DaemonSet") => &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
            "observedGeneration",
        ],
        _ => return,
    };
    let Some(status) = o.get("status") else {
        return;
    };
    let sp = field::Path::new("status");
    for c in counters {
        if let Some(n) = json::i(status, c)
            && n < 0
        {
            out.push(field::invalid(
                &sp.child(c),
                &n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
    if (group, kind) == ("apps", "Deployment") {
        // `ValidateDeploymentStatus`: the counts fit inside one another.
        let n = |f: &str| json::i(status, f).unwrap_or(0);
        let too_many = "cannot be greater than status.replicas";
        for f in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
            if n(f) > n("replicas") {
                out.push(field::invalid(&sp.child(f), &n(f).to_string(), too_many));
            }
        }
        if n("availableReplicas") > n("readyReplicas") {
            out.push(field::invalid(
                &sp.child("availableReplicas"),
                &n("availableReplicas").to_string(),
                "cannot be greater than readyReplicas",
            ));
        }
    }
}

/// Whether `(group, kind)` is admitted here (every built-in but the CRD resource, whose rules
/// live in `crd`).
pub fn handles(group: &str, custom: bool) -> bool {
    !custom && group != "apiextensions.k8s.io"
}

/// What happens while the request is decoded: the decoder's refusals (400) and the kind's
/// defaults. The field manager records what the client set after this and before [`admit`].
pub fn decode(group: &str, kind: &str, version: &str, obj: &mut Value) -> Result<(), ApiError> {
    decode_errors(group, kind, version, obj)?;
    default(group, kind, obj);
    apps::encoded_status_counters(group, kind, obj);
    Ok(())
}

/// What the registry does after the field manager ran: the Service allocator, the strategy's
/// `PrepareForCreate`, validation (a 422 `Invalid`), and the defaults of the decoded stored
/// object. So what the server adds here is owned by no manager, as on a real server.
pub fn admit(
    db: &Db,
    group: &str,
    kind: &str,
    obj: &mut Value,
    write: Write,
) -> Result<(), ApiError> {
    let taken = if (group, kind) == ("", "Service") {
        let ns = crate::util::meta_str(obj, "namespace").to_string();
        let name = crate::util::meta_str(obj, "name").to_string();
        match write {
            Write::Create => Allocated::from_db(db, None),
            _ => Allocated::from_db(db, Some((&ns, &name))),
        }
    } else {
        Allocated::default()
    };
    admit_after_decode(group, kind, obj, write, &taken)
}

/// [`decode`] then [`admit`] with what other Services hold given (the whole write, for tests).
#[cfg(test)]
pub fn admit_with(
    group: &str,
    kind: &str,
    version: &str,
    obj: &mut Value,
    write: Write,
    taken: &Allocated,
) -> Result<(), ApiError> {
    decode(group, kind, version, obj)?;
    admit_after_decode(group, kind, obj, write, taken)
}

fn admit_after_decode(
    group: &str,
    kind: &str,
    obj: &mut Value,
    write: Write,
    taken: &Allocated,
) -> Result<(), ApiError> {
    let name = crate::util::meta_str(obj, "name").to_string();
    let invalid = |causes: &[Cause]| ApiError::invalid(group, kind, &name, causes);
    let is_service = (group, kind) == ("", "Service");
    let mut causes = Vec::new();
    match write {
        Write::Create => {
            if is_service {
                let errs = service::allocate(obj, taken);
                if !errs.is_empty() {
                    return Err(invalid(&errs));
                }
            }
            prepare_create(group, kind, obj);
            validate(group, kind, obj, true, &mut causes);
        }
        Write::Update(old) => {
            if is_service {
                service::carry_over(obj, old);
            }
            if (group, kind) == ("", "Pod") {
                podupdate::carry_over(obj, old);
            }
            // `ValidateServiceUpdate`, `ValidateConfigMapUpdate` and `ValidateSecretUpdate`
            // check what may not change first; the others validate the new object first.
            let mut changes = Vec::new();
            validate_update(group, kind, obj, old, &mut changes);
            validate(group, kind, obj, false, &mut causes);
            if matches!((group, kind), ("", "Service" | "ConfigMap" | "Secret")) {
                changes.append(&mut causes);
                causes = changes;
            } else {
                causes.append(&mut changes);
            }
            if causes.is_empty() && is_service {
                causes = service::allocate(obj, taken);
            }
        }
        Write::Status => validate_status(group, kind, obj, &mut causes),
    }
    if !causes.is_empty() {
        return Err(invalid(&causes));
    }
    // The stored object is decoded (and so defaulted) again when it is read back: a Job's
    // labels come from its template's generated ones that way.
    default(group, kind, obj);
    apps::encoded_status_counters(group, kind, obj);
    Ok(())
}

/// The [`Write`] of a pipeline `mode` over `old`.
pub fn write_of(mode: Mode, old: Option<&Value>) -> Write<'_> {
    match (old, mode) {
        (None, _) => Write::Create,
        (Some(_), Mode::Status) => Write::Status,
        (Some(o), _) => Write::Update(o),
    }
}
