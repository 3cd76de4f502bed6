//! CustomResourceDefinition handling: validation, defaulting, status, and turning one into a `Resource`.
use serde_json::{Value, json};

use crate::registry::{Resource, ScalePaths, Version};
use crate::schema::{Cause, ObjectSchema};
use std::collections::HashSet;
use std::sync::Arc;

use crate::state::Db;
use crate::status::ApiError;
use crate::util::{finalizers, meta_mut, meta_str, now, str_list, str_of};

/// Fills the defaults the API server sets on a CRD spec (singular, listKind, conversion).
pub fn default_spec(crd: &mut Value) {
    let kind = str_of(crd.pointer("/spec/names/kind")).to_string();
    if let Some(names) = crd
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
    {
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        // As SetDefaults_CustomResourceDefinitionSpec: listKind only from a kind.
        if !kind.is_empty()
            && names
                .get("listKind")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("conversion")
            .or_insert_with(|| json!({"strategy": "None"}));
    }
}

/// `ValidateCustomResourceDefinition` as kube-apiserver 1.35 runs it on create and update: the
/// one validator the generator uses too (`kube-codegen-crd`).
pub fn validate(crd: &Value) -> Vec<Cause> {
    kube_codegen_crd::validate::validate_crd(crd)
        .violations
        .into_iter()
        .map(|v| v.cause)
        .collect()
}

/// Builds the served `Resource` of a (validated, defaulted) CRD, through the CRD model the
/// generator reads (`kube-codegen-crd`): one reading of versions, printer columns and scale paths.
pub fn to_resource(crd: &Value) -> Result<Resource, String> {
    let model = kube_codegen_crd::Crd::from_value(std::path::Path::new("request"), 0, crd.clone())
        .map_err(|e| e.to_string())?;
    let versions = model
        .versions
        .into_iter()
        .map(|v| Version {
            warning: v.deprecated.then(|| {
                v.deprecation_warning.clone().unwrap_or_else(|| {
                    format!("{}/{} {} is deprecated", model.group, v.name, model.kind)
                })
            }),
            schema: (!v.raw_schema.is_null()).then(|| {
                Arc::new(ObjectSchema::new((*v.raw_schema).clone()).with_scale(v.scale.clone()))
            }),
            columns: v.printer_columns,
            status: v.status_subresource,
            scale: v.scale.map(|sc| ScalePaths {
                spec_replicas: sc.spec_replicas_path,
                status_replicas: sc.status_replicas_path,
                label_selector: sc.label_selector_path,
            }),
            selectable: selectable_fields(crd, &v.name),
            name: v.name,
            served: v.served,
            storage: v.storage,
            table: crate::registry::TableKind::Columns,
        })
        .collect();
    Ok(Resource {
        group: model.group,
        plural: model.plural,
        singular: model.singular.unwrap_or_default(),
        list_kind: model.list_kind,
        short_names: model.short_names,
        categories: model.categories,
        namespaced: model.namespaced,
        kind: model.kind,
        versions,
        generation: true,
        return_deleted: true,
        custom: true,
        conversion: crate::conversion_config::from_crd(crd),
        verbs: crate::registry::VERBS,
        field_labels: crate::field_labels::FieldLabels::Custom,
    })
}

/// A version's `selectableFields` as the field selector labels they serve: the `jsonPath`
/// without its leading dot (`.spec.color` is selected as `spec.color`).
fn selectable_fields(crd: &Value, version: &str) -> Vec<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("name").and_then(Value::as_str) == Some(version))
        .filter_map(|v| v.get("selectableFields").and_then(Value::as_array))
        .flatten()
        .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
        .map(|p| p.strip_prefix('.').unwrap_or(p).to_string())
        .collect()
}

/// The `Established` condition once the establishing controller has run.
fn established_true(time: &str) -> Value {
    json!({"type": "Established", "status": "True", "lastTransitionTime": time,
           "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"})
}

/// Whether the CRD's resources are served (`Established=True`).
pub fn is_established(crd: &Value) -> bool {
    condition(crd, "Established").is_some_and(|c| str_of(c.get("status")) == "True")
}

/// Waiting for the establishing controller (`Established=False`, reason `Installing`).
pub fn is_installing(crd: &Value) -> bool {
    condition(crd, "Established").is_some_and(|c| {
        str_of(c.get("status")) == "False" && str_of(c.get("reason")) == "Installing"
    })
}

pub fn names_accepted(crd: &Value) -> bool {
    condition(crd, "NamesAccepted").is_some_and(|c| str_of(c.get("status")) == "True")
}

pub fn condition<'a>(crd: &'a Value, ty: &str) -> Option<&'a Value> {
    crd.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| str_of(c.get("type")) == ty)
}

/// Sets (or replaces) a condition as `SetCRDCondition` does: the transition time moves only
/// when the status does.
pub fn set_condition(crd: &mut Value, mut cond: Value) {
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    let conds = &mut crd["status"]["conditions"];
    if !conds.is_array() {
        *conds = json!([]);
    }
    let Some(list) = conds.as_array_mut() else {
        return;
    };
    let ty = str_of(cond.get("type")).to_string();
    match list.iter_mut().find(|c| str_of(c.get("type")) == ty) {
        Some(old) => {
            if old.get("status") == cond.get("status") {
                cond["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = cond;
        }
        None => list.push(cond),
    }
}

/// The accepted names of the other CRDs of `group`: (resource names, kind names).
fn claimed(db: &Db, group: &str, own: &str) -> (HashSet<String>, HashSet<String>) {
    let mut resources = HashSet::new();
    let mut kinds = HashSet::new();
    for (k, other) in db
        .store
        .list("apiextensions.k8s.io", "customresourcedefinitions", None)
    {
        if k.name == own || str_of(other.pointer("/spec/group")) != group {
            continue;
        }
        let acc = other
            .pointer("/status/acceptedNames")
            .unwrap_or(&Value::Null);
        resources.insert(str_of(acc.get("plural")).to_string());
        resources.insert(str_of(acc.get("singular")).to_string());
        resources.extend(str_list(acc.get("shortNames")));
        kinds.insert(str_of(acc.get("kind")).to_string());
        kinds.insert(str_of(acc.get("listKind")).to_string());
    }
    (resources, kinds)
}

/// `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &HashSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// The naming controller: which requested names can be accepted next to the other CRDs of the
/// group, and the `NamesAccepted` condition (the last conflict found names the reason).
fn accept_names(db: &Db, crd: &Value) -> (Value, Option<(&'static str, String)>) {
    let group = str_of(crd.pointer("/spec/group"));
    let (resources, kinds) = claimed(db, group, meta_str(crd, "name"));
    let req = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let acc = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut out = acc.clone();
    if !out.is_object() {
        out = json!({});
    }
    let mut conflict = None;
    let take = |field: &str, used: &HashSet<String>, reason: &'static str, out: &mut Value| {
        let r = str_of(req.get(field));
        match fresh(r, str_of(acc.get(field)), used) {
            Ok(()) => {
                if !r.is_empty() {
                    out[field] = json!(r);
                }
                None
            }
            Err(m) => Some((reason, m)),
        }
    };
    if let Some(c) = take("plural", &resources, "PluralConflict", &mut out) {
        conflict = Some(c);
    }
    if let Some(c) = take("singular", &resources, "SingularConflict", &mut out) {
        conflict = Some(c);
    }
    let req_short = str_list(req.get("shortNames"));
    let acc_short = str_list(acc.get("shortNames"));
    if req_short != acc_short {
        let errs: Vec<String> = req_short
            .iter()
            .filter(|n| !acc_short.contains(n))
            .filter(|n| *n != str_of(acc.get("plural")) && *n != str_of(acc.get("singular")))
            .filter_map(|n| fresh(n, "", &resources).err())
            .collect();
        match errs.len() {
            0 if req_short.is_empty() => {
                out.as_object_mut().map(|o| o.remove("shortNames"));
            }
            0 => out["shortNames"] = json!(req_short),
            1 => conflict = Some(("ShortNamesConflict", errs[0].clone())),
            _ => conflict = Some(("ShortNamesConflict", format!("[{}]", errs.join(", ")))),
        }
    }
    if let Some(c) = take("kind", &kinds, "KindConflict", &mut out) {
        conflict = Some(c);
    }
    if out.get("kind").is_none() {
        // `kind` has no omitempty: an unaccepted kind shows as "".
        out["kind"] = json!("");
    }
    if let Some(c) = take("listKind", &kinds, "ListKindConflict", &mut out) {
        conflict = Some(c);
    }
    match req.get("categories") {
        Some(c) => out["categories"] = c.clone(),
        None => {
            out.as_object_mut().map(|o| o.remove("categories"));
        }
    }
    (out, conflict)
}

/// The status the apiextensions controllers would set: accepted names and `NamesAccepted` from
/// the naming controller, `Established` (at once, or `Installing` while
/// `crd_establish_delay` runs), stored versions.
pub fn set_status(db: &Db, crd: &mut Value) {
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut stored = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for v in storage {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    let t = now();
    let (names, conflict) = accept_names(db, crd);
    let accepted = conflict.is_none();
    let names_cond = match conflict {
        None => json!({"type": "NamesAccepted", "status": "True", "lastTransitionTime": t,
                       "reason": "NoConflicts", "message": "no conflicts found"}),
        Some((reason, message)) => json!({"type": "NamesAccepted", "status": "False",
                       "lastTransitionTime": t, "reason": reason, "message": message}),
    };
    let old_established = condition(crd, "Established").cloned();
    let established = match old_established {
        Some(c) if str_of(c.get("status")) == "True" => c,
        _ if accepted && db.crd_establish_delay.is_zero() => established_true(&t),
        _ if accepted => json!({"type": "Established", "status": "False", "lastTransitionTime": t,
                                "reason": "Installing", "message": "the initial names have been accepted"}),
        Some(c) => c,
        None => json!({"type": "Established", "status": "False", "lastTransitionTime": t,
                       "reason": "NotAccepted", "message": "not all names are accepted"}),
    };
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    crd["status"]["acceptedNames"] = names;
    set_condition(crd, names_cond);
    set_condition(crd, established);
    crd["status"]["storedVersions"] = json!(stored);
}

/// What the establishing controller writes once the delay is over.
pub fn establish(crd: &mut Value) {
    set_condition(crd, established_true(&now()));
}

/// The finalizer the finalizer controller removes once no custom resource is left.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The CRDs' group and resource.
pub const CRDS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

/// A `Terminating` condition (set on the first DELETE and by the finalizer controller).
pub fn terminating(status: &str, reason: &str, message: &str) -> Value {
    json!({"type": "Terminating", "status": status, "lastTransitionTime": now(),
           "reason": reason, "message": message})
}

/// The first DELETE of a CRD (its storage's `Delete`; the propagation policy plays no part).
pub fn mark_for_deletion(crd: &mut Value) {
    let mut fins = finalizers(crd);
    if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
        fins.push(CLEANUP_FINALIZER.into());
    }
    let m = meta_mut(crd);
    m.insert("deletionTimestamp".into(), json!(now()));
    m.insert("finalizers".into(), json!(fins));
    set_condition(
        crd,
        terminating(
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        ),
    );
}

/// The 405 a create of a custom resource gets while its CRD is terminating.
pub fn refuse_create(db: &Db, res: &Resource) -> Result<(), ApiError> {
    if !res.custom {
        return Ok(());
    }
    let key = crate::store::Key {
        group: CRDS.0.into(),
        resource: CRDS.1.into(),
        namespace: String::new(),
        name: format!("{}.{}", res.plural, res.group),
    };
    let terminating = db.store.get(&key).is_some_and(|crd| {
        condition(crd, "Terminating").is_some_and(|c| str_of(c.get("status")) == "True")
    });
    if terminating {
        let mut e = ApiError::method_not_allowed();
        e.message = "create not allowed while custom resource definition is terminating".into();
        return Err(e);
    }
    Ok(())
}
