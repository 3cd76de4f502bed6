//! CustomResourceDefinition handling: validation, defaulting, status, and turning one into a `Resource`.
use serde_json::{Value, json};

use crate::registry::{Resource, ScalePaths, Version};
use crate::schema::Cause;
use crate::table::PrinterColumn;
use crate::util::{now, str_list, str_of};

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

/// Builds the served `Resource` of a (validated, defaulted) CRD.
pub fn to_resource(crd: &Value) -> Resource {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let kind = s(&names, &["kind"]).to_string();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Resource {
        group: s(crd, &["spec", "group"]).into(),
        plural: s(&names, &["plural"]).into(),
        singular: s(&names, &["singular"]).into(),
        list_kind: s(&names, &["listKind"]).into(),
        short_names: str_list(names.get("shortNames")),
        categories: str_list(names.get("categories")),
        namespaced: s(crd, &["spec", "scope"]) == "Namespaced",
        kind,
        versions: versions
            .iter()
            .map(|v| Version {
                name: s(v, &["name"]).into(),
                served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
                storage: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .map(|cols| {
                        cols.iter()
                            .map(|c| PrinterColumn {
                                name: s(c, &["name"]).into(),
                                type_: s(c, &["type"]).into(),
                                format: s(c, &["format"]).into(),
                                description: s(c, &["description"]).into(),
                                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0)
                                    as i32,
                                json_path: s(c, &["jsonPath"]).into(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                status: v.pointer("/subresources/status").is_some(),
                scale: v.pointer("/subresources/scale").map(|sc| ScalePaths {
                    spec_replicas: s(sc, &["specReplicasPath"]).into(),
                    status_replicas: s(sc, &["statusReplicasPath"]).into(),
                    label_selector: sc
                        .get("labelSelectorPath")
                        .and_then(Value::as_str)
                        .map(String::from),
                }),
                warning: if v.get("deprecated").and_then(Value::as_bool) == Some(true) {
                    Some(
                        v.get("deprecationWarning")
                            .and_then(Value::as_str)
                            .map(String::from)
                            .unwrap_or_else(|| {
                                format!(
                                    "{}/{} {} is deprecated",
                                    s(crd, &["spec", "group"]),
                                    s(v, &["name"]),
                                    s(&names, &["kind"])
                                )
                            }),
                    )
                } else {
                    None
                },
                created_at_table: false,
            })
            .collect(),
        generation: true,
        return_deleted: true,
        custom: true,
    }
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
