//! CustomResourceDefinition handling: validation, defaulting, status, and turning one into a `Resource`.
use serde_json::{Value, json};

use crate::registry::{Resource, ScalePaths, Version};
use crate::schema::Cause;
use crate::util::{now, str_of};

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    str_of(path.iter().try_fold(v, |cur, k| cur.get(*k)))
}

/// Fills the defaults the API server sets on a CRD spec (singular, listKind, conversion).
pub fn default_spec(crd: &mut Value) {
    let kind = s(crd, &["spec", "names", "kind"]).to_string();
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
            schema: (!v.raw_schema.is_null()).then(|| (*v.raw_schema).clone()),
            columns: v.printer_columns,
            status: v.status_subresource,
            scale: v.scale.map(|sc| ScalePaths {
                spec_replicas: sc.spec_replicas_path,
                status_replicas: sc.status_replicas_path,
                label_selector: sc.label_selector_path,
            }),
            name: v.name,
            served: v.served,
            storage: v.storage,
            created_at_table: false,
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
    })
}

/// The status the apiextensions controllers would set: names accepted, established.
pub fn set_status(crd: &mut Value) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
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
    // Keep the transition time when the conditions are already true, so re-applying is a no-op.
    let t = crd
        .pointer("/status/conditions/0/lastTransitionTime")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(now);
    crd["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": t, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": t, "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}
        ],
        "storedVersions": stored,
    });
}
